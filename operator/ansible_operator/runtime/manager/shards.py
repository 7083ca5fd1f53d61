"""``run --shards``: every replica is active, and each virtual shard of CRs has one holder.

Membership and ownership are Leases in the leader-election namespace, named after
``--leader-election-id``: one ``<id>-member-<suffix>`` per replica, renewed while it runs, and
one ``<id>-shard-<n>-of-<count>`` per virtual shard (``core/shards.py``). Every retry period a
replica lists them all at once, renews its own, computes the same ``balance`` as the others and
acts on its part of it: it takes a planned shard only when the shard's Lease is free and its
write of the Lease succeeded; it gives one up by first stopping to act on it, then letting its
runs end (``--graceful-shutdown-timeout``, then interrupted), and only then releasing the Lease.
Each shard Lease follows leader election's rules (``core/lease.py``, the same Candidate and
write path as ``leader.py``): a shard not renewed within retry period + renew deadline is
dropped and its runs killed at once, before any other replica may take it.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from ansible_operator.core import GVK, Candidate, LeaseRecord, ShardSpace, balance, objects
from ansible_operator.kube import ApiError, Discovery, KubeClient, Unreachable, list_pages
from ansible_operator.runtime.control.controller import Controller
from ansible_operator.runtime.control.gate import RunGate
from ansible_operator.runtime.control.handlers import ForObject
from ansible_operator.runtime.manager.leader import (
    ElectionConfig,
    LeaseLock,
    lease_collection,
    take_or_keep,
    wall_clock,
)
from ansible_operator.runtime.observe.metrics import ShardMetrics

log = logging.getLogger("shards")

GROUP_LABEL = "ansible-operator.io/shard-group"  # the --leader-election-id
ROLE_LABEL = "ansible-operator.io/shard-role"  # member or shard
COUNT_LABEL = "ansible-operator.io/shards"  # the member's number of virtual shards
WATCHDOG_PERIOD = 0.5
# An empty range: refused ("invalid shard selector") where shardSelector is understood.
INVALID = "shardRange(object.metadata.uid, '0x0000000000000000', '0x0000000000000000')"
STALE_MEMBER_TERMS = 4  # a member Lease unchanged this many terms is deleted (a killed replica)


class ShardHooks(Protocol):
    """What the operator does when this replica's shards change."""

    async def acquired(self, shards: frozenset[int]) -> None:
        """Start acting on ``shards`` (list their CRs and reconcile them)."""

    async def release(self, shards: frozenset[int]) -> None:
        """``shards`` are no longer acted on: return once their runs have ended or stopped."""

    def lost(self, shards: frozenset[int]) -> None:
        """``shards`` could not be kept: stop their runs now, without grace."""


class State(enum.Enum):
    ACTING = "acting"  # held and reconciled
    DRAINING = "draining"  # held, not reconciled, runs still ending
    DRAINED = "drained"  # held, nothing running: to be released


@dataclass
class Shard:
    index: int
    lock: LeaseLock
    candidate: Candidate
    state: State | None = None  # None: not held


