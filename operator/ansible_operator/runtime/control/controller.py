"""One controller per watches.yaml entry: requests in, a de-duplicated queue, workers out.

Its sources' handlers (``handlers``: for the kind's own objects, for the owners of its
dependents, for the CRs a related object concerns) turn events into requests and ``enqueue``
them; the controller keeps the queue, the workers and the scheduling. ``workers`` coroutines
take keys and call the reconciler with the key and why it runs (``reconcile.Request``); the
reconciler re-reads the object (reconciliation is level-based: the contract is in
``reconcile``). The controller turns the reconciler's answer into the key's next run: a
periodic re-run or ``requeue_after`` when it succeeded, exponential backoff when it failed,
none after a terminal error until the object's spec or annotations change
(``waits_for_change``, which the object handler asks).

With sharding (``ShardFilter``), the controller acts only on objects whose uid is in a shard
this replica holds: other objects' requests are dropped and their keys are not run; a
dependent's request counts through its owner's uid. The object handler notes each key's uid.

A request in the resync lane (an object first seen already Successful at its generation: the
listing after a restart) is run to repair drift, but after every new or changed object and at
a bounded rate (``resync_rate``), so a restart does not stampede.

The controller keeps controller-runtime's metrics with their meanings (``ControllerMetrics``,
labelled with upstream's controller name): each reconcile's outcome (``success``,
``requeue_after``, ``error``; terminal errors and crashes, a Go panic's counterpart, also count
apart), its time, the workers busy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from ansible_operator.core import ItemBackoff, Watch, triggers
from ansible_operator.runtime.control.reconcile import (
    Key,
    ReconcileError,
    ReconcileFn,
    Request,
    TerminalError,
)
from ansible_operator.runtime.control.workqueue import ShutDown, WorkQueue
from ansible_operator.runtime.observe import logs
from ansible_operator.runtime.observe.framework_metrics import ControllerFamilies

log = logging.getLogger("ansible-controller")

StopRuns = Callable[[list[asyncio.Task[Any]]], None]
STOP_WAIT = 30.0  # after an interruption: the runner's kill grace, then the status writes


class ShardFilter:
    """Which keys this replica acts on: those whose uid is in a shard it holds (``owns``),
    every key without sharding."""

    def __init__(self, owns: Callable[[str], bool] | None = None) -> None:
        self._owns = owns
        self._uids: dict[Key, str] = {}

    def note(self, key: Key, uid: str) -> None:
        self._uids[key] = uid

    def forget(self, key: Key) -> None:
        self._uids.pop(key, None)

    def owned(self, key: Key) -> bool:
        if self._owns is None:
            return True
        uid = self._uids.get(key)
        return uid is not None and self._owns(uid)

    def uid(self, key: Key) -> str:
        return self._uids.get(key, "")

    def count(self) -> int:
        return sum(1 for key in self._uids if self.owned(key))


class Controller:
    def __init__(
        self,
        watch: Watch,
        reconcile: ReconcileFn,
        *,
        workers: int,
        backoff: ItemBackoff | None = None,
        owns: Callable[[str], bool] | None = None,  # by uid; None: every object (no sharding)
        resync_rate: float | None = None,  # None: resyncs wait only for asked-for work
        metrics: ControllerFamilies | None = None,  # None: kept, served nowhere (tests)
    ) -> None:
        self.watch = watch
        families = metrics or ControllerFamilies(None)
        self.name = families.name_for(watch.gvk)
        self.workers = max(1, workers)
        self.metrics = families.bind(self.name, self.workers)
        self.queue: WorkQueue[Key] = WorkQueue(resync_rate=resync_rate, metrics=self.metrics.queue)
        self._reconcile = reconcile
        self._backoff = backoff or ItemBackoff()
        self.shard = ShardFilter(owns)
        self._terminal: set[Key] = set()  # keys whose last reconcile ended in a TerminalError
        self._tasks: list[asyncio.Task[None]] = []
        # The worker running each key's reconcile, and when that reconcile is done.
        self._running: dict[Key, tuple[asyncio.Task[Any], asyncio.Event]] = {}
        # Why each queued key runs next: the first reason it was asked for since its last run
        # began, a timer's when it fires (core.triggers; for the run's record, never for what
        # it does). It goes to the reconciler with the key.
        self._why: dict[Key, triggers.Trigger] = {}

    def owned(self, key: Key) -> bool:
        """Whether this replica acts on ``key`` (always, without sharding)."""
        return self.shard.owned(key)

    def owned_count(self) -> int:
        return self.shard.count()

    def enqueue(self, request: Request, *, resync: bool = False) -> None:
        """Ask for a reconcile of ``request.key``, now or (``resync``) in the resync lane; a
        key outside the shards held is dropped."""
        key = request.key
        if not self.shard.owned(key):
            return
        self._why.setdefault(key, request.trigger)
        if resync:
            self.queue.add_resync(key)
        else:
            self.queue.add(key)

    def forget(self, key: Key) -> None:
        """The object is gone: its timer, its queued reason and its terminal error with it."""
        self.queue.cancel(key)
        self._why.pop(key, None)
        self._terminal.discard(key)

    def waits_for_change(self, key: Key) -> bool:
        """Whether the last reconcile of ``key`` ended in a terminal error."""
        return key in self._terminal

    async def stop_runs(
        self, uids: Callable[[str], bool], *, grace: float, interrupt: StopRuns
    ) -> None:
        """Wait up to ``grace`` seconds for the runs of objects whose uid ``uids`` selects,
        then ``interrupt`` the rest and wait for them to be recorded (a shard given up)."""
        if await self._wait_runs(uids, grace):
            return
        interrupt(self.tasks_of(uids))
        await self._wait_runs(uids, STOP_WAIT)

    def tasks_of(self, uids: Callable[[str], bool]) -> list[asyncio.Task[Any]]:
        """The tasks running reconciles of the objects whose uid ``uids`` selects."""
        return [task for task, _ in self._runs_of(uids)]

    def _runs_of(
        self, uids: Callable[[str], bool]
    ) -> list[tuple[asyncio.Task[Any], asyncio.Event]]:
        return [entry for key, entry in self._running.items() if uids(self.shard.uid(key))]

    async def _wait_runs(self, uids: Callable[[str], bool], timeout: float) -> bool:
        """Whether the runs ``uids`` selects all ended within ``timeout`` seconds."""
        waits = [asyncio.create_task(done.wait()) for _, done in self._runs_of(uids)]
        if not waits:
            return True
        _, pending = await asyncio.wait(waits, timeout=timeout)
        for waiting in pending:
            waiting.cancel()
        return not pending

    async def run(self) -> None:
        """Run the workers until cancelled; a cancelled worker cancels its reconcile too."""
        self._tasks = [asyncio.create_task(self._worker()) for _ in range(self.workers)]
        try:
            # Not gather(): drain() cancels idle workers, which must not cancel busy ones.
            await asyncio.wait(self._tasks)
            for task in self._tasks:
                error = None if task.cancelled() else task.exception()
                if error is not None and not isinstance(error, ShutDown):
                    raise error
        finally:
            self.queue.shutdown()
            for task in self._tasks:
                task.cancel()
            for task in self._tasks:
                with contextlib.suppress(asyncio.CancelledError, ShutDown):
                    await task

    async def drain(self, timeout: float) -> None:
        """Take no new work; give running reconciles up to ``timeout`` seconds to finish."""
        self.queue.shutdown()
        busy = {worker for worker, _ in self._running.values()}
        for task in self._tasks:
            if task not in busy:
                task.cancel()
        running = [t for t in self._tasks if not t.done()]
        if running:
            log.info("Waiting for running reconciles to finish", extra={"count": len(running)})
            await asyncio.wait(running, timeout=timeout)

    async def _worker(self) -> None:
        me = asyncio.current_task()
        assert me is not None
        while True:
            key = await self.queue.get()
            if not self.owned(key):  # its shard was given up while it waited
                self.queue.cancel(key)
                self.queue.done(key)
                continue
            done = asyncio.Event()
            self._running[key] = (me, done)
            self.metrics.active_workers.inc()
            try:
                await self._process(key)
            finally:
                self.metrics.active_workers.dec()
                done.set()
                del self._running[key]
                self.queue.done(key)

    async def _process(self, key: Key) -> None:
        request = Request(key, self._why.pop(key, triggers.NONE_KNOWN))
        with logs.object_context(self.watch.gvk.kind, *key):
            await self._reconcile_and_schedule(request)

    async def _reconcile_and_schedule(self, request: Request) -> None:
        self._terminal.discard(request.key)
        started = time.monotonic()
        outcome = await self._reconcile_once(request)  # an interrupted one is not counted
        metrics = self.metrics
        metrics.reconcile_time.observe(time.monotonic() - started)
        metrics.results[outcome].inc()
        if outcome == "error":
            metrics.errors.inc()

    async def _reconcile_once(self, request: Request) -> str:
        """Reconcile ``request.key`` and schedule its next run; its outcome as
        controller-runtime's ``result`` label names it."""
        key = request.key
        try:
            result = await self._reconcile(request)
        except asyncio.CancelledError:
            raise
        except TerminalError as err:
            self.metrics.terminal_errors.inc()
            self._backoff.forget(key)
            self.queue.cancel(key)
            self._terminal.add(key)
            log.error(
                "reconcile failed, not retrying until the object changes",
                extra={"key": "/".join(key), "error": str(err)},
            )
            return "error"
        except ReconcileError as err:
            delay = self._backoff.failure(key)
            log.info(
                "reconcile failed, retrying with backoff",
                extra={"key": "/".join(key), "error": str(err), "retry_in": delay},
            )
            self._schedule(key, delay, triggers.backoff(delay, str(err)))
            return "error"
        except Exception:
            self.metrics.panics.inc()
            delay = self._backoff.failure(key)
            log.exception(
                "reconcile crashed, retrying with backoff",
                extra={"key": "/".join(key), "retry_in": delay},
            )
            self._schedule(key, delay, triggers.backoff(delay, "the reconcile crashed"))
            return "error"
        self._backoff.forget(key)
        log.debug("reconciled", extra={"key": "/".join(key), "requeue_after": result.requeue_after})
        if result.requeue_after is None:
            self.queue.cancel(key)
            return "success"
        self._schedule(key, result.requeue_after, result.reason or triggers.NONE_KNOWN)
        return "requeue_after"

    def _schedule(self, key: Key, delay: float, why: triggers.Trigger) -> None:
        """A timed re-run; ``why`` is its trigger once its timer fires (a stale one that fires
        during another run is the reason of the run after)."""

        def fired() -> None:
            self._why.setdefault(key, why)

        self.queue.schedule(key, delay, fired)
