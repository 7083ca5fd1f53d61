"""Who owns a dependent: the owner marks the proxy writes, and how to read them back.

A dependent in its owner's namespace (or of a cluster-scoped owner) gets an ownerReference, so
the garbage collector removes it with the owner; anything else gets upstream's two
``operator-sdk/primary-resource`` annotations, which only the dependent watches read. Everything
here is a pure function of plain dicts, shared by the proxy (writing marks) and the dependent
watches (mapping an event back to the owner's key).
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ansible_operator.core import objects
from ansible_operator.core.objects import Key
from ansible_operator.core.predicates import dependent_view
from ansible_operator.core.watches import GVK

PRIMARY_RESOURCE = "operator-sdk/primary-resource"
PRIMARY_RESOURCE_TYPE = "operator-sdk/primary-resource-type"


class Mode(enum.Enum):
    OWNER_REFERENCE = "ownerReference"
    ANNOTATIONS = "annotations"


@dataclass(frozen=True)
class Owner:
    """The primary resource a run acts for: what its dependents point back at."""

    api_version: str
    kind: str
    name: str
    namespace: str  # "" for a cluster-scoped owner
    uid: str

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> Owner:
        meta = obj.get("metadata") or {}
        return cls(
            api_version=str(obj.get("apiVersion", "")),
            kind=str(obj.get("kind", "")),
            name=str(meta.get("name", "")),
            namespace=str(meta.get("namespace") or ""),
            uid=str(meta.get("uid", "")),
        )

    @property
    def gvk(self) -> GVK:
        return GVK.from_api_version(self.api_version, self.kind)

    @property
    def key(self) -> Key:
        return (self.namespace, self.name)

    def reference(self) -> dict[str, str]:
        """Upstream's ownerReference: no ``controller``, no ``blockOwnerDeletion``."""
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
        }

    def annotations(self) -> dict[str, str]:
        return {
            PRIMARY_RESOURCE: f"{self.namespace}/{self.name}",
            PRIMARY_RESOURCE_TYPE: self.gvk.group_kind,
        }


def injection_mode(owner: Owner, *, dependent_namespaced: bool, dependent_namespace: str) -> Mode:
    """operator-lib's SupportsOwnerReference: references only where the GC can follow them."""
    if not owner.namespace:
        return Mode.OWNER_REFERENCE
    if not dependent_namespaced or dependent_namespace != owner.namespace:
        return Mode.ANNOTATIONS
    return Mode.OWNER_REFERENCE


# -- marks on a dependent ----------------------------------------------------------------------


def _owner_references(obj: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    refs = objects.metadata(obj).get("ownerReferences")
    if not isinstance(refs, list):
        return []
    return [ref for ref in refs if isinstance(ref, Mapping)]


def _group(api_version: object) -> str:
    return api_version.rpartition("/")[0] if isinstance(api_version, str) else ""


def has_reference(refs: object, owner: Owner) -> bool:
    """Whether a list of ownerReferences already holds ``owner`` (by uid)."""
    if not isinstance(refs, list):
        return False
    return any(isinstance(ref, Mapping) and ref.get("uid") == owner.uid for ref in refs)


def has_annotations(obj: Mapping[str, Any] | None, owner: Owner) -> bool:
    annotations = objects.annotations(obj)
    return all(annotations.get(k) == v for k, v in owner.annotations().items())


def is_marked(obj: Mapping[str, Any] | None, owner: Owner, mode: Mode) -> bool:
    if mode is Mode.OWNER_REFERENCE:
        return has_reference(objects.metadata(obj).get("ownerReferences"), owner)
    return has_annotations(obj, owner)


def is_owner_itself(obj: Mapping[str, Any] | None, owner: Owner) -> bool:
    meta = objects.metadata(obj)
    if owner.uid and meta.get("uid") == owner.uid:
        return True
    return (
        isinstance(obj, Mapping)
        and obj.get("kind") == owner.kind
        and _group(obj.get("apiVersion")) == owner.gvk.group
        and meta.get("name") == owner.name
        and (meta.get("namespace") or "") == owner.namespace
    )


# -- reading owners back ------------------------------------------------------------------------


def owned_by_reference(obj: Mapping[str, Any], owner_gvk: GVK) -> list[str]:
    """Names in the ownerReferences of the owner's group and kind (any version, as
    controller-runtime's EnqueueRequestForOwner), controller or not."""
    return [
        str(ref["name"])
        for ref in _owner_references(obj)
        if ref.get("kind") == owner_gvk.kind
        and _group(ref.get("apiVersion")) == owner_gvk.group
        and isinstance(ref.get("name"), str)
        and ref["name"]
    ]


def owned_by_annotation(obj: Mapping[str, Any], owner_gvk: GVK) -> Key | None:
    """The owner named by the primary-resource annotations, if they name this owner kind."""
    annotations = objects.annotations(obj)
    if annotations.get(PRIMARY_RESOURCE_TYPE) != owner_gvk.group_kind:
        return None
    value = annotations.get(PRIMARY_RESOURCE)
    if not isinstance(value, str) or not value:
        return None
    namespace, _, name = value.rpartition("/")  # "name" alone means a cluster-scoped owner
    return (namespace, name) if name else None


def owner_keys(
    obj: Mapping[str, Any],
    owner_gvk: GVK,
    *,
    owner_namespaced: bool,
    by_reference: bool = True,
    by_annotation: bool = True,
) -> frozenset[Key]:
    """The keys of the owners of kind ``owner_gvk`` that ``obj`` points at.

    A reference names an owner in the dependent's own namespace (or a cluster-scoped one);
    the annotation names the owner's namespace itself.
    """
    keys: set[Key] = set()
    if by_reference:
        namespace = str(objects.metadata(obj).get("namespace") or "") if owner_namespaced else ""
        keys.update((namespace, name) for name in owned_by_reference(obj, owner_gvk))
    if by_annotation:
        key = owned_by_annotation(obj, owner_gvk)
        if key is not None:
            keys.add(key)
    return frozenset(keys)


def fingerprint(obj: Mapping[str, Any]) -> bytes:
    """A digest of what DependentPredicate compares (the object without status, resourceVersion
    and managedFields times): equal digests mean an update that does not re-run the owner."""
    text = json.dumps(dependent_view(obj), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).digest()
