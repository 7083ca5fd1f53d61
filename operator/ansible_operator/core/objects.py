"""Reading an object's metadata (its key, annotations, labels), whatever shape it came in.

Objects reach the operator from the API server (lists, watches, a relist's stand-ins for what
vanished) and from roles' writes through the proxy, so nothing is assumed: a missing or
malformed ``metadata`` (or field in it) reads as empty, never as an exception.
"""

# No `from __future__ import annotations`: it would take the name of `annotations()` below.
from collections.abc import Mapping
from typing import Any


def metadata(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    return meta if isinstance(meta, Mapping) else {}


Key = tuple[str, str]
"""An object's identity within its kind: (namespace, name), namespace "" when cluster-scoped."""


def key(obj: Mapping[str, Any] | None) -> Key:
    """(namespace, name); namespace "" for a cluster-scoped object."""
    meta = metadata(obj)
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def annotations(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    value = metadata(obj).get("annotations")
    return value if isinstance(value, Mapping) else {}


def labels(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    value = metadata(obj).get("labels")
    return value if isinstance(value, Mapping) else {}


# An object nested deeper than this is not handed to the operator's handlers (Python's copy,
# comparison and JSON encoding recurse once per level): the informer skips it and says so. A
# spec deeper than extravars.MAX_SPEC_DEPTH (100) is refused by the reconciler before that.
MAX_OBJECT_DEPTH = 128


def too_deep(value: Any, limit: int, path: str = "spec") -> str | None:
    """The path (from `path`) of the first place in `value` nested deeper than `limit` levels, or
    None. The path is only spelled out for the place found: on the informer's hot path the walk
    costs a tuple per node."""
    stack: list[tuple[Any, int, tuple[Any, ...] | None]] = [(value, 0, None)]
    while stack:  # iterative: the point is not to recurse on what may be very deep
        current, depth, trail = stack.pop()
        if depth > limit:
            steps = []
            while trail is not None:  # (parent's trail, key or index)
                trail, step = trail
                steps.append(f"[{step}]" if isinstance(step, int) else f".{step}")
            return path + "".join(reversed(steps))
        if isinstance(current, Mapping):
            stack += [(v, depth + 1, (trail, k)) for k, v in current.items()]
        elif isinstance(current, list):
            stack += [(v, depth + 1, (trail, i)) for i, v in enumerate(current)]
    return None
