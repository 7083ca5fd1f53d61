"""Which watch events are worth a reconcile, for primary CRs and for the objects they own.

Primary CRs follow upstream's predicates (generation changes, real changes of generation-less
objects, annotation changes when asked, always filtered by the watch's selector), so status-only
and label-only edits never re-run a role; for dependents, `dependent_view` is what operator-lib's
DependentPredicate compares (its event rules are applied in `runtime/control/dependents.py`). The
functions take plain dicts and hold no state, so they need no cluster to test.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ansible_operator.core import objects
from ansible_operator.core.annotations import HOLD_ANNOTATION
from ansible_operator.core.watches import Watch

CREATE = "create"
UPDATE = "update"
DELETE = "delete"

# Kubernetes watch event types and the predicates' own names, mapped onto the three kinds above.
_EVENT_KINDS = {
    "create": CREATE,
    "added": CREATE,
    "update": UPDATE,
    "modified": UPDATE,
    "delete": DELETE,
    "deleted": DELETE,
}


def event_kind(event_type: str) -> str:
    """Normalise `ADDED`/`MODIFIED`/`DELETED` or `create`/`update`/`delete` (any case)."""
    kind = _EVENT_KINDS.get(event_type.lower())
    if kind is None:
        raise ValueError(f"unknown event type {event_type!r}")
    return kind


def _generation(obj: Mapping[str, Any] | None) -> int:
    value = objects.metadata(obj).get("generation")
    return value if isinstance(value, int) else 0


def _without(obj: Mapping[str, Any], *, drop_managed_fields: bool) -> dict[str, Any]:
    """A copy without status and resourceVersion, and managedFields dropped or de-timed."""
    result = copy.deepcopy(dict(obj))
    result.pop("status", None)
    meta = result.get("metadata")
    if isinstance(meta, dict):
        meta.pop("resourceVersion", None)
        managed = meta.pop("managedFields", None)
        if not drop_managed_fields and isinstance(managed, list) and managed:
            meta["managedFields"] = [
                {k: v for k, v in entry.items() if k != "time"}
                if isinstance(entry, Mapping)
                else entry
                for entry in managed
            ]
        if not meta:
            result.pop("metadata")
    return result


def primary_event_passes(
    event_type: str,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    watch: Watch,
) -> bool:
    """Should this event on a watched CR enqueue a reconcile?

    For a delete pass the last known object as `old` (or `new`). Creates and deletes pass;
    updates pass on a generation change, on any real change of an object whose generations are
    both 0 (kinds without a generation, like Secrets), on an annotation change when the watch
    sets `watchAnnotationsChanges`, or on a change of the hold annotation. The watch's selector
    applies to all of them (to `new` on updates).
    """
    kind = event_kind(event_type)
    subject = new if new is not None else old
    if subject is None:
        return False
    if not watch.selector.matches(objects.labels(subject)):
        return False
    if kind in (CREATE, DELETE):
        return True
    if old is None or new is None:
        return False
    if watch.watch_annotations_changes and objects.annotations(old) != objects.annotations(new):
        return True
    if objects.annotations(old).get(HOLD_ANNOTATION) != objects.annotations(new).get(
        HOLD_ANNOTATION
    ):
        return True  # held or released: plan, or apply what was planned
    old_generation, new_generation = _generation(old), _generation(new)
    if old_generation != new_generation:
        return True
    if old_generation == 0 and new_generation == 0:
        return _without(old, drop_managed_fields=True) != _without(new, drop_managed_fields=True)
    return False


def dependent_view(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What DependentPredicate compares of an object: all of it but `status`,
    `metadata.resourceVersion` and the `time` of each managedFields entry. An update of an
    owned object re-runs its owner when this view changed (`ownership.fingerprint` digests it,
    `changes.fields_of` keeps it by field). `apiVersion` and `kind` are left out too: a list's
    items carry neither and a watch event's object both, and neither changes."""
    view = _without(obj, drop_managed_fields=False)
    view.pop("apiVersion", None)
    view.pop("kind", None)
    return view
