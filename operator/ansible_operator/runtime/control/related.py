"""Cross-kind watches: a change to an object of another kind reconciles the CRs it concerns.

A watch's ``relatedResources`` (docs/role-authors-guide.md, section 8) each become sources
(``sources``, as for every watched kind), one per watched namespace (or one for all),
that ask the API server for the objects the entry's ``selector`` matches only. Which CRs an
object concerns is ``core.related``'s decision, over an index of the CRs fed by the watched
kind's own events (``index_of``: the first handler of the kind's source): no CR is read
or listed for it. The handler (``handlers.ForRelated``) asks nothing of the initial list of a
related kind (every CR is reconciled at start anyway); every later create, delete and change but
of status asks for a run, each said in one debug line naming the object and the CR, and counted
in ``ansible_operator_related_events_total{GVK,related}``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from ansible_operator.core import GVK, CRIndex, Key, RelatedResource, Watch, objects
from ansible_operator.kube import Informer
from ansible_operator.runtime.control.handlers import Enqueue, ForRelated, Handler
from ansible_operator.runtime.control.sources import Sources

log = logging.getLogger("related")


@dataclass
class Owner:
    """A watch with related resources, how to ask for a reconcile, and what it knows of its CRs."""

    watch: Watch
    enqueue: Enqueue
    index: CRIndex


class RelatedWatches:
    def __init__(
        self,
        sources: Sources,
        *,
        registry: CollectorRegistry | None = None,  # None: the triggers are not counted
    ) -> None:
        self._sources = sources
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

    def add_owner(self, watch: Watch, enqueue: Enqueue) -> None:
        """Changes to ``watch``'s related resources reconcile its CRs through ``enqueue``."""
        if watch.related:
            self.owners[watch.gvk] = Owner(watch, enqueue, CRIndex(watch))

    def index_of(self, watch: Watch) -> Handler | None:
        """The handler that keeps ``watch``'s CRs in its index, from its kind's own events;
        None when the watch has no related resources."""
        owner = self.owners.get(watch.gvk)
        if owner is None:
            return None

        def observe_primary(event_type: str, obj: dict[str, Any]) -> None:
            for problem in owner.index.observe(event_type, obj):
                namespace, name = objects.key(obj)
                log.warning(
                    "A CR's label selector for its related resources is invalid;"
                    " it selects nothing",
                    extra={
                        "gvk": str(watch.gvk),
                        "namespace": namespace,
                        "name": name,
                        "error": problem,
                    },
                )

        return observe_primary

    def sources(self) -> list[Informer]:
        """The sources of every related resource of every watch, to run with the others."""
        scopes = self._sources.scopes()
        return [
            self._source(owner, related, scope, first=i == 0)
            for owner in self.owners.values()
            for related in owner.watch.related
            for i, scope in enumerate(scopes)
        ]

    def _source(
        self, owner: Owner, related: RelatedResource, scope: str | None, *, first: bool
    ) -> Informer:
        query = related.selector.to_query()
        params = {"labelSelector": query} if query else {}

        def keys_of(obj: Mapping[str, Any]) -> frozenset[Key]:
            return owner.index.keys_for(related, obj)

        handler = ForRelated(
            owner.watch.gvk,
            related,
            keys_of,
            owner.enqueue,
            first=first,
            synced=lambda: informer.synced.is_set(),
            counted=self._triggers,
        )
        informer = self._sources.kind(
            related.gvk, [handler], namespace=scope, params=lambda: params
        )
        return informer
