"""The per-kind queue of objects waiting to be reconciled.

Keys (namespace, name) are de-duplicated: a key waiting in the queue is queued once however many
events arrive, and a key that a worker holds is never handed to a second worker; an add during
processing marks it dirty, and it is queued again when the worker is done. So one object never
runs twice at once, and an event that arrives mid-run is never lost.

Each key also has at most one timer, the latest decision about its next run (periodic re-run,
``requeue_after`` or failure backoff): scheduling again replaces the timer rather than adding a
second one, so a flood of retries cannot build up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class ShutDown(Exception):
    """The queue was shut down; workers stop."""


class WorkQueue(Generic[K]):
    def __init__(self) -> None:
        self._ready: asyncio.Queue[K] = asyncio.Queue()
        self._queued: set[K] = set()
        self._processing: set[K] = set()
        self._dirty: set[K] = set()
        self._timers: dict[K, asyncio.TimerHandle] = {}
        self._shut_down = False

    def add(self, key: K) -> None:
        """Queue ``key`` now (or again once its current run ends)."""
        if self._shut_down:
            return
        if key in self._processing:
            self._dirty.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._ready.put_nowait(key)

    def schedule(self, key: K, delay: float) -> None:
        """Queue ``key`` after ``delay`` seconds, replacing any timer it had."""
        self.cancel(key)
        if self._shut_down:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        self._timers[key] = loop.call_later(delay, self._fire, key)

    def _fire(self, key: K) -> None:
        self._timers.pop(key, None)
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

    async def get(self) -> K:
        """The next key to process; the caller must call ``done(key)`` afterwards."""
        if self._shut_down:
            raise ShutDown
        key = await self._ready.get()
        if self._shut_down:
            raise ShutDown
        self._queued.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: K) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    def __len__(self) -> int:
        return len(self._queued)

    def shutdown(self) -> None:
        """Stop queueing and drop every timer; workers blocked in ``get`` are cancelled by
        their owner."""
        self._shut_down = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
