"""Adding the owner's marks to a write's body, for every way the API accepts a write.

Whole objects (create, update, server-side apply) and strategic merge patches take the marks
directly: a strategic merge and an apply merge ``ownerReferences`` by uid, so nothing else is
lost. A JSON merge patch replaces the whole ``ownerReferences`` list and a JSON patch cannot say
"create the list if missing", so both are rewritten against the object's current state (read by
the caller), a JSON patch with a ``test`` that makes a concurrent change fail instead of being
overwritten. Every function returns new body bytes, or None to forward the original untouched:
a body that cannot be read is the API server's to reject, with its own error.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any

import yaml

from ansible_operator.core import Mode, Owner, has_reference

OWNER_REFERENCES = "/metadata/ownerReferences"
ANNOTATIONS = "/metadata/annotations"


class BodyType(enum.Enum):
    OBJECT = "object"  # create (POST) and update (PUT): a whole object
    APPLY = "apply"  # application/apply-patch+yaml
    STRATEGIC = "strategic"  # application/strategic-merge-patch+json
    MERGE = "merge"  # application/merge-patch+json
    JSON_PATCH = "json-patch"  # application/json-patch+json


_PATCH_TYPES = {
    "application/apply-patch+yaml": BodyType.APPLY,
    "application/apply-patch+cbor": None,
    "application/strategic-merge-patch+json": BodyType.STRATEGIC,
    "application/merge-patch+json": BodyType.MERGE,
    "application/json-patch+json": BodyType.JSON_PATCH,
}
_OBJECT_TYPES = frozenset({"application/json", "application/yaml", "text/yaml", ""})


def body_type(verb: str, content_type: str) -> BodyType | None:
    """What a create, update or patch body is, from its Content-Type; None when unreadable
    here (protobuf, CBOR) or not a write."""
    media = content_type.split(";")[0].strip().lower()
    if verb in ("create", "update"):
        return BodyType.OBJECT if media in _OBJECT_TYPES else None
    if verb == "patch":
        return _PATCH_TYPES.get(media)
    return None


def _load(body: bytes, kind: BodyType) -> Any:
    try:
        if kind is BodyType.APPLY:
            return yaml.safe_load(body.decode("utf-8"))
        return json.loads(body)
    except (ValueError, yaml.YAMLError):
        return None


def _dump(value: Any) -> bytes:
    # JSON is YAML too, so this serves apply-patch+yaml and application/yaml bodies as well.
    return json.dumps(value, separators=(",", ":")).encode()


def needs_current(body: bytes, kind: BodyType, mode: Mode) -> bool:
    """Whether rewriting ``body`` needs the object as it is now."""
    if kind is BodyType.JSON_PATCH:
        return True
    if kind is BodyType.MERGE and mode is Mode.OWNER_REFERENCE:
        data = _load(body, kind)
        meta = data.get("metadata") if isinstance(data, dict) else None
        return not (isinstance(meta, dict) and "ownerReferences" in meta)
    return False


def rewrite(
    body: bytes,
    kind: BodyType,
    owner: Owner,
    mode: Mode,
    *,
    current: Mapping[str, Any] | None = None,
) -> bytes | None:
    """``body`` with the owner's marks added, or None to forward it as it is."""
    data = _load(body, kind)
    if kind is BodyType.JSON_PATCH:
        ops = json_patch_ops(data, owner, mode, current)
        return _dump([*data, *ops]) if ops else None
    if not isinstance(data, dict):
        return None
    if kind is BodyType.MERGE:
        changed = _mark_merge_patch(data, owner, mode, current)
    else:
        changed = _mark_object(data, owner, mode, strategic=kind is BodyType.STRATEGIC)
    return _dump(data) if changed else None


def _metadata_of(data: dict[str, Any], *, create: bool) -> dict[str, Any] | None:
    if "metadata" not in data:
        if not create:
            return None
        data["metadata"] = {}
    meta = data["metadata"]
    if not isinstance(meta, dict) or "$patch" in meta:
        return None  # null (a deletion) or a patch directive: the user's call
    return meta


