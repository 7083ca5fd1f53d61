"""Dependent watches: a change to an object a role wrote re-runs the role of its owner.

A kind is watched once the proxy has seen a run write (or read back) an object of that kind
that carries a mark of the run's owner kind, so only written kinds are ever watched, and a kind
is watched once for every owner watch that needs it. Each watch is a source
(``sources``, as for the primary kinds) whose handler (``handlers.ForOwners``) maps an
event to its owners through this index (``apply_event``), which keeps, per object it maps to an
owner, the hashes of the fields of what operator-lib's DependentPredicate compares
(``core.changes``: enough to decide whether an update counts, and to name the fields that
changed in the run's trigger) and the owners' keys, never the object itself (full objects are
watched, not their metadata alone: the fields cover a ConfigMap's data, which no metadata
shows); objects nobody owns leave nothing behind. After a restart the watches come back twice
over: ``recover()`` scans the served kinds once for objects marked by a watched owner kind, and
the proxy re-registers a kind whenever a run reads an owned object of it (upstream's
recoverDependentWatches).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ansible_operator.core import (
    GVK,
    Key,
    Watch,
    changes,
    objects,
    owned_by_annotation,
    owned_by_reference,
    owner_keys,
)
from ansible_operator.kube import ApiError, Informer, ResourceInfo, Unreachable, list_pages
from ansible_operator.runtime.control.handlers import Enqueue, ForOwners, OwnerRef
from ansible_operator.runtime.control.sources import Sources

log = logging.getLogger("dependents")

METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"


# The kinds a run writes that are never watched as its owner's dependents: an Event tells what
# happened to its object and is no part of it. A role's Event (operator_sdk.util.k8s_event) gets
# the owner reference the proxy injects, so the CR's deletion removes it; watching it would
# re-run the role for each Event its runs write (and need list and watch on every Event).
NEVER_DEPENDENT = frozenset({("", "Event"), ("events.k8s.io", "Event")})


def never_dependent(gvk: GVK) -> bool:
    return (gvk.group, gvk.kind) in NEVER_DEPENDENT


@dataclass
class OwnerKind:
    """An owner watch and how to ask for a reconcile of one of its objects."""

    watch: Watch
    enqueue: Enqueue
    namespaced: bool = True  # the owner kind's scope; learnt from discovery at start


@dataclass
class Subscription:
    """How dependents of one kind map to one owner watch (upstream's two watch kinds)."""

    by_reference: bool = False
    by_annotation: bool = False


@dataclass(frozen=True, slots=True)
class Entry:
    """What a watch remembers about one owned object: enough to compare and to find owners."""

    fields: changes.Fields
    owners: frozenset[OwnerRef]


class Change(NamedTuple):
    """What an event asks for: the owners to reconcile, and the fields that changed (an update
    of an object already remembered; () otherwise)."""

    owners: frozenset[OwnerRef]
    fields: tuple[str, ...] = ()


@dataclass
class KindWatch:
    resource: ResourceInfo
    subscriptions: dict[GVK, Subscription] = field(default_factory=dict)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    states: dict[str, dict[Key, Entry]] = field(default_factory=dict)  # per namespace scope

    @property
    def gvk(self) -> GVK:
        return self.resource.gvk


def event_owners(
    obj: Mapping[str, Any],
    subscriptions: Mapping[GVK, Subscription],
    owners: Mapping[GVK, OwnerKind],
) -> frozenset[OwnerRef]:
    """Every owner ``obj`` points at, among the owner watches subscribed to its kind."""
    found: set[OwnerRef] = set()
    for owner_gvk, sub in subscriptions.items():
        owner = owners.get(owner_gvk)
        if owner is None:
            continue
        keys = owner_keys(
            obj,
            owner_gvk,
            owner_namespaced=owner.namespaced,
            by_reference=sub.by_reference,
            by_annotation=sub.by_annotation,
        )
        found.update((owner_gvk, key) for key in keys)
    return frozenset(found)


def apply_event(
    state: dict[Key, Entry],
    event_type: str,
    obj: Mapping[str, Any],
    owners_of: Callable[[Mapping[str, Any]], frozenset[OwnerRef]],
) -> Change:
    """Update ``state`` with one event and return the owners to reconcile and what changed.

    DependentPredicate: creates never pass, deletes always do, updates pass when the fields
    changed; an update of an object held no state for (it has just become owned) passes too.
    The owners of both the old and the new object are returned, as controller-runtime's owner
    handler does. A relist's changes come as these events too (``kube/informer.py``).
    """
    key = objects.key(obj)
    old = state.get(key)
    owners = owners_of(obj)
    if event_type == "DELETED":
        state.pop(key, None)
        return Change(owners | (old.owners if old else frozenset()))
    if not owners and old is None:
        return Change(frozenset())
    fields = changes.fields_of(obj)
    if owners:
        state[key] = Entry(fields, owners)
    else:
        state.pop(key, None)
    if old is None:
        return Change(owners if event_type == "MODIFIED" else frozenset())
    changed = changes.changed(old.fields, fields)
    if not changed:
        return Change(frozenset())
    return Change(old.owners | owners, changed)


class DependentWatches:
    def __init__(
        self, sources: Sources, owners: Iterable[OwnerKind] = (), *, page_size: int = 500
    ) -> None:
        self._sources = sources
        self._client = sources.client
        self._discovery = sources.discovery
        self.owners: dict[GVK, OwnerKind] = {o.watch.gvk: o for o in owners}
        self._namespaces = sources.namespaces
        self._page_size = page_size
        self.kinds: dict[GVK, KindWatch] = {}
        self._running = False
        self._recovery: asyncio.Task[None] | None = None

    def add_owner(self, watch: Watch, enqueue: Enqueue) -> None:
        """Dependents of ``watch``'s kind re-run its reconcile through ``enqueue``."""
        self.owners[watch.gvk] = OwnerKind(watch, enqueue)

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self, *, recover: bool = True) -> None:
        """Learn the owner kinds' scopes; then scan for owned objects in the background."""
        self._running = True
        for gvk, owner in self.owners.items():
            try:
                owner.namespaced = (
                    await self._discovery.resource(gvk.api_version, gvk.kind)
                ).namespaced
            except (ApiError, Unreachable) as err:
                log.info(
                    "Owner kind not found, assuming it is namespaced",
                    extra={"gvk": str(gvk), "error": str(err)},
                )
        if recover:
            self._recovery = asyncio.create_task(self.recover())

    async def stop(self) -> None:
        self._running = False
        tasks = [t for kind in self.kinds.values() for t in kind.tasks]
        if self._recovery is not None:
            tasks.append(self._recovery)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- registration -----------------------------------------------------------------------------

    def observe(self, watch: Watch, resource: ResourceInfo, obj: Mapping[str, Any]) -> None:
        """An object of ``resource`` passed through a run of ``watch``: if it carries a mark of
        the owner kind, make sure its kind is watched for that owner (once)."""
        if not self._running or not watch.watch_dependent_resources:
            return
        if watch.gvk not in self.owners:
            return
        by_reference = bool(owned_by_reference(obj, watch.gvk))
        by_annotation = owned_by_annotation(obj, watch.gvk) is not None
        if not (by_reference or by_annotation):
            return
        gvk = resource.gvk
        if watch.is_blacklisted(gvk):
            log.debug("Skipping, because gvk is blacklisted", extra={"gvk": str(gvk)})
            return
        if never_dependent(gvk):
            return
        if resource.namespaced:
            namespace = objects.key(obj)[0]
            if self._namespaces and namespace not in self._namespaces:
                return
        elif self._namespaces:
            return  # cluster-scoped dependents are only watched when watching all namespaces
        # Upstream: the annotation watch is for namespaced dependents, or cluster-scoped ones
        # when the watch says watchClusterScopedResources.
        by_annotation = by_annotation and (
            resource.namespaced or watch.watch_cluster_scoped_resources
        )
        if not (by_reference or by_annotation):
            return
        kind = self.kinds.get(gvk)
        if kind is None:
            kind = self.kinds[gvk] = KindWatch(resource)
        sub = kind.subscriptions.setdefault(watch.gvk, Subscription())
        if (by_reference and not sub.by_reference) or (by_annotation and not sub.by_annotation):
            sub.by_reference |= by_reference
            sub.by_annotation |= by_annotation
            log.info(
                "Watching dependent resource",
                extra={
                    "dependent": str(gvk),
                    "owner": str(watch.gvk),
                    "ownerReference": sub.by_reference,
                    "annotation": sub.by_annotation,
                },
            )
        if not kind.tasks:
            scopes: list[str] = list(self._namespaces) if resource.namespaced else []
            for scope in scopes or [""]:
                kind.tasks.append(asyncio.create_task(self._source(kind, scope).run()))

    def _source(self, kind: KindWatch, scope: str) -> Informer:
        state = kind.states.setdefault(scope, {})

        def owners_of(obj: Mapping[str, Any]) -> frozenset[OwnerRef]:
            return event_owners(obj, kind.subscriptions, self.owners)

        def changed(event_type: str, obj: Mapping[str, Any]) -> Change:
            return apply_event(state, event_type, obj, owners_of)

        def enqueue(owner: GVK) -> Enqueue | None:
            found = self.owners.get(owner)
            return found.enqueue if found is not None else None

        handler = ForOwners(kind.gvk, changed, enqueue)
        return self._sources.kind(kind.gvk, [handler], namespace=scope or None)

    # -- recovery after a restart -----------------------------------------------------------------

    async def recover(self, *, concurrency: int = 4) -> None:
        """Find the kinds that hold objects marked by a watched owner kind and watch them.

        One metadata-only, paginated list per served kind (list and watch verbs, preferred
        version) and watched namespace, at start only; a kind the operator may not list is
        skipped, as it could not be watched either.
        """
        watches = [o.watch for o in self.owners.values() if o.watch.watch_dependent_resources]
        if not watches:
            return
        try:
            resources = [served.info for served in await self._discovery.listable()]
        except (ApiError, Unreachable) as err:
            log.info("Dependent watch recovery skipped", extra={"error": str(err)})
            return
        resources = [r for r in resources if not never_dependent(r.gvk)]
        limit = asyncio.Semaphore(concurrency)

        async def scan(resource: ResourceInfo) -> None:
            async with limit:
                await self._scan(resource, watches)

        await asyncio.gather(*(scan(r) for r in resources))
        log.info("Dependent watches recovered", extra={"kinds": len(self.kinds)})

    async def _scan(self, resource: ResourceInfo, watches: list[Watch]) -> None:
        if resource.namespaced:
            scopes: list[str | None] = list(self._namespaces) or [None]
        elif not self._namespaces:
            scopes = [None]
        else:
            return
        for scope in scopes:
            pages = list_pages(
                self._client, resource.path(scope), self._page_size, accept=METADATA_LIST
            )
            try:
                async for page in pages:
                    for obj in page.get("items") or []:
                        for watch in watches:
                            self.observe(watch, resource, obj)
            except (ApiError, Unreachable) as err:
                log.debug(
                    "Not scanned for dependents",
                    extra={"resource": resource.plural, "error": str(err)},
                )
                return
