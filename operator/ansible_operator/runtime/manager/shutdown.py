"""Stopping the operator without cutting runs short, and without mistaking a stop for a failure.

Kubernetes sends SIGTERM at every rollout, node drain and scale-down. Then, as upstream: no new
run starts, and the runs under way get up to ``--graceful-shutdown-timeout`` to finish. The runs
still going after that are interrupted: their whole process trees are killed (the runner does it
when its task is cancelled) and their CRs say ``Running=False`` with reason ``Interrupted``, not
``Failure``, so that the next operator process runs them again. A second signal interrupts at once.

``drain`` is the shutdown sequence, through the run gate (``control.gate``); the watches stop
only after it, so no event is missed while the runs end.
"""

from __future__ import annotations

import asyncio
import logging
import math
import signal
from collections.abc import Callable, Sequence
from typing import TypeVar

from ansible_operator.runtime.control.controller import STOP_WAIT, Controller
from ansible_operator.runtime.control.gate import RunGate

T = TypeVar("T")
log = logging.getLogger("shutdown")

SIGNALS = (signal.SIGINT, signal.SIGTERM)


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
