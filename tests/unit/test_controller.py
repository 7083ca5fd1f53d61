"""The controller turns reconcile outcomes into the next run of each key, and filters events."""

from __future__ import annotations

import asyncio

from ansible_operator.core.watches import GVK, Watch
from ansible_operator.runtime.control.controller import Controller
from ansible_operator.runtime.control.handlers import ForObject
from ansible_operator.runtime.control.reconcile import ReconcileError, Result, TerminalError

WATCH = Watch(gvk=GVK("test.example.com", "v1", "Thing"), role="/roles/thing")


def obj(name="a", generation=1, labels=None, status=None, annotations=None):
    meta = {"name": name, "namespace": "ns", "generation": generation}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    body = {"apiVersion": "test.example.com/v1", "kind": "Thing", "metadata": meta}
    if status is not None:
        body["status"] = status
    return body


def run_one(controller, key=("ns", "a")):
    async def scenario():
        loop = asyncio.get_running_loop()
        controller.queue.add(key)
        got = await controller.queue.get()
        await controller._process(got)
        controller.queue.done(got)
        when = controller.queue.scheduled(key)
        return None if when is None else when - loop.time()

    return asyncio.run(scenario())


def test_success_schedules_the_requested_requeue():
    async def reconcile(key):
        return Result(requeue_after=30)

    delay = run_one(Controller(WATCH, reconcile, workers=1))
    assert 29 < delay <= 30


def test_success_without_requeue_leaves_no_timer():
    async def reconcile(key):
        return Result()

    assert run_one(Controller(WATCH, reconcile, workers=1)) is None


def test_failures_back_off_exponentially_and_success_resets():
    outcomes = iter([ReconcileError("x"), ReconcileError("x"), ReconcileError("x"), None])

    async def reconcile(key):
        outcome = next(outcomes)
        if outcome is not None:
            raise outcome
        return Result(requeue_after=100)

    controller = Controller(WATCH, reconcile, workers=1)
    delays = [run_one(controller) for _ in range(4)]
    assert 0.4 < delays[0] <= 0.5
    assert 0.9 < delays[1] <= 1.0
    assert 1.9 < delays[2] <= 2.0
    assert 99 < delays[3] <= 100


def test_a_crash_in_the_reconciler_is_retried_like_a_failure():
    async def reconcile(key):
        raise RuntimeError("bug")

    assert 0.4 < run_one(Controller(WATCH, reconcile, workers=1)) <= 0.5


def test_a_terminal_error_is_not_retried_until_the_annotations_change():
    outcomes = iter([ReconcileError("x"), TerminalError("bad annotation"), Result()])

    async def reconcile(key):
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    async def scenario():
        c = Controller(WATCH, reconcile, workers=1)
        events = ForObject(c)
        key = ("ns", "a")
        events("ADDED", obj(annotations={"period": "soon"}))
        for _ in range(2):  # a retryable failure, then a terminal one
            await c._process(await c.queue.get())
            c.queue.done(key)
        assert c.queue.scheduled(key) is None, "no retry after a terminal error"
        assert c._backoff.failures(key) == 0
        events("MODIFIED", obj(annotations={"period": "soon"}, labels={"x": "y"}))
        assert len(c.queue) == 0, "other changes still follow the watch's predicates"
        events("MODIFIED", obj(annotations={"period": "5m"}))
        assert len(c.queue) == 1, "an annotation edit may fix the object: it runs again"
        await c._process(await c.queue.get())
        c.queue.done(key)
        events("MODIFIED", obj(annotations={"period": "6m"}))
        assert len(c.queue) == 0, "after a success, annotation edits are ignored again"

    asyncio.run(scenario())


def test_events_enqueue_on_create_and_spec_change_only():
    async def reconcile(key):
        return Result()

    async def scenario():
        c = Controller(WATCH, reconcile, workers=1)
        events = ForObject(c)
        events("ADDED", obj())  # the initial listing
        assert len(c.queue) == 1
        await c.queue.get()
        c.queue.done(("ns", "a"))
        events("MODIFIED", obj(status={"phase": "x"}))
        events("MODIFIED", obj(labels={"a": "b"}))
        assert len(c.queue) == 0, "status and label changes do not reconcile"
        events("MODIFIED", obj(generation=2))
        assert len(c.queue) == 1

    asyncio.run(scenario())


SETTLED = {"conditions": [{"type": "Successful", "status": "True", "observedGeneration": 1}]}


def test_the_listing_puts_settled_objects_behind_new_and_unobserved_ones():
    async def reconcile(key):
        return Result()

    async def scenario():
        c = Controller(WATCH, reconcile, workers=1, resync_rate=1000.0)
        events = ForObject(c)
        events("ADDED", obj("done", status=SETTLED))
        events("ADDED", obj("changed", generation=2, status=SETTLED))
        events("ADDED", obj("never-run"))
        events("ADDED", obj("created-now"))
        assert len(c.queue) == 4
        order = []
        for _ in range(4):
            order.append((await c.queue.get())[1])
            c.queue.done(("ns", order[-1]))
        assert order == ["changed", "never-run", "created-now", "done"]

    asyncio.run(scenario())


def test_a_settled_object_that_changes_while_it_waits_goes_first():
    async def reconcile(key):
        return Result()

    async def scenario():
        # One resync per 1000 s: the first goes at once, a second would wait.
        c = Controller(WATCH, reconcile, workers=1, resync_rate=0.001)
        events = ForObject(c)
        events("ADDED", obj("a", status=SETTLED))
        events("ADDED", obj("c", status=SETTLED))
        events("ADDED", obj("b"))
        events("MODIFIED", obj("a", generation=2, status=SETTLED))
        order = []
        while (key := c.queue.try_get()) is not None:
            order.append(key[1])
            c.queue.done(key)
        assert order == ["b", "a", "c"], "a left the resync lane, so c is the first resync"

    asyncio.run(scenario())


def test_a_delete_event_drops_the_timer_and_reconciles_once_more():
    async def reconcile(key):
        return Result()

    async def scenario():
        c = Controller(WATCH, reconcile, workers=1)
        events = ForObject(c)
        events("ADDED", obj())
        c.queue.schedule(("ns", "a"), 100)
        events("DELETED", obj())
        assert c.queue.scheduled(("ns", "a")) is None
        assert len(c.queue) == 1

    asyncio.run(scenario())


def test_the_worker_count_bounds_concurrency():
    running, peak = 0, 0

    async def reconcile(key):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return Result()

    async def scenario():
        c = Controller(WATCH, reconcile, workers=3)
        for i in range(10):
            c.queue.add(("ns", f"o{i}"))
        task = asyncio.create_task(c.run())
        while len(c.queue) or running:
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    assert peak == 3


def test_drain_lets_a_running_reconcile_finish_and_takes_no_new_work():
    finished = []

    async def reconcile(request):
        await asyncio.sleep(0.05)
        finished.append(request.key)
        return Result()

    async def scenario():
        c = Controller(WATCH, reconcile, workers=2)
        task = asyncio.create_task(c.run())
        c.queue.add(("ns", "running"))
        await asyncio.sleep(0.01)  # the first reconcile is under way
        await c.drain(timeout=5)
        c.queue.add(("ns", "too-late"))
        await asyncio.sleep(0.1)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    assert finished == [("ns", "running")]
