"""Leader election for ``run --leader-elect``: one replica acts, the others wait on a Lease.

The decisions are ``core/lease.py``'s (client-go's rules plus a stricter stop for the leader);
this module does the I/O around them. ``LeaderElector.lead()`` is the manager's whole contract:
it waits to hold the Lease, runs ``act`` while renewing it, and when ``act`` is done (a SIGTERM
drained it) releases the Lease so that a follower takes over at once. When the Lease cannot be
kept, the runs are killed without grace, ``act`` is cancelled and ``LeadershipLost`` raised, all
before any other replica may take over. Followers watch the Lease besides retrying every retry
period (an informer on the Lease), so a released Lease is taken within moments.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import random
import socket
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote

from prometheus_client import CollectorRegistry, Gauge

from ansible_operator.core import GVK, JITTER_FACTOR, Candidate, LeaseRecord, Timings
from ansible_operator.kube import (
    SERVICE_ACCOUNT_DIR,
    ApiError,
    Discovery,
    Informer,
    KubeClient,
    Unreachable,
)
from ansible_operator.runtime.config.settings import RunSettings

log = logging.getLogger("leader")

RETRY_PERIOD = 2.0  # controller-runtime's; upstream has no flag for it
LEASE = GVK("coordination.k8s.io", "v1", "Lease")


class LeaderElectionError(Exception):
    """Leader election is misconfigured; one line for the user."""


class LeadershipLost(Exception):
    """The Lease could not be kept; everything this replica did as the leader has stopped."""


@dataclass(frozen=True)
class ElectionConfig:
    namespace: str
    name: str
    identity: str
    timings: Timings


def new_identity() -> str:
    """controller-runtime's: the host name (the Pod's name in a cluster), then a random UUID."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def election_config(
    settings: RunSettings,
    *,
    namespace_file: Path = SERVICE_ACCOUNT_DIR / "namespace",
    flag: str = "--leader-elect",  # or --shards, whose Leases are named and placed alike
) -> ElectionConfig:
    """The Lease to hold, from the flags; LeaderElectionError when it cannot be decided.

    Without ``--leader-election-namespace`` the Lease lives in the Pod's own namespace, as
    controller-runtime does; outside a cluster there is none to default to.
    """
    if not settings.election.leader_election_id:
        raise LeaderElectionError(f"{flag} needs --leader-election-id (the name of the Lease)")
    namespace = settings.election.leader_election_namespace
    if not namespace:
        try:
            namespace = namespace_file.read_text().strip()
        except OSError:
            namespace = ""
        if not namespace:
            raise LeaderElectionError(
                f"{flag} outside a cluster needs --leader-election-namespace "
                f"(there is no {namespace_file} to take it from)"
            )
    timings = Timings(
        lease_duration=settings.election.leader_elect_lease_duration,
        renew_deadline=settings.election.leader_elect_renew_deadline,
        retry_period=RETRY_PERIOD,
    )
    problem = timings.problem()
    if problem:
        raise LeaderElectionError(
            f"--leader-elect-lease-duration={timings.lease_duration:g}s, "
            f"--leader-elect-renew-deadline={timings.renew_deadline:g}s: {problem}"
        )
    return ElectionConfig(namespace, settings.election.leader_election_id, new_identity(), timings)


