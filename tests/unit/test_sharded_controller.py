"""A controller under sharding: it acts only on held shards, adopts the objects of a shard it
takes, and stops the runs of a shard it gives up (through the run gate, the drain's mechanism)."""

from __future__ import annotations

import asyncio

from ansible_operator.core.watches import GVK, Watch
from ansible_operator.runtime.control.controller import Controller
from ansible_operator.runtime.control.gate import RunGate
from ansible_operator.runtime.control.handlers import ForObject
from ansible_operator.runtime.control.reconcile import Request

from .test_shutdown import Runs, started, within

WATCH = Watch(gvk=GVK("test.example.com", "v1", "Thing"), role="/roles/thing")


def thing(name: str, uid: str, generation: int = 1) -> dict:
    meta = {"name": name, "namespace": "ns", "uid": uid, "generation": generation}
    return {"apiVersion": "test.example.com/v1", "kind": "Thing", "metadata": meta}


def test_events_of_objects_outside_the_held_shards_are_dropped() -> None:
    held = {"mine"}
    c = Controller(WATCH, lambda key: None, workers=1, owns=lambda uid: uid in held)  # type: ignore[arg-type,return-value]
    events = ForObject(c)
    events("ADDED", thing("a", "mine"))
    events("ADDED", thing("b", "theirs"))
    assert c.queue._queued == {("ns", "a")}
    assert c.owned_count() == 1


def test_a_dependent_counts_through_its_owner_uid() -> None:
    held = {"mine"}
    c = Controller(WATCH, lambda key: None, workers=1, owns=lambda uid: uid in held)  # type: ignore[arg-type,return-value]
    events = ForObject(c)
    events("ADDED", thing("a", "mine"))
    events("ADDED", thing("b", "theirs"))
    c.queue._queued.clear()
    c.enqueue(Request(("ns", "b")))
    c.enqueue(Request(("ns", "unknown")))
    assert not c.queue._queued
    c.enqueue(Request(("ns", "a")))
    assert c.queue._queued == {("ns", "a")}


def test_a_taken_shard_is_reconciled_even_without_a_change() -> None:
    held: set[str] = set()
    c = Controller(WATCH, lambda key: None, workers=1, owns=lambda uid: uid in held)  # type: ignore[arg-type,return-value]
    events = ForObject(c)
    events("ADDED", thing("a", "u1"))
    assert not c.queue._queued
    held.add("u1")
    events.adopt(thing("a", "u1"))
    assert c.queue._queued == {("ns", "a")}
    c.queue._queued.clear()
    events("MODIFIED", thing("a", "u1"))  # nothing changed since adopted: filtered
    assert not c.queue._queued


def test_a_key_whose_shard_was_given_up_while_queued_is_not_run() -> None:
    held = {"u1", "u2"}
    ran: list[tuple[str, str]] = []

    async def reconcile(request):
        ran.append(request.key)

    async def scenario() -> None:
        c = Controller(WATCH, reconcile, workers=1, owns=lambda uid: uid in held)
        events = ForObject(c)
        events("ADDED", thing("a", "u1"))
        events("ADDED", thing("b", "u2"))
        held.discard("u1")
        task = asyncio.create_task(c.run())
        while not ran:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    within(10, scenario())
    assert ran == [("ns", "b")]


def test_giving_up_a_shard_lets_its_runs_finish_then_interrupts_the_rest_only() -> None:
    gate = RunGate()
    runs = Runs(gate, {"quick": 0.05})  # "slow" and "other" run for ever
    held = {"u-quick", "u-slow", "u-other"}

    async def scenario() -> None:
        c = Controller(WATCH, runs.reconcile, workers=3, owns=lambda uid: uid in held)
        events = ForObject(c)
        task = asyncio.create_task(c.run())
        for name in ("quick", "slow", "other"):
            events("ADDED", thing(name, f"u-{name}"))
        await started(runs, "quick", "slow", "other")
        given_up = {"u-quick", "u-slow"}
        held.difference_update(given_up)
        await c.stop_runs(
            given_up.__contains__,
            grace=0.5,
            interrupt=lambda tasks: gate.interrupt_only(tasks, "shard given up"),
        )
        assert runs.ended == {"quick": "finished", "slow": "cancelled"}
        assert runs.interrupted == {"slow": "shard given up"}
        assert c.tasks_of(lambda uid: uid == "u-other")  # untouched, still running
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    within(20, scenario())
