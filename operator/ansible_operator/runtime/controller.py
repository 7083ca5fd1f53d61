"""One controller per watches.yaml entry: events in, a de-duplicated queue, workers out.

The kind's informers deliver every event to ``handle_event`` (the initial list as ``ADDED``);
the predicates decide whether it asks for a reconcile (a spec change does, a status-only change
does not), and the key goes on the work queue. ``workers`` coroutines take keys and call the
reconciler, which only ever sees the object's identity: reconciliation is level-based, it
re-reads the object (the contract is in ``reconcile``). The controller turns the reconciler's
answer into the key's next run: a periodic re-run or ``requeue_after`` when it succeeded,
exponential backoff when it failed, none after a terminal error until the object's spec or
annotations change.

With sharding (``owns``), the controller acts only on objects whose uid is in a shard this
replica holds: other objects' events are dropped, their keys are not run, and a dependent's
event counts through its owner's uid. The uid of every key seen is kept for that.

An object first seen already Successful at its generation (the initial listing after a
restart) goes in the queue's resync lane: re-run to repair drift, but after every new or changed
object and at a bounded rate (``resync_rate``), so a restart does not stampede.

The controller keeps controller-runtime's metrics with their meanings (``ControllerMetrics``,
labelled with upstream's controller name): each reconcile's outcome (``success``,
``requeue_after``, ``error``; terminal errors and crashes, a Go panic's counterpart, also count
apart), its time, the workers busy; and operator-lib's creation time of each CR it acts on.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ansible_operator.core import ItemBackoff, Watch, conditions, objects, predicates, triggers
from ansible_operator.runtime import logs
from ansible_operator.runtime.framework_metrics import ControllerFamilies
from ansible_operator.runtime.reconcile import (
    TRIGGER,
    Key,
    ReconcileError,
    ReconcileFn,
    TerminalError,
)
from ansible_operator.runtime.workqueue import ShutDown, WorkQueue

log = logging.getLogger("ansible-controller")

StopRuns = Callable[[list[asyncio.Task[Any]]], None]
STOP_WAIT = 30.0  # after an interruption: the runner's kill grace, then the status writes


def _predicate_view(obj: dict[str, Any]) -> dict[str, Any]:
    """The part of an object the predicates compare; kept per object between events."""
    meta = obj.get("metadata", {})
    keep = ("generation", "annotations", "labels", "resourceVersion")
    view = {"metadata": {k: meta[k] for k in keep if k in meta}}
    if not meta.get("generation"):
        # Kinds without a generation (Secrets, ConfigMaps) compare their content instead.
        view.update({k: v for k, v in obj.items() if k not in ("metadata", "status")})
    return view


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
        self._seen: dict[Key, dict[str, Any]] = {}
        self._terminal: set[Key] = set()  # keys whose last reconcile ended in a TerminalError
        # A terminal error waits for the object to change, and bad input often sits in an
        # annotation: for those keys, annotation changes pass as if the watch asked for them.
        self._after_terminal = dataclasses.replace(watch, watch_annotations_changes=True)
        self._tasks: list[asyncio.Task[None]] = []
        self._owns = owns
        self._uids: dict[Key, str] = {}
        # The worker running each key's reconcile, and when that reconcile is done.
        self._running: dict[Key, tuple[asyncio.Task[Any], asyncio.Event]] = {}
        # Why each queued key runs next: the first reason it was added for, a timer's when it
        # fires (core.triggers; for the run's record, never for what it does).
        self._why: dict[Key, triggers.Trigger] = {}

    def owned(self, key: Key) -> bool:
        """Whether this replica acts on ``key`` (always, without sharding)."""
        if self._owns is None:
            return True
        uid = self._uids.get(key)
        return uid is not None and self._owns(uid)

    def owned_count(self) -> int:
        return sum(1 for key in self._uids if self.owned(key))

    def adopt(self, obj: dict[str, Any]) -> None:
        """``obj`` is in a shard this replica has just taken: reconcile it, whatever its
        events said before (level-based: the new holder cannot know what the last one did)."""
        key: Key = objects.key(obj)
        self._uids[key] = objects.metadata(obj).get("uid") or ""
        self._seen[key] = _predicate_view(obj)
        self._created(key, obj)
        self._why.setdefault(key, triggers.ADOPTION)
        self.queue.add(key)

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
        return [entry for key, entry in self._running.items() if uids(self._uids.get(key, ""))]

    async def _wait_runs(self, uids: Callable[[str], bool], timeout: float) -> bool:
        """Whether the runs ``uids`` selects all ended within ``timeout`` seconds."""
        waits = [asyncio.create_task(done.wait()) for _, done in self._runs_of(uids)]
        if not waits:
            return True
        _, pending = await asyncio.wait(waits, timeout=timeout)
        for waiting in pending:
            waiting.cancel()
        return not pending

    def handle_event(self, event_type: str | None, obj: dict[str, Any]) -> None:
        key: Key = objects.key(obj)
        if event_type == "DELETED":
            owned = self.owned(key)
            self._uids.pop(key, None)
        else:
            self._uids[key] = objects.metadata(obj).get("uid") or ""
            owned = self.owned(key)
        if not owned:
            self._seen.pop(key, None)  # its next holder reconciles it whatever it was
            self._forget_created(key)
            log.debug("event not in a held shard", extra={"key": "/".join(key)})
            return
        old = self._seen.get(key)
        new = _predicate_view(obj)
        if event_type == "DELETED":
            self._seen.pop(key, None)
            self._terminal.discard(key)
        else:
            self._seen[key] = new
        event = _event_name(event_type, old)
        if event == "delete":
            self.queue.cancel(key)
            self._why.pop(key, None)
            self._forget_created(key)
        watch = self._after_terminal if key in self._terminal else self.watch
        if predicates.primary_event_passes(event, old, new, watch):
            resync = old is None and conditions.settled(obj)
            log.debug(
                "event passes",
                extra={"event": event, "key": "/".join(key), "lane": "resync" if resync else "now"},
            )
            if event != "delete":
                self._created(key, obj)
                self._why.setdefault(key, triggers.of_event(event, old, obj, resync=resync))
            if resync:
                self.queue.add_resync(key)
            else:
                self.queue.add(key)
        else:  # said, so that a test can tell an event was seen and ignored
            log.debug(
                "event filtered",
                extra={
                    "event": event,
                    "key": "/".join(key),
                    "resourceVersion": objects.metadata(obj).get("resourceVersion"),
                },
            )

    def _created(self, key: Key, obj: dict[str, Any]) -> None:
        """operator-lib's resource_created_at_seconds for a CR an event passed for."""
        stamp = objects.metadata(obj).get("creationTimestamp")
        if isinstance(stamp, str):
            seconds = int(datetime.fromisoformat(stamp).timestamp())
            self.metrics.created_at.labels(*self._created_labels(key)).set(seconds)

    def _forget_created(self, key: Key) -> None:
        self.metrics.created_at.remove(*self._created_labels(key))

    def _created_labels(self, key: Key) -> tuple[str, str, str, str, str]:
        gvk = self.watch.gvk
        return (key[1], key[0], gvk.group, gvk.version, gvk.kind)

    def enqueue(self, key: Key, why: triggers.Trigger = triggers.NONE_KNOWN) -> None:
        """Ask for a reconcile of ``key`` (a dependent changed, say: ``why``)."""
        if self.owned(key):
            self._why.setdefault(key, why)
            self.queue.add(key)

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
        token = TRIGGER.set(self._why.pop(key, triggers.NONE_KNOWN))
        try:
            with logs.object_context(self.watch.gvk.kind, *key):
                await self._reconcile_and_schedule(key)
        finally:
            TRIGGER.reset(token)

    async def _reconcile_and_schedule(self, key: Key) -> None:
        self._terminal.discard(key)
        started = time.monotonic()
        outcome = await self._reconcile_once(key)  # an interrupted one is not counted
        metrics = self.metrics
        metrics.reconcile_time.observe(time.monotonic() - started)
        metrics.results[outcome].inc()
        if outcome == "error":
            metrics.errors.inc()

    async def _reconcile_once(self, key: Key) -> str:
        """Reconcile ``key`` and schedule its next run; its outcome as controller-runtime's
        ``result`` label names it."""
        try:
            result = await self._reconcile(key)
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


def _event_name(event_type: str | None, old: dict[str, Any] | None) -> str:
    """Watch event types as the predicates name them: a first sight (the initial listing, or an
    object a relist found) counts as a create."""
    if event_type == "DELETED":
        return "delete"
    if old is None:
        return "create"
    return "update"
