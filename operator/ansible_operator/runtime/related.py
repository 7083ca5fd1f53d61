"""Cross-kind watches: a change to an object of another kind reconciles the CRs it concerns.

A watch's ``relatedResources`` (docs/role-authors-guide.md, section 8) each become informers
(``kube/informer.py``, as for every watched kind), one per watched namespace (or one for all),
that ask the API server for the objects the entry's ``selector`` matches only. Which CRs an
object concerns is ``core.related``'s decision, over an index of the CRs fed by the watched
kind's own events (``observe_primary``): no CR is read or listed for it. The initial list of a
related kind reconciles nothing (every CR is reconciled at start anyway); every later create,
delete and change but of status does, each said in one debug line naming the object and the
CR, and counted in ``ansible_operator_related_events_total{GVK,related}``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from ansible_operator.core import (
    GVK,
    CRIndex,
    Key,
    RelatedResource,
    Seen,
    Watch,
    objects,
    related_event,
    triggers,
)
from ansible_operator.kube import Discovery, Informer, KubeClient, Skipped

log = logging.getLogger("related")


@dataclass
class Owner:
    """A watch with related resources, how to ask for a reconcile, and what it knows of its CRs."""

    watch: Watch
    enqueue: Callable[[Key, triggers.Trigger], None]
    index: CRIndex


class RelatedWatches:
    def __init__(
        self,
        client: KubeClient,
        discovery: Discovery,
        watch_namespaces: tuple[str, ...],
        count: Callable[[GVK], None] | None,  # the events of each kind; None: uncounted
        *,
        skipped: Callable[[GVK], Skipped] | None = None,  # reports an object not handled
        registry: CollectorRegistry | None = None,  # None: the triggers are not counted
    ) -> None:
        self._client = client
        self._discovery = discovery
        self._namespaces = watch_namespaces
        self._count = count
        self._skipped = skipped
        self.owners: dict[GVK, Owner] = {}
        self._triggers = (
            Counter(
                "ansible_operator_related_events",
                "Reconciles asked for by a change to an object of a related kind.",
                ["GVK", "related"],
                registry=registry,
            )
            if registry is not None
            else None
        )

    def add_owner(self, watch: Watch, enqueue: Callable[[Key, triggers.Trigger], None]) -> None:
        """Changes to ``watch``'s related resources reconcile its CRs through ``enqueue``."""
        if watch.related:
            self.owners[watch.gvk] = Owner(watch, enqueue, CRIndex(watch))

    def observe_primary(self, watch: Watch, event_type: str, obj: Mapping[str, Any]) -> None:
        """One event of a watched kind, as its controller got it: what the index keeps."""
        owner = self.owners.get(watch.gvk)
        if owner is None:
            return
        for problem in owner.index.observe(event_type, obj):
            namespace, name = objects.key(obj)
            log.warning(
                "A CR's label selector for its related resources is invalid; it selects nothing",
                extra={
                    "gvk": str(watch.gvk),
                    "namespace": namespace,
                    "name": name,
                    "error": problem,
                },
            )

    def informers(self) -> list[Informer]:
        """The informers of every related resource of every watch, to run with the others."""
        scopes: list[str | None] = list(self._namespaces) or [None]
        return [
            self._informer(owner, related, scope, first=i == 0)
            for owner in self.owners.values()
            for related in owner.watch.related
            for i, scope in enumerate(scopes)
        ]

    def _informer(
        self, owner: Owner, related: RelatedResource, scope: str | None, *, first: bool
    ) -> Informer:
        """The informer of one related resource in one scope. A cluster-scoped kind's objects
        come to the informer of every watched namespace alike; only the first one's count."""
        state: dict[Key, Seen] = {}
        query = related.selector.to_query()
        params = {"labelSelector": query} if query else {}

        def keys_of(obj: Mapping[str, Any]) -> frozenset[Key]:
            return owner.index.keys_for(related, obj)

        def handle(event_type: str, obj: dict[str, Any]) -> None:
            if not first and not objects.key(obj)[0]:
                return
            keys = related_event(state, event_type, obj, keys_of)
            if informer.synced.is_set():  # not the initial list
                self._trigger(owner, related, event_type, obj, keys)

        count = self._count
        informer = Informer(
            self._client,
            self._discovery,
            related.gvk,
            namespace=scope,
            handler=handle,
            count=(lambda: count(related.gvk)) if count is not None else None,
            skipped=self._skipped(related.gvk) if self._skipped is not None else None,
            params=lambda: params,
        )
        return informer

    def _trigger(
        self,
        owner: Owner,
        related: RelatedResource,
        event_type: str,
        obj: Mapping[str, Any],
        keys: frozenset[Key],
    ) -> None:
        namespace, name = objects.key(obj)
        why = triggers.related(event_type, obj, related.gvk.api_version, related.gvk.kind)
        for key in sorted(keys):
            log.debug(
                "Related object changed, reconciling",
                extra={
                    "related": related.gvk.kind,
                    "event": event_type,
                    "object": f"{namespace}/{name}" if namespace else name,
                    "gvk": str(owner.watch.gvk),
                    "key": "/".join(key).lstrip("/"),
                },
            )
            if self._triggers is not None:
                self._triggers.labels(GVK=str(owner.watch.gvk), related=str(related.gvk)).inc()
            owner.enqueue(key, why)