class LeaseLock:
    """The Lease object; updates carry the resourceVersion last read or written, so of two
    replicas writing on the same version only one succeeds."""

    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        name: str,
        *,
        labels: dict[str, str] | None = None,  # set on create (shards find their Leases by them)
    ) -> None:
        self._client = client
        self.namespace = namespace
        self.name = name
        self.labels = labels or {}
        self._collection = lease_collection(namespace)
        self._path = f"{self._collection}/{quote(name)}"
        self._object: dict[str, Any] | None = None

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    async def get(self) -> LeaseRecord | None:
        """The Lease's record; None when there is no Lease."""
        try:
            self._object = await self._client.get(self._path)
        except ApiError as err:
            if err.status != 404:
                raise
            self._object = None
            return None
        return LeaseRecord.from_spec(self._object.get("spec"))

    def seen(self, obj: dict[str, Any] | None) -> LeaseRecord | None:
        """The Lease as read by someone else (a list of Leases), as ``get()`` would return it."""
        self._object = obj
        return None if obj is None else LeaseRecord.from_spec(obj.get("spec"))

    async def delete(self) -> None:
        """Delete the Lease if it is still as last read or written."""
        if self._object is None:
            return
        version = self._object["metadata"]["resourceVersion"]
        body = {"preconditions": {"resourceVersion": version}}
        with contextlib.suppress(ApiError):
            await self._client.request("DELETE", self._path, body=body)
        self._object = None

    async def create(self, record: LeaseRecord) -> None:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if self.labels:
            metadata["labels"] = self.labels
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": record.to_spec(),
        }
        self._object = await self._client.request("POST", self._collection, body=body)

    async def update(self, record: LeaseRecord) -> None:
        assert self._object is not None, "update() before get() or create()"
        body = {**self._object, "spec": record.to_spec()}
        self._object = await self._client.request("PUT", self._path, body=body)

    async def wait_for_change(self, changed: asyncio.Event) -> None:
        """Set ``changed`` on every event of the Lease, forever (a follower's early wake-up;
        polling still works when the watch does not)."""
        informer = Informer(
            self._client,
            Discovery(self._client),
            LEASE,
            namespace=self.namespace,
            handler=lambda _type, _lease: changed.set(),
            params=lambda: {"fieldSelector": f"metadata.name={self.name}"},
        )
        await informer.run()


def lease_collection(namespace: str) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{quote(namespace)}/leases"


def wall_clock() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


async def take_or_keep(candidate: Candidate, lock: LeaseLock, current: LeaseRecord | None) -> bool:
    """client-go's slow path: given the Lease as just read (None: there is none), write the
    record that takes or keeps it for ``candidate``; False when another holder's term still
    runs or the write was refused (someone else wrote first)."""
    sent = time.monotonic()
    record = candidate.claim(current, sent, wall_clock())
    if record is None:
        return False
    try:
        if current is None:
            await lock.create(record)
        else:
            await lock.update(record)
    except (ApiError, Unreachable) as err:
        log.info("Failed to take the Lease", extra={"lease": str(lock), "error": str(err)})
        return False
    candidate.wrote(record, sent)
    return True


