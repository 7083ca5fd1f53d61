"""The per-kind queue of objects waiting to be reconciled.

Keys (namespace, name) are de-duplicated: a key waiting in the queue is queued once however many
events arrive, and a key that a worker holds is never handed to a second worker; an add during
processing marks it dirty, and it is queued again when the worker is done. So one object never
runs twice at once, and an event that arrives mid-run is never lost.

Each key also has at most one timer, the latest decision about its next run (periodic re-run,
``requeue_after`` or failure backoff): scheduling again replaces the timer rather than adding a
second one, so a flood of retries cannot build up.

Two lanes: ``add`` is for work that something asked for, ``add_resync`` for objects that were
already reconciled at their generation and are re-run only to repair drift (the initial listing
after a restart). Resync keys are handed out only when no asked-for key waits, and at most
``resync_rate`` per second, so a restart with many objects does not stampede: a new object goes
first, and the backlog still drains. An ``add`` of a key waiting as a resync promotes it.

The queue keeps client-go's ``workqueue_*`` metrics (``QueueMetrics``) with their meanings: an
add that queues a key (or marks a running one dirty) counts, a repeated add of a waiting key
does not; every ``schedule`` is a retry; the time from the add to a worker taking the key, and
from then to its ``done``, are observed; depth and the work in progress are read at each scrape.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Hashable

from ansible_operator.runtime.observe.framework_metrics import ControllerFamilies, QueueMetrics


class ShutDown(Exception):
    """The queue was shut down; workers stop."""


class WorkQueue[K: Hashable]:
    def __init__(
        self,
        *,
        resync_rate: float | None = None,
        clock: Callable[[], float] = time.monotonic,  # the event loop's clock; fake in tests
        metrics: QueueMetrics | None = None,  # None: kept, served nowhere (tests)
    ) -> None:
        if resync_rate is not None and resync_rate <= 0:
            raise ValueError("resync_rate must be positive")
        self._ready: deque[K] = deque()
        self._resync: dict[K, None] = {}  # an ordered set: the resync lane, oldest first
        self._resync_interval = 0.0 if resync_rate is None else 1.0 / resync_rate
        self._next_resync = float("-inf")  # clock time from which the next resync may go
        self._clock = clock
        self._wakeup = asyncio.Event()
        self._queued: set[K] = set()
        self._processing: set[K] = set()
        self._dirty: set[K] = set()
        self._timers: dict[K, asyncio.TimerHandle] = {}
        self._shut_down = False
        self._metrics = metrics or ControllerFamilies(None).bind("", 0).queue
        self._added_at: dict[K, float] = {}  # queued keys (and dirty ones): when added
        self._started: dict[K, float] = {}  # keys being processed: when taken
        self._metrics.depth.set_function(lambda: len(self._queued) + len(self._dirty))
        self._metrics.unfinished.set_function(lambda: sum(self._ages()))
        self._metrics.longest.set_function(lambda: max(self._ages(), default=0.0))

    def _ages(self) -> list[float]:
        now = self._clock()
        return [now - started for started in self._started.values()]

    def _counted(self, key: K) -> None:
        self._metrics.adds.inc()
        self._added_at.setdefault(key, self._clock())

    def add(self, key: K) -> None:
        """Queue ``key`` now (or again once its current run ends), ahead of every resync."""
        if self._shut_down:
            return
        if key in self._processing:
            if key not in self._dirty:
                self._counted(key)
                self._dirty.add(key)
        elif key in self._resync:
            del self._resync[key]
            self._ready.append(key)
            self._wakeup.set()
        elif key not in self._queued:
            self._counted(key)
            self._push(key)

    def _push(self, key: K) -> None:
        self._queued.add(key)
        self._ready.append(key)
        self._wakeup.set()

    def add_resync(self, key: K) -> None:
        """Queue ``key`` in the resync lane, unless it is queued or running already."""
        if self._shut_down or key in self._processing or key in self._queued:
            return
        self._counted(key)
        self._queued.add(key)
        self._resync[key] = None
        self._wakeup.set()

    def schedule(self, key: K, delay: float, fired: Callable[[], None] = lambda: None) -> None:
        """Queue ``key`` after ``delay`` seconds, replacing any timer it had (a retry);
        ``fired`` is called when it is queued so, not if the timer is replaced or cancelled."""
        self.cancel(key)
        if self._shut_down:
            return
        self._metrics.retries.inc()
        if delay <= 0:
            fired()
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        self._timers[key] = loop.call_later(delay, self._fire, key, fired)

    def _fire(self, key: K, fired: Callable[[], None]) -> None:
        self._timers.pop(key, None)
        fired()
        self.add(key)

    def cancel(self, key: K) -> None:
        """Drop the timer of ``key``, if any."""
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def scheduled(self, key: K) -> float | None:
        """When the timer of ``key`` fires, in loop time; None without a timer."""
        timer = self._timers.get(key)
        return timer.when() if timer is not None else None

    def try_get(self) -> K | None:
        """The next key that may be processed now, or None; as ``get``, the caller must call
        ``done(key)`` afterwards."""
        if self._ready:
            key = self._ready.popleft()
        elif self._resync and self._clock() >= self._next_resync:
            key = next(iter(self._resync))
            del self._resync[key]
            self._next_resync = max(self._next_resync, self._clock()) + self._resync_interval
        else:
            return None
        self._queued.discard(key)
        self._processing.add(key)
        now = self._clock()
        self._started[key] = now
        added = self._added_at.pop(key, None)
        if added is not None:
            self._metrics.queue_duration.observe(now - added)
        return key

    async def get(self) -> K:
        """The next key to process; the caller must call ``done(key)`` afterwards."""
        while True:
            if self._shut_down:
                raise ShutDown
            key = self.try_get()
            if key is not None:
                return key
            # No await between try_get and clear: an add cannot slip in unseen.
            self._wakeup.clear()
            wait = None if not self._resync else max(0.0, self._next_resync - self._clock())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), wait)

    def done(self, key: K) -> None:
        started = self._started.pop(key, None)
        if started is not None:
            self._metrics.work_duration.observe(self._clock() - started)
        self._processing.discard(key)
        if key in self._dirty:  # added while it ran, and counted then
            self._dirty.discard(key)
            if not self._shut_down:
                self._push(key)

    def __len__(self) -> int:
        return len(self._queued)

    def shutdown(self) -> None:
        """Stop queueing, drop every timer and wake the workers blocked in ``get`` (they get
        ``ShutDown``)."""
        self._shut_down = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._wakeup.set()
