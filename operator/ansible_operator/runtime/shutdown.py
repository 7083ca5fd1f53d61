"""Stopping the operator without cutting runs short, and without mistaking a stop for a failure.

Kubernetes sends SIGTERM at every rollout, node drain and scale-down. Then, as upstream: no new
run starts, and the runs under way get up to ``--graceful-shutdown-timeout`` to finish. The runs
still going after that are interrupted: their whole process trees are killed (the runner does it
when its task is cancelled) and their CRs say ``Running=False`` with reason ``Interrupted``, not
``Failure``, so that the next operator process runs them again. A second signal interrupts at once.

``RunGate`` is the one switch every reconciler's run goes through (a lost leadership can close it
too); ``drain`` is the shutdown sequence; the watches stop only after it, so no event is missed
while the runs end.
"""

from __future__ import annotations

import asyncio
import logging
import math
import signal
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

from ansible_operator.runtime.controller import STOP_WAIT, Controller

T = TypeVar("T")
log = logging.getLogger("shutdown")

SIGNALS = (signal.SIGINT, signal.SIGTERM)


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


async def drain(controllers: Sequence[Controller], gate: RunGate, *, timeout: float) -> None:
    """The graceful shutdown: no new run, ``timeout`` seconds for the running ones (negative:
    no limit, as upstream), then the rest are interrupted and given ``STOP_WAIT`` seconds to be
    stopped and recorded."""
    gate.close("the operator is shutting down, no new run starts")
    if gate.running:
        log.info(
            "Shutting down: waiting for running reconciles",
            extra={"runs": gate.running, "graceful_shutdown_timeout": timeout},
        )
    grace = math.inf if timeout < 0 else timeout
    await asyncio.gather(*(c.drain(grace) for c in controllers))
    if gate.running:
        log.info(
            "Graceful shutdown timeout reached, interrupting the runs still going",
            extra={"runs": gate.running},
        )
    gate.interrupt(
        "the operator is shutting down and the run did not end within its"
        f" graceful shutdown timeout ({timeout:g}s)"
    )
    await asyncio.gather(*(c.drain(STOP_WAIT) for c in controllers))


def handle_signals(handler: Callable[[], None]) -> None:
    """Call ``handler`` (in the event loop) on SIGINT and SIGTERM, replacing any other handler."""
    loop = asyncio.get_running_loop()
    for sig in SIGNALS:
        loop.add_signal_handler(sig, handler)


def on_stop_signal(
    stop: asyncio.Event, gate: RunGate, controllers: Sequence[Controller] = ()
) -> Callable[[], None]:
    """The signal handler: the first signal starts the graceful shutdown, the next one
    interrupts the runs at once (upstream exits at once on a second signal). The controllers'
    queues take nothing more from the signal on, not from the drain on: an event that comes in
    between starts no reconcile."""

    def handler() -> None:
        if stop.is_set():
            log.info("Stop signal received again, interrupting the runs now")
            gate.interrupt("the operator was told twice to stop")
        for controller in controllers:
            controller.queue.shutdown()
        stop.set()

    return handler