class LeaderElector:
    """One replica's part in the election of ``config``, through ``lock`` (a LeaseLock, or an
    in-memory stand-in in tests)."""

    def __init__(
        self,
        config: ElectionConfig,
        lock: LeaseLock,
        *,
        abandon: Callable[[], None],
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.config = config
        self._abandon = abandon
        self.timings = config.timings
        self.lock = lock
        self.candidate = Candidate(config.identity, config.timings)
        self._reported_holder = ""
        self._status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease. "
            "Please make sure to group by name.",
            ["name"],
            registry=registry,
        )
        self._status.labels(name=config.name).set(0)

    async def lead(
        self,
        stop: asyncio.Event,
        act: Callable[[], Coroutine[Any, Any, None]],
    ) -> None:
        """Run ``act`` as the leader; return without acting if ``stop`` is set first.

        ``act`` must return once ``stop`` is set and its work is finished or stopped; the Lease
        is renewed meanwhile and released afterwards. If it cannot be renewed, ``stop`` is set,
        ``abandon()`` called (to kill running work without grace), ``act`` cancelled, and
        LeadershipLost raised.
        """
        if not await self._acquire(stop):
            return
        acting = asyncio.create_task(act())
        keeping = asyncio.create_task(self._keep())
        try:
            await asyncio.wait({acting, keeping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            keeping.cancel()
        if not keeping.cancelled() and keeping.done():
            await self._stop_acting(stop, acting, reason=keeping.result())
        try:
            acting.result()  # a crash of the controllers ends the operator, loudly
        finally:
            await self._release()

    async def _stop_acting(
        self, stop: asyncio.Event, acting: asyncio.Task[None], *, reason: str
    ) -> NoReturn:
        """The Lease is lost: stop everything the leader does before anyone else may start."""
        self._status.labels(name=self.config.name).set(0)
        log.error("Leader election lost, stopping", extra={"reason": reason})
        stop.set()
        self._abandon()
        acting.cancel()
        # Whatever has not stopped within the margin left is ended by the process exit.
        margin = self.timings.lease_duration - (
            self.timings.renew_deadline + self.timings.retry_period
        )
        await asyncio.wait({acting}, timeout=margin)
        raise LeadershipLost(f"lost the Lease {self.lock}: {reason}")

    async def _acquire(self, stop: asyncio.Event) -> bool:
        log.info(
            "Attempting to acquire leader lease",
            extra={"lease": str(self.lock), "identity": self.config.identity},
        )
        changed = asyncio.Event()
        watcher = asyncio.create_task(self.lock.wait_for_change(changed))
        stopping = asyncio.create_task(stop.wait())
        try:
            while not stop.is_set():
                changed.clear()
                if await self._attempt(self.timings.renew_deadline):
                    self._status.labels(name=self.config.name).set(1)
                    log.info(
                        "Successfully acquired lease",
                        extra={"lease": str(self.lock), "identity": self.config.identity},
                    )
                    return True
                period = self.timings.retry_period
                waking = asyncio.create_task(changed.wait())
                await asyncio.wait(
                    {stopping, waking},
                    timeout=period * (1 + random.random() * JITTER_FACTOR),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                waking.cancel()
            return False
        finally:
            for task in (watcher, stopping):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _keep(self) -> str:
        """Renew every retry period until that fails past the acting deadline; returns why."""
        while True:
            await asyncio.sleep(self.timings.retry_period)
            while True:
                remaining = self.candidate.acting_deadline() - time.monotonic()
                if remaining <= 0:
                    return (
                        "not renewed within "
                        f"{self.timings.retry_period + self.timings.renew_deadline:g}s"
                    )
                if await self._attempt(remaining):
                    break
                if not self.candidate.is_leader:
                    return f"the Lease is held by {self.candidate.holder or 'nobody'}"
                remaining = self.candidate.acting_deadline() - time.monotonic()
                await asyncio.sleep(max(0.0, min(self.timings.retry_period, remaining)))

    async def _attempt(self, timeout: float) -> bool:
        """client-go's tryAcquireOrRenew, within ``timeout`` seconds."""
        try:
            async with asyncio.timeout(timeout):
                return await self._try_acquire_or_renew()
        except TimeoutError:
            log.info("Leader election request timed out", extra={"lease": str(self.lock)})
            return False
        finally:
            self._report_holder()

    async def _try_acquire_or_renew(self) -> bool:
        sent = time.monotonic()
        record = self.candidate.renewal(sent, wall_clock())
        if record is not None:
            try:
                await self.lock.update(record)
            except (ApiError, Unreachable) as err:
                log.info(
                    "Failed to update the Lease optimistically, falling back to slow path",
                    extra={"error": str(err)},
                )
            else:
                self.candidate.wrote(record, sent)
                return True
        try:
            current = await self.lock.get()
        except (ApiError, Unreachable) as err:
            log.error("Error retrieving the Lease", extra={"error": str(err)})
            return False
        return await take_or_keep(self.candidate, self.lock, current)

    def _report_holder(self) -> None:
        holder = self.candidate.holder
        if holder and holder != self._reported_holder:
            self._reported_holder = holder
            log.info("New leader elected", extra={"lease": str(self.lock), "leader": holder})

    async def _release(self) -> None:
        """Give the Lease up if this replica still holds it, so that a follower need not wait.
        It is read first: a renewal cut short may have changed its resourceVersion."""
        if not self.candidate.is_leader:
            return
        self._status.labels(name=self.config.name).set(0)
        try:
            async with asyncio.timeout(self.timings.renew_deadline):
                record = self.candidate.release(await self.lock.get(), wall_clock())
                if record is None:
                    return
                await self.lock.update(record)
        except (TimeoutError, ApiError, Unreachable) as err:
            log.error("Failed to release the Lease", extra={"error": str(err)})
            return
        self.candidate.wrote(record, time.monotonic())
        log.info("Released the Lease", extra={"lease": str(self.lock)})
