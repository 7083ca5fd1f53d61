"""Cross-kind watches: which CRs a change to a related object asks to reconcile.

A watch's `relatedResources` (core.watches) name other kinds; a change to one of their objects
reconciles the CRs it concerns, found without reading a CR: a `CRIndex` keeps, from the watched
kind's own events, each CR's key and its label selector at the paths the watch's crSelector
mappings name, never the CR. Namespaces: a related object concerns the CRs of its own
namespace; a cluster-scoped related object, or a cluster-scoped CR kind, concerns every CR.
A CR's selector field that is absent or null selects nothing, `{}` selects everything
(Kubernetes' meaning); an invalid one selects nothing and is reported once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ansible_operator.core import objects
from ansible_operator.core.ownership import Key, fingerprint
from ansible_operator.core.selectors import LabelSelector
from ansible_operator.core.watches import (
    ALL_IN_NAMESPACE,
    CR_SELECTOR,
    OBJECT_REF,
    RelatedResource,
    Watch,
)

Path = tuple[str, ...]


@dataclass(frozen=True)
class InvalidSelector:
    """A CR's field at a crSelector path that is no label selector: it selects nothing."""

    problem: str


Selection = LabelSelector | InvalidSelector | None  # None: the field is absent or null


def value_at(obj: Mapping[str, Any], path: Path) -> Any:
    """The value at a dotted path of an object; None where any step is missing."""
    value: Any = obj
    for name in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(name)
    return value


def selection_at(obj: Mapping[str, Any], path: Path) -> Selection:
    """The label selector a CR holds at ``path``."""
    raw = value_at(obj, path)
    if raw is None:
        return None
    try:
        return LabelSelector.parse(raw)
    except ValueError as e:
        return InvalidSelector(f"{'.'.join(path)}: {e}")


def _near(cr_namespace: str, obj_namespace: str) -> bool:
    """Whether a related object in ``obj_namespace`` may concern a CR in ``cr_namespace``."""
    return cr_namespace == obj_namespace or not cr_namespace or not obj_namespace


class CRIndex:
    """The CRs of one watched kind as its events tell: their keys, and their selectors at the
    crSelector paths of the watch's related resources."""

    def __init__(self, watch: Watch) -> None:
        self.paths: tuple[Path, ...] = tuple(
            dict.fromkeys(r.path for r in watch.related if r.map_by == CR_SELECTOR)
        )
        self._crs: dict[Key, dict[Path, Selection]] = {}

    def observe(self, event_type: str, obj: Mapping[str, Any]) -> list[str]:
        """Take in one event of the watched kind; return the problems of selectors that have
        just become invalid (each said once, until the field changes)."""
        key = objects.key(obj)
        if event_type == "DELETED":
            self._crs.pop(key, None)
            return []
        old = self._crs.get(key, {})
        new = {path: selection_at(obj, path) for path in self.paths}
        self._crs[key] = new
        return [
            selected.problem
            for path, selected in new.items()
            if isinstance(selected, InvalidSelector) and old.get(path) != selected
        ]

    def keys_for(self, related: RelatedResource, obj: Mapping[str, Any]) -> frozenset[Key]:
        """The CRs a related object concerns: none unless its labels match the related
        resource's selector; then as its mapBy says."""
        labels = objects.labels(obj)
        if not related.selector.matches(labels):
            return frozenset()
        namespace = objects.key(obj)[0]
        if related.map_by == OBJECT_REF:
            name = value_at(obj, related.path)
            if not isinstance(name, str) or not name:
                return frozenset()
            # the CR of that name in the object's namespace, or a cluster-scoped one
            return frozenset(k for k in ((namespace, name), ("", name)) if k in self._crs)
        near = [
            (key, selections) for key, selections in self._crs.items() if _near(key[0], namespace)
        ]
        if related.map_by == ALL_IN_NAMESPACE:
            return frozenset(key for key, _ in near)
        return frozenset(
            key
            for key, selections in near
            if isinstance(chosen := selections.get(related.path), LabelSelector)
            and chosen.matches(labels)
        )


@dataclass(frozen=True, slots=True)
class Seen:
    """What a related watch keeps of one object it mapped to CRs: enough to tell a change."""

    digest: bytes
    keys: frozenset[Key]


def related_event(
    state: dict[Key, Seen],
    event_type: str,
    obj: Mapping[str, Any],
    keys_of: Callable[[Mapping[str, Any]], frozenset[Key]],
) -> frozenset[Key]:
    """Update ``state`` with one event of a related kind; return the CRs to reconcile.

    A create or a delete reconciles the CRs the object concerns (a delete: those it concerned);
    an update reconciles those it concerned before and concerns now, unless nothing but its
    status (resourceVersion, managedFields) changed; a CR that starts or stops selecting it
    is reconciled by its own change. Objects that concern no CR leave nothing
    in ``state``.
    """
    key = objects.key(obj)
    old = state.pop(key, None)
    if event_type == "DELETED":
        return old.keys if old else frozenset()
    keys = keys_of(obj)
    digest = fingerprint(obj) if keys or old is not None else b""
    if keys:
        state[key] = Seen(digest, keys)
    if old is None:
        return keys
    if old.digest == digest:
        return frozenset()
    return old.keys | keys
