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


def key(obj: Mapping[str, Any] | None) -> tuple[str, str]:
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


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether a mapping or list in `value` sits more than `limit` levels deep."""
    stack = [(value, 0)]
    while stack:  # iterative: the point is not to recurse on what may be very deep
        current, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(current, Mapping):
            stack += [(item, depth + 1) for item in current.values()]
        elif isinstance(current, list):
            stack += [(item, depth + 1) for item in current]
    return False
