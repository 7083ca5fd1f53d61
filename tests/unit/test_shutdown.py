"""The graceful shutdown: the run gate, the drain sequence and the stop signal handler."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ansible_operator.core.watches import GVK, Watch
from ansible_operator.runtime.control.controller import Controller
from ansible_operator.runtime.control.gate import Interrupted, RunGate
from ansible_operator.runtime.control.handlers import ForObject
from ansible_operator.runtime.control.reconcile import Request, Result
from ansible_operator.runtime.manager.shutdown import drain, on_stop_signal

WATCH = Watch(gvk=GVK("test.example.com", "v1", "Thing"), role="/roles/thing")


class Runs:
    """Runs that take ``seconds[key]`` (default: for ever); records how each one ended."""

    def __init__(self, gate: RunGate, seconds: dict[str, float] | None = None) -> None:
        self.gate = gate
        self.seconds = seconds or {}
        self.started: list[str] = []
        self.ended: dict[str, str] = {}  # key -> "finished" | "cancelled"
        self.interrupted: dict[str, str] = {}  # key -> cause

    async def _run(self, name: str) -> str:
        self.started.append(name)
        try:
            await asyncio.sleep(self.seconds.get(name, 3600))
        except asyncio.CancelledError:
            self.ended[name] = "cancelled"
            raise
        self.ended[name] = "finished"
        return name

    async def reconcile(self, request: Request) -> Result:
        name = request.key[1]
        try:
            await self.gate.run(self._run(name))
        except Interrupted as stop:
            self.interrupted[name] = stop.cause
        return Result()


def within(seconds: float, coro: Any) -> Any:
    """Run ``coro``, failing instead of hanging if it does not end in ``seconds``."""
    return asyncio.run(asyncio.wait_for(coro, seconds))


async def started(runs: Runs, *names: str) -> None:
    while not set(names) <= set(runs.started):
        await asyncio.sleep(0.01)


def test_runs_that_end_within_the_timeout_finish_and_no_new_run_starts() -> None:
    gate = RunGate()
    runs = Runs(gate, {"short": 0.05})

    async def scenario() -> None:
        controller = Controller(WATCH, runs.reconcile, workers=2)
        task = asyncio.create_task(controller.run())
        controller.queue.add(("ns", "short"))
        await started(runs, "short")
        stopping = asyncio.create_task(drain([controller], gate, timeout=60))
        await asyncio.sleep(0)
        controller.queue.add(("ns", "too-late"))
        await stopping
        await task

    within(60, scenario())
    assert runs.ended == {"short": "finished"}
    assert runs.started == ["short"] and "short" not in runs.interrupted


def test_runs_still_going_after_the_timeout_are_interrupted_saying_why() -> None:
    gate = RunGate()
    runs = Runs(gate)

    async def scenario() -> None:
        controllers = [Controller(WATCH, runs.reconcile, workers=2) for _ in range(2)]
        tasks = [asyncio.create_task(c.run()) for c in controllers]
        controllers[0].queue.add(("ns", "a"))
        controllers[1].queue.add(("ns", "b"))
        await started(runs, "a", "b")
        assert gate.running == 2
        await drain(controllers, gate, timeout=0.1)
        assert gate.running == 0
        await asyncio.gather(*tasks)

    within(60, scenario())
    assert runs.ended == {"a": "cancelled", "b": "cancelled"}
    cause = "the operator is shutting down and the run did not end within its graceful"
    assert all(c.startswith(cause) and c.endswith("(0.1s)") for c in runs.interrupted.values())
    assert set(runs.interrupted) == {"a", "b"}


def test_a_negative_timeout_waits_without_limit_as_upstream() -> None:
    gate = RunGate()
    runs = Runs(gate, {"slow": 0.3})

    async def scenario() -> None:
        controller = Controller(WATCH, runs.reconcile, workers=1)
        task = asyncio.create_task(controller.run())
        controller.queue.add(("ns", "slow"))
        await started(runs, "slow")
        await drain([controller], gate, timeout=-1)
        await task

    within(60, scenario())
    assert runs.ended == {"slow": "finished"} and runs.interrupted == {}


def test_a_closed_gate_starts_nothing() -> None:
    gate = RunGate()
    runs = Runs(gate, {"x": 0})
    gate.close("closing for the test")

    async def scenario() -> None:
        with pytest.raises(Interrupted, match="closing for the test"):
            await gate.run(runs._run("x"))

    within(10, scenario())
    assert runs.started == []


def test_a_run_gets_its_result_or_its_error_through_the_gate() -> None:
    gate = RunGate()

    async def fails() -> None:
        raise ValueError("the run's own error")

    async def scenario() -> None:
        assert await gate.run(asyncio.sleep(0, result="done")) == "done"
        with pytest.raises(ValueError, match="own error"):
            await gate.run(fails())

    within(10, scenario())


def test_a_run_does_not_depend_on_tasks_created_while_it_runs() -> None:
    # Tasks created while a run goes on may be cancelled by whoever made them.
    gate = RunGate()
    runs = Runs(gate, {"x": 0.3})

    async def scenario() -> None:
        caller = asyncio.create_task(runs.reconcile(Request(("ns", "x"))))
        before = asyncio.all_tasks()
        await started(runs, "x")
        for task in asyncio.all_tasks() - before:
            task.cancel()
        await caller

    within(10, scenario())
    assert runs.ended == {"x": "finished"} and runs.interrupted == {}


def test_cancelling_the_caller_cancels_the_run() -> None:
    gate = RunGate()
    runs = Runs(gate)

    async def scenario() -> None:
        caller = asyncio.create_task(gate.run(runs._run("x")))
        await started(runs, "x")
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller

    within(10, scenario())
    assert runs.ended == {"x": "cancelled"} and gate.running == 0


def test_a_second_stop_signal_interrupts_at_once() -> None:
    gate = RunGate()
    runs = Runs(gate)

    async def scenario() -> None:
        stop = asyncio.Event()
        handler = on_stop_signal(stop, gate)
        controller = Controller(WATCH, runs.reconcile, workers=1)
        task = asyncio.create_task(controller.run())
        controller.queue.add(("ns", "long"))
        await started(runs, "long")
        handler()
        assert stop.is_set() and "long" not in runs.ended
        stopping = asyncio.create_task(drain([controller], gate, timeout=3600))
        handler()
        await stopping
        await task

    within(60, scenario())
    assert runs.interrupted == {"long": "the operator was told twice to stop"}


def test_after_a_stop_signal_no_key_is_taken_even_before_the_drain() -> None:
    gate = RunGate()
    runs = Runs(gate)

    async def scenario() -> None:
        stop = asyncio.Event()
        controller = Controller(WATCH, runs.reconcile, workers=1)
        handler = on_stop_signal(stop, gate, [controller])
        task = asyncio.create_task(controller.run())
        handler()
        ForObject(controller)("ADDED", {"metadata": {"name": "late", "namespace": "ns"}})
        assert len(controller.queue) == 0  # refused, not waiting for a worker
        await drain([controller], gate, timeout=1)
        await task

    within(60, scenario())
    assert runs.ended == {} and runs.interrupted == {}
