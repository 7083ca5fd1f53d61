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
