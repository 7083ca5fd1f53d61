"""Event handlers, in controller-runtime's shape: each maps one informer event to the reconcile
requests it asks for (``reconcile.Request``: a key and why) and hands them to a controller, whose
``enqueue`` lets through only the keys of the shards this replica holds.

- ``ForObject``, the watched kind's own events (EnqueueRequestForObject with the watch's
  predicates): it keeps, per object, the part the predicates compare (``core.predicates``: a
  spec change asks for a run, a status-only change does not), waives the annotation rule for an
  object whose last run ended in a terminal error (bad input often sits in an annotation), puts
  an object first seen already Successful at its generation (the listing after a restart) in the
  resync lane, records each object's uid for the shard filter, and keeps operator-lib's creation
  time of each CR it asks a run for.
- ``ForOwners``, a dependent's events, mapped to its owners' keys through the dependents' index
  (``dependents.apply_event``: operator-lib's DependentPredicate).
- ``ForRelated``, a related kind's events, mapped to the CRs they concern through the related
  index (``core.related``); the initial list asks for nothing (every CR runs at start anyway).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from prometheus_client import Counter

from ansible_operator.core import (
    GVK,
    Key,
    RelatedResource,
    Seen,
    conditions,
    objects,
    predicates,
    related_event,
    triggers,
)
from ansible_operator.runtime.control.controller import Controller
from ansible_operator.runtime.control.reconcile import Request

log = logging.getLogger("ansible-controller")
dependents_log = logging.getLogger("dependents")
related_log = logging.getLogger("related")

Handler = Callable[[str, dict[str, Any]], None]  # an informer's (event type, object)
Enqueue = Callable[[Request], None]


def _predicate_view(obj: dict[str, Any]) -> dict[str, Any]:
    """The part of an object the predicates compare; kept per object between events."""
    meta = obj.get("metadata", {})
    keep = ("generation", "annotations", "labels", "resourceVersion")
    view = {"metadata": {k: meta[k] for k in keep if k in meta}}
    if not meta.get("generation"):
        # Kinds without a generation (Secrets, ConfigMaps) compare their content instead.
        view.update({k: v for k, v in obj.items() if k not in ("metadata", "status")})
    return view


def _event_name(event_type: str, old: dict[str, Any] | None) -> str:
    """Watch event types as the predicates name them: a first sight (the initial listing, or an
    object a relist found) counts as a create."""
    if event_type == "DELETED":
        return "delete"
    if old is None:
        return "create"
    return "update"


class ForObject:
    """The handler of a controller's own kind."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.watch = controller.watch
        # A terminal error waits for the object to change: annotation changes pass for it.
        self._after_terminal = dataclasses.replace(self.watch, watch_annotations_changes=True)
        self._seen: dict[Key, dict[str, Any]] = {}
        self._created_at = controller.metrics.created_at

    def __call__(self, event_type: str, obj: dict[str, Any]) -> None:
        key: Key = objects.key(obj)
        shard = self.controller.shard
        if event_type == "DELETED":
            owned = shard.owned(key)
            shard.forget(key)
        else:
            shard.note(key, objects.metadata(obj).get("uid") or "")
            owned = shard.owned(key)
        if not owned:
            self._seen.pop(key, None)  # its next holder reconciles it whatever it was
            self._forget_created(key)
            log.debug("event not in a held shard", extra={"key": "/".join(key)})
            return
        old = self._seen.get(key)
        new = _predicate_view(obj)
        if event_type == "DELETED":
            self._seen.pop(key, None)
        else:
            self._seen[key] = new
        event = _event_name(event_type, old)
        if event == "delete":
            self.controller.forget(key)
            self._forget_created(key)
        watch = self._after_terminal if self.controller.waits_for_change(key) else self.watch
        if not predicates.primary_event_passes(event, old, new, watch):
            # Said, so that a test can tell an event was seen and ignored.
            log.debug(
                "event filtered",
                extra={
                    "event": event,
                    "key": "/".join(key),
                    "resourceVersion": objects.metadata(obj).get("resourceVersion"),
                },
            )
            return
        resync = old is None and conditions.settled(obj)
        log.debug(
            "event passes",
            extra={"event": event, "key": "/".join(key), "lane": "resync" if resync else "now"},
        )
        if event == "delete":
            self.controller.enqueue(Request(key))
            return
        self._created(key, obj)
        why = triggers.of_event(event, old, obj, resync=resync)
        self.controller.enqueue(Request(key, why), resync=resync)

    def adopt(self, obj: dict[str, Any]) -> None:
        """``obj`` is in a shard this replica has just taken: reconcile it, whatever its
        events said before (level-based: the new holder cannot know what the last one did)."""
        key: Key = objects.key(obj)
        self.controller.shard.note(key, objects.metadata(obj).get("uid") or "")
        self._seen[key] = _predicate_view(obj)
        self._created(key, obj)
        self.controller.enqueue(Request(key, triggers.ADOPTION))

    def _created(self, key: Key, obj: dict[str, Any]) -> None:
        """operator-lib's resource_created_at_seconds for a CR an event passed for."""
        stamp = objects.metadata(obj).get("creationTimestamp")
        if isinstance(stamp, str):
            seconds = int(datetime.fromisoformat(stamp).timestamp())
            self._created_at.labels(*self._created_labels(key)).set(seconds)

    def _forget_created(self, key: Key) -> None:
        self._created_at.remove(*self._created_labels(key))

    def _created_labels(self, key: Key) -> tuple[str, str, str, str, str]:
        gvk = self.watch.gvk
        return (key[1], key[0], gvk.group, gvk.version, gvk.kind)


