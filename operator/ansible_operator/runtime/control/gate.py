"""The one switch every reconciler's run goes through: ``RunGate`` lets runs start until it is
closed, and stops the ones under way when interrupted (a shutdown past its grace, a lost Lease, a
shard given up). A stopped run raises ``Interrupted`` with its cause, so that its CR says
``Running=False`` with reason ``Interrupted``, not ``Failure``, and the next operator process
runs it again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


class Interrupted(Exception):
    """A run was stopped, or not started, because the gate closed; ``cause`` says why."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


class RunGate:
    """Lets runs start until it is closed, and stops the ones under way when interrupted.

    A run is awaited in its caller's task (a controller's worker), and an interruption cancels
    that task, so the run's cancellation reaches the runner and its processes are stopped.
    """

    def __init__(self) -> None:
        self._closed: str | None = None  # why no run may start
        self._interrupted: str | None = None  # why the running ones were stopped
        self._running: set[asyncio.Task[Any]] = set()
        self._stopped: dict[asyncio.Task[Any], str] = {}  # runs interrupted one by one, and why

    @property
    def running(self) -> int:
        """How many runs are under way."""
        return len(self._running)

    def close(self, cause: str) -> None:
        """From now on no run starts; the runs under way go on."""
        if self._closed is None:
            self._closed = cause

    def interrupt(self, cause: str) -> None:
        """Stop the runs under way (and close the gate)."""
        self.close(cause)
        if self._interrupted is None:
            self._interrupted = cause
            for task in self._running:
                task.cancel()

    def interrupt_only(self, tasks: Iterable[asyncio.Task[Any]], cause: str) -> None:
        """Stop the runs awaited in ``tasks`` (a shard given up), leaving the gate open."""
        for task in tasks:
            if task in self._running and task not in self._stopped:
                self._stopped[task] = cause
                task.cancel()

    async def run(self, work: Awaitable[T]) -> T:
        """Await ``work``, the start of a run, unless the gate is closed.

        Raises ``Interrupted`` if the gate is closed (``work`` is not started) or is interrupted
        meanwhile: ``work`` is then cancelled, so its processes are gone on return.
        """
        if self._closed is not None:
            if asyncio.iscoroutine(work):
                work.close()
            raise Interrupted(self._closed)
        me = asyncio.current_task()
        assert me is not None
        self._running.add(me)
        try:
            return await work
        except asyncio.CancelledError:
            # Ours alone if nobody else cancelled the task too: then it goes on, interrupted.
            cause = self._stopped.get(me) or self._interrupted
            if cause is not None and me.uncancel() == 0:
                raise Interrupted(cause) from None
            raise
        finally:
            self._running.discard(me)
            self._stopped.pop(me, None)
