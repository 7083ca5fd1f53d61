"""Why a reconcile runs: the first reason its key was queued for, kept for the run's record.

Reconciliation stays level-based (``runtime.control.reconcile``): a trigger never changes what a run
does, it only says what woke it, so that a user can tell a spec change from a dependent's loop.
Several reasons that arrive while a key waits are one run; the first one is its trigger.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ansible_operator.core import changes, objects

CREATED = "Created"  # first seen: created, or found by a list with no settled status
RESYNC = "Resync"  # first seen already Successful at its generation: the list after a restart
SPEC_CHANGED = "SpecChanged"  # a new generation
CHANGED = "Changed"  # labels, annotations or, for kinds without generation, content
DELETED = "Deleted"  # marked for deletion: the finalizer's run
DEPENDENT_CHANGED = "DependentChanged"  # an object the CR owns changed
RELATED_CHANGED = "RelatedChanged"  # an object of a watch's relatedResources changed
REQUEUE = "Requeue"  # the role asked for a run later (requeue_after)
PERIODIC = "Periodic"  # the reconcile period
BACKOFF = "Backoff"  # the last run failed
ADOPTED = "Adopted"  # its shard was taken by this replica
UNKNOWN = "Unknown"


@dataclass(frozen=True)
class ObjectRef:
    api_version: str
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, obj: Mapping[str, Any], api_version: str, kind: str) -> ObjectRef:
        """``obj``'s reference; ``api_version`` and ``kind`` are its watch's (a deleted object
        a relist found gone names only its key)."""
        meta = objects.metadata(obj)
        return cls(api_version, kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"

    def to_json(self) -> dict[str, str]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
        }


@dataclass(frozen=True)
class Trigger:
    reason: str
    message: str
    object: ObjectRef | None = None  # the other object that caused it, if any
    fields: tuple[str, ...] = ()  # what changed in it (core.changes paths), when known

    def to_json(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "message": self.message,
            "object": self.object.to_json() if self.object else None,
            "fields": list(self.fields),
        }


def of_event(
    event: str, old: Mapping[str, Any] | None, obj: Mapping[str, Any], *, resync: bool
) -> Trigger:
    """The trigger of a primary event that passed the predicates (``event``: create, update
    or delete; ``old``: the predicates' view of the object before, if it was seen)."""
    meta = objects.metadata(obj)
    generation = meta.get("generation")
    if meta.get("deletionTimestamp"):
        return Trigger(DELETED, "marked for deletion: the finalizer runs")
    if event == "create" or old is None:
        if resync:
            return Trigger(RESYNC, "listed again (a restart or a new watch) and reconciled again")
        return Trigger(CREATED, f"first seen at generation {generation}")
    before = objects.metadata(old)
    if generation and before.get("generation") != generation:
        return Trigger(
            SPEC_CHANGED,
            f"generation {before.get('generation')} → {generation}",
        )
    changed = [
        part
        for part in ("labels", "annotations")
        if (before.get(part) or {}) != (meta.get(part) or {})
    ]
    return Trigger(CHANGED, f"{' and '.join(changed) or 'content'} changed")


def dependent(
    event: str,
    obj: Mapping[str, Any],
    api_version: str,
    kind: str,
    fields: tuple[str, ...] = (),
) -> Trigger:
    """An owned object's event re-ran its owner; ``fields``: what changed in an update."""
    ref = ObjectRef.of(obj, api_version, kind)
    what = f" {changes.describe(fields)}" if fields else ""
    return Trigger(DEPENDENT_CHANGED, f"{ref} (owned): {event.lower()}{what}", ref, fields)


def related(event: str, obj: Mapping[str, Any], api_version: str, kind: str) -> Trigger:
    ref = ObjectRef.of(obj, api_version, kind)
    return Trigger(RELATED_CHANGED, f"{ref} (related): {event.lower()}", ref)


def requeue(seconds: float) -> Trigger:
    return Trigger(REQUEUE, f"the role asked for a run {seconds:g}s later")


def periodic(seconds: float) -> Trigger:
    return Trigger(PERIODIC, f"the reconcile period ({seconds:g}s) passed")


def backoff(seconds: float, error: str) -> Trigger:
    return Trigger(BACKOFF, f"retried {seconds:g}s after a failure: {error}")


ADOPTION = Trigger(ADOPTED, "this replica took the CR's shard")
NONE_KNOWN = Trigger(UNKNOWN, "no reason recorded")