OwnerRef = tuple[GVK, Key]  # an owner watch's kind and one of its objects


class ForOwners:
    """The handler of a dependent kind: ``changed`` maps an event to the owners it concerns and
    the fields that changed (the dependents' index); each owner's controller gets a request."""

    def __init__(
        self,
        gvk: GVK,
        changed: Callable[[str, Mapping[str, Any]], tuple[frozenset[OwnerRef], tuple[str, ...]]],
        enqueue: Callable[[GVK], Enqueue | None],  # an owner kind's controller's; None: none
    ) -> None:
        self.gvk = gvk
        self._changed = changed
        self._enqueue = enqueue

    def __call__(self, event_type: str, obj: dict[str, Any]) -> None:
        owners, fields = self._changed(event_type, obj)
        if not owners:
            return
        gvk = self.gvk
        why = triggers.dependent(event_type, obj, gvk.api_version, gvk.kind, fields)
        for owner_gvk, key in owners:
            enqueue = self._enqueue(owner_gvk)
            if enqueue is None:
                continue
            dependents_log.debug(
                "Dependent changed, reconciling its owner",
                extra={
                    "dependent": str(gvk),
                    "event": event_type,
                    "object": "/".join(objects.key(obj)),
                    "fields": list(fields),
                    "owner": f"{owner_gvk.kind} {'/'.join(key).lstrip('/')}",
                },
            )
            enqueue(Request(key, why))


class ForRelated:
    """The handler of one related resource of one watch, in one scope: ``keys`` maps an object
    to the CRs it concerns (the related index). A cluster-scoped kind's objects come to the
    informer of every watched namespace alike: only the first one's (``first``) count."""

    def __init__(
        self,
        owner: GVK,
        related: RelatedResource,
        keys: Callable[[Mapping[str, Any]], frozenset[Key]],
        enqueue: Enqueue,
        *,
        first: bool,
        synced: Callable[[], bool],  # whether the initial list is in
        counted: Counter | None,  # ansible_operator_related_events_total; None: not counted
    ) -> None:
        self.owner = owner
        self.related = related
        self._keys = keys
        self._enqueue = enqueue
        self._first = first
        self._synced = synced
        self._counted = counted
        self._state: dict[Key, Seen] = {}

    def __call__(self, event_type: str, obj: dict[str, Any]) -> None:
        if not self._first and not objects.key(obj)[0]:
            return
        keys = related_event(self._state, event_type, obj, self._keys)
        if not self._synced():
            return
        related = self.related
        namespace, name = objects.key(obj)
        why = triggers.related(event_type, obj, related.gvk.api_version, related.gvk.kind)
        for key in sorted(keys):
            related_log.debug(
                "Related object changed, reconciling",
                extra={
                    "related": related.gvk.kind,
                    "event": event_type,
                    "object": f"{namespace}/{name}" if namespace else name,
                    "gvk": str(self.owner),
                    "key": "/".join(key).lstrip("/"),
                },
            )
            if self._counted is not None:
                self._counted.labels(GVK=str(self.owner), related=str(related.gvk)).inc()
            self._enqueue(Request(key, why))