def _mark_annotations(meta: dict[str, Any], owner: Owner) -> bool:
    wanted = owner.annotations()
    annotations = meta.get("annotations", {})
    if annotations is None and "annotations" in meta:
        return False  # a patch deleting every annotation: do not turn it into a merge
    if not isinstance(annotations, dict):
        return False
    if all(annotations.get(k) == v for k, v in wanted.items()):
        return False
    meta["annotations"] = {**annotations, **wanted}
    return True


def _mark_object(data: dict[str, Any], owner: Owner, mode: Mode, *, strategic: bool) -> bool:
    """Whole objects, apply configurations and strategic merge patches."""
    meta = _metadata_of(data, create=True)
    if meta is None:
        return False
    if mode is Mode.ANNOTATIONS:
        return _mark_annotations(meta, owner)
    refs = meta.get("ownerReferences", [])
    if not isinstance(refs, list) or has_reference(refs, owner):
        return False  # null deletes them in a patch; anything else is the server's to reject
    meta["ownerReferences"] = [*refs, owner.reference()]
    order_key = "$setElementOrder/ownerReferences"
    if strategic and isinstance(meta.get(order_key), list):
        meta[order_key] = [*meta[order_key], {"uid": owner.uid}]
    return True


def _mark_merge_patch(
    data: dict[str, Any], owner: Owner, mode: Mode, current: Mapping[str, Any] | None
) -> bool:
    """A JSON merge patch replaces lists whole: the new list is the current one plus ours."""
    if mode is Mode.ANNOTATIONS:
        meta = _metadata_of(data, create=True)
        return meta is not None and _mark_annotations(meta, owner)
    meta = _metadata_of(data, create=True)
    if meta is None:
        return False
    if "ownerReferences" in meta:  # the patch sets the list itself: ours joins it
        refs = meta["ownerReferences"]
        if not isinstance(refs, list) or has_reference(refs, owner):
            return False
        meta["ownerReferences"] = [*refs, owner.reference()]
        return True
    current_meta = current.get("metadata") if isinstance(current, Mapping) else None
    if not isinstance(current_meta, Mapping):
        return False  # unknown: better no reference than other owners' references lost
    current_refs = current_meta.get("ownerReferences") or []
    if not isinstance(current_refs, list) or has_reference(current_refs, owner):
        return False
    meta["ownerReferences"] = [*current_refs, owner.reference()]
    return True


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _touches(ops: list[Any], paths: tuple[str, ...]) -> bool:
    """Whether an operation works on one of ``paths``, inside one, or on a parent of one."""
    for op in ops:
        for field in ("path", "from"):
            value = op.get(field) if isinstance(op, dict) else None
            if isinstance(value, str) and any(
                value == p or value.startswith(p + "/") or p.startswith(value + "/") or not value
                for p in paths
            ):
                return True
    return False


def json_patch_ops(
    ops: Any, owner: Owner, mode: Mode, current: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """The operations to append to a JSON patch so that it also marks the object.

    None are added when the object is unknown, already marked, or when the patch itself works
    on the list or map the marks go into (the user's operations then decide).
    """
    if not isinstance(ops, list) or not all(isinstance(op, dict) for op in ops):
        return []
    current_meta = current.get("metadata") if isinstance(current, Mapping) else None
    if not isinstance(current_meta, Mapping):
        return []
    if mode is Mode.OWNER_REFERENCE:
        if _touches(ops, (OWNER_REFERENCES,)):
            return []
        refs = current_meta.get("ownerReferences")
        if refs is None:
            return [
                {"op": "test", "path": OWNER_REFERENCES, "value": None},
                {"op": "add", "path": OWNER_REFERENCES, "value": [owner.reference()]},
            ]
        if not isinstance(refs, list) or has_reference(refs, owner):
            return []
        return [{"op": "add", "path": OWNER_REFERENCES + "/-", "value": owner.reference()}]
    wanted = owner.annotations()
    if _touches(ops, tuple(f"{ANNOTATIONS}/{_escape(k)}" for k in wanted)):
        return []
    annotations = current_meta.get("annotations")
    if annotations is None:
        return [
            {"op": "test", "path": ANNOTATIONS, "value": None},
            {"op": "add", "path": ANNOTATIONS, "value": wanted},
        ]
    if not isinstance(annotations, Mapping):
        return []
    return [
        {"op": "add", "path": f"{ANNOTATIONS}/{_escape(k)}", "value": v}
        for k, v in wanted.items()
        if annotations.get(k) != v
    ]