class ShardKeeper:
    def __init__(
        self,
        config: ElectionConfig,
        space: ShardSpace,
        client: KubeClient,
        *,
        metrics: ShardMetrics,
    ) -> None:
        self.config = config
        self.space = space
        self.identity = config.identity
        self.timings = config.timings
        self._client = client
        self._metrics = metrics
        group = {GROUP_LABEL: config.name}
        suffix = config.identity.rsplit("_", 1)[-1][:13]
        self.member = Shard(
            -1,
            LeaseLock(
                client,
                config.namespace,
                f"{config.name}-member-{suffix}",
                labels={**group, ROLE_LABEL: "member", COUNT_LABEL: str(space.count)},
            ),
            Candidate(config.identity, config.timings),
        )
        self.shards = [
            Shard(
                i,
                LeaseLock(
                    client,
                    config.namespace,
                    f"{config.name}-shard-{i}-of-{space.count}",
                    labels={**group, ROLE_LABEL: "shard"},
                ),
                Candidate(config.identity, config.timings),
            )
            for i in range(space.count)
        ]
        self._others: dict[str, Candidate] = {}  # other members' Leases, by name
        self._draining: set[asyncio.Task[None]] = set()
        self._mixed_reported = False
        self._hooks: ShardHooks | None = None

    # -- what the controllers ask -----------------------------------------------------------------

    @property
    def acting(self) -> frozenset[int]:
        return frozenset(s.index for s in self.shards if s.state is State.ACTING)

    def owns(self, uid: str) -> bool:
        return self.shards[self.space.shard_of(uid)].state is State.ACTING

    # -- the loop ---------------------------------------------------------------------------------

    async def keep(self, hooks: ShardHooks, act: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``act`` (the controllers) while holding and balancing shards; when it returns
        (a stop drained it), release every shard and leave the membership."""
        self._hooks = hooks
        acting = asyncio.create_task(act())
        keeping = asyncio.create_task(self._keep())
        watchdog = asyncio.create_task(self._watchdog())
        try:
            await asyncio.wait({acting, keeping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (keeping, watchdog, *self._draining):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            try:
                acting.result()  # a crash of the controllers ends the operator, loudly
            finally:
                await self._leave()

    async def _keep(self) -> None:
        while True:
            started = time.monotonic()
            try:
                await self._cycle()
            except (ApiError, Unreachable) as err:
                log.info("Shard Leases not read", extra={"error": str(err)})
            spent = time.monotonic() - started
            await asyncio.sleep(max(0.0, self.timings.retry_period - spent))

    async def _cycle(self) -> None:
        assert self._hooks is not None
        listing = await self._client.get(
            lease_collection(self.config.namespace),
            params={"labelSelector": f"{GROUP_LABEL}={self.config.name}"},
        )
        leases = {item["metadata"]["name"]: item for item in listing.get("items") or []}
        now = time.monotonic()
        member = self.member
        await take_or_keep(
            member.candidate, member.lock, member.lock.seen(leases.get(member.lock.name))
        )
        members, stale = self._live_members(leases, now)
        await asyncio.gather(*(lock.delete() for lock in stale))
        holders: dict[int, str] = {}
        current: dict[int, LeaseRecord | None] = {}
        for shard in self.shards:
            record = current[shard.index] = shard.lock.seen(leases.get(shard.lock.name))
            if record is not None:
                shard.candidate.observe(record, now)
                if record.holder and shard.candidate.lease_valid(now):
                    holders[shard.index] = record.holder
        plan = balance(self.space.count, members, holders).get(self.identity, frozenset())
        keep = [s for s in self.shards if s.state in (State.ACTING, State.DRAINING)]
        release = [s for s in self.shards if s.state is State.DRAINED]
        take = [
            s
            for s in self.shards
            if s.state is None
            and s.index in plan
            and holders.get(s.index, self.identity)
            # free, or (after a lost renewal) still ours on record
            == self.identity
        ]
        kept = await asyncio.gather(
            *(take_or_keep(s.candidate, s.lock, current[s.index]) for s in keep)
        )
        for shard, ok in zip(keep, kept, strict=True):
            if not ok and not shard.candidate.is_leader:
                self._lose([shard], f"the Lease is held by {shard.candidate.holder or 'nobody'}")
        await asyncio.gather(*(self._release(s) for s in release))
        taken = await asyncio.gather(
            *(take_or_keep(s.candidate, s.lock, current[s.index]) for s in take)
        )
        newly = frozenset(s.index for s, ok in zip(take, taken, strict=True) if ok)
        leaving = frozenset(
            s.index for s in self.shards if s.state is State.ACTING and s.index not in plan
        )
        if leaving:
            self._give_up(leaving)
        if newly:
            for index in newly:
                self.shards[index].state = State.ACTING
            self._metrics.handovers.labels(direction="acquired").inc(len(newly))
            self._report("Took shards", newly)
            await self._hooks.acquired(newly)

    def _live_members(
        self, leases: dict[str, dict[str, Any]], now: float
    ) -> tuple[list[str], list[LeaseLock]]:
        """The identities of the members whose Lease is renewed and who count shards alike
        (none when some count differently: no shard is then taken), and the member Leases
        left unrenewed for long, to delete."""
        members = [self.identity]
        stale: list[LeaseLock] = []
        mixed = False
        for name, obj in leases.items():
            labels = obj["metadata"].get("labels") or {}
            if labels.get(ROLE_LABEL) != "member" or name == self.member.lock.name:
                continue
            observer = self._others.setdefault(name, Candidate(self.identity, self.timings))
            record = LeaseRecord.from_spec(obj.get("spec"))
            observer.observe(record, now)
            if not (record.holder and observer.lease_valid(now)):
                if now - observer.observed_at > STALE_MEMBER_TERMS * self.timings.lease_duration:
                    # A killed replica's: nobody renews it any more.
                    lock = LeaseLock(self._client, self.config.namespace, name)
                    lock.seen(obj)
                    stale.append(lock)
                    self._others.pop(name, None)
                continue
            if labels.get(COUNT_LABEL) != str(self.space.count):
                mixed = True
                continue
            members.append(record.holder)
        if mixed:
            if not self._mixed_reported:
                log.error(
                    "Replicas run with different --shards values: this one takes no shard until "
                    "they agree",
                    extra={"shards": self.space.count},
                )
            self._mixed_reported = True
            return [], stale
        self._mixed_reported = False
        return members, stale

    def _give_up(self, shards: frozenset[int]) -> None:
        """Stop acting on ``shards`` now; release their Leases once their runs have ended."""
        assert self._hooks is not None
        for index in shards:
            self.shards[index].state = State.DRAINING
        self._report("Giving up shards", shards)

        async def drain() -> None:
            assert self._hooks is not None
            await self._hooks.release(shards)
            for index in shards:
                if self.shards[index].state is State.DRAINING:
                    self.shards[index].state = State.DRAINED

        task = asyncio.create_task(drain())
        self._draining.add(task)
        task.add_done_callback(self._draining.discard)

    async def _release(self, shard: Shard) -> None:
        record = shard.candidate.release(shard.candidate.observed, wall_clock())
        if record is not None:
            try:
                await shard.lock.update(record)
            except (ApiError, Unreachable) as err:
                log.info("Shard Lease not released", extra={"error": str(err)})
                return  # kept (not acted on) and released next time, or left to expire
            shard.candidate.wrote(record, time.monotonic())
        shard.state = None
        self._metrics.handovers.labels(direction="released").inc()
        self._report("Released shards", frozenset({shard.index}))

    def _lose(self, shards: list[Shard], reason: str) -> None:
        assert self._hooks is not None
        lost = frozenset(s.index for s in shards)
        for shard in shards:
            shard.state = None
        self._metrics.handovers.labels(direction="lost").inc(len(lost))
        log.error(
            "Shards lost, stopping their runs", extra={"shards": sorted(lost), "reason": reason}
        )
        self._report("", frozenset())
        self._hooks.lost(lost)

    async def _watchdog(self) -> None:
        """Drop every held shard whose Lease was not renewed in time, before it can expire."""
        while True:
            await asyncio.sleep(WATCHDOG_PERIOD)
            now = time.monotonic()
            late = [
                s
                for s in self.shards
                if s.state is not None and s.candidate.acting_deadline() <= now
            ]
            if late:
                deadline = self.timings.retry_period + self.timings.renew_deadline
                self._lose(late, f"not renewed within {deadline:g}s")

    async def _leave(self) -> None:
        """After the controllers stopped: give every shard Lease back and leave the members."""
        held = [s for s in self.shards if s.state is not None]
        for shard in held:
            shard.state = State.DRAINED
        try:
            async with asyncio.timeout(self.timings.renew_deadline):
                await asyncio.gather(*(self._release(s) for s in held))
                await self.member.lock.delete()
        except TimeoutError:
            log.error("Shard Leases not released in time; they expire on their own")
        self._report("Left the shard members", frozenset())

    def _report(self, message: str, shards: frozenset[int]) -> None:
        self._metrics.held.set(len(self.acting))
        if message:
            log.info(message, extra={"shards": sorted(shards), "acting": len(self.acting)})


class ShardedControllers:
    """The operator's side of sharding: what the controllers do as shards come and go, and
    which part of the watched kinds the informers are asked to list and watch.

    Client-side filtering always applies (``controller.ShardFilter``). Whether the API server
    filters too is asked once per kind: a list with a ``shardSelector`` whose answer echoes
    ``metadata.shardInfo`` was honoured (KEP-5866); then the informers' list and watch requests
    carry the selector of the shards held (``params``, read at each (re)connection, so a change
    reaches the server within one watch timeout; the objects of a newly taken shard are listed
    here at once, so none waits for that).
    """

    def __init__(
        self,
        handlers: list[ForObject],  # each controller's own kind's: it adopts a new shard's CRs
        *,
        space: ShardSpace,
        client: KubeClient,
        discovery: Discovery,
        gate: RunGate,
        namespaces: tuple[str, ...],
        grace: float,
        kill_now: Callable[[], None],
        acting: Callable[[], frozenset[int]],
    ) -> None:
        self.handlers = handlers
        self.space = space
        self._client = client
        self._discovery = discovery
        self._gate = gate
        self._namespaces: list[str | None] = list(namespaces) or [None]
        self._grace = grace
        self._kill_now = kill_now
        self._acting = acting
        self.server_side: dict[GVK, bool] = {}
        self._selectors: dict[GVK, str] = {}

    @property
    def controllers(self) -> list[Controller]:
        return [handler.controller for handler in self.handlers]

    def params(self, gvk: GVK) -> dict[str, str]:
        """The list and watch parameters of ``gvk``'s informers: the shards acted on, where the
        API server filters by them."""
        selector = self._selectors.get(gvk)
        return {"shardSelector": selector} if selector else {}

    async def acquired(self, shards: frozenset[int]) -> None:
        for handler in self.handlers:
            gvk = handler.watch.gvk
            try:
                info = await self._discovery.resource(gvk.api_version, gvk.kind)
                params = {"shardSelector": self.space.selector(shards)}
                for namespace in self._namespaces:
                    async for page in list_pages(
                        self._client, info.path(namespace), 500, params=params
                    ):
                        if gvk not in self.server_side:
                            await self._detect(gvk, info.path(namespace), page)
                        for obj in page.get("items") or []:
                            uid = objects.metadata(obj).get("uid") or ""
                            if self.space.shard_of(uid) in shards:
                                handler.adopt(obj)
            except (ApiError, Unreachable) as err:
                # The watch's events and the periodic re-runs still bring them, later.
                log.error(
                    "Cannot list the objects of shards just taken",
                    extra={"gvk": str(gvk), "error": str(err)},
                )
        self._select()

    async def release(self, shards: frozenset[int]) -> None:
        self._select()
        cause = "the operator gave this CR's shard to another replica"

        def interrupt(tasks: list[asyncio.Task[Any]]) -> None:
            self._gate.interrupt_only(tasks, cause)

        await asyncio.gather(
            *(
                c.stop_runs(self._in(shards), grace=self._grace, interrupt=interrupt)
                for c in self.controllers
            )
        )

    def lost(self, shards: frozenset[int]) -> None:
        self._select()
        self._kill_now()
        cause = "the operator could not renew the Lease of this CR's shard"
        for controller in self.controllers:
            self._gate.interrupt_only(controller.tasks_of(self._in(shards)), cause)

    def _in(self, shards: frozenset[int]) -> Callable[[str], bool]:
        return lambda uid: self.space.shard_of(uid) in shards

    async def _detect(self, gvk: GVK, path: str, page: dict[str, Any]) -> None:
        """Whether the API server filters this kind by shard. It says so in the list's
        ``metadata.shardInfo``, but (checked on kube-apiserver 1.36.3) only for built-in kinds:
        custom resources are filtered without the echo. So without it, a selector no object can
        match is sent: an API server that honours the parameter refuses it as invalid, one that
        ignores it answers."""
        honoured = "shardInfo" in (page.get("metadata") or {})
        if not honoured:
            try:
                await self._client.get(path, params={"limit": "1", "shardSelector": INVALID})
            except ApiError as err:
                honoured = "invalid shard selector" in str(err)
        self.server_side[gvk] = honoured
        log.info(
            "Sharded watches",
            extra={"gvk": str(gvk), "filtered": "server-side" if honoured else "client-side"},
        )

    def _select(self) -> None:
        """The informers' selectors: the shards acted on, for the kinds the API server filters."""
        selector = self.space.selector(self._acting())
        for controller in self.controllers:
            gvk = controller.watch.gvk
            if not self.server_side.get(gvk):
                continue
            if selector:
                self._selectors[gvk] = selector
            else:  # nothing held: the watch sees everything again, the controllers drop it all
                self._selectors.pop(gvk, None)
