"""The work queue's guarantees: one queued copy per key, never two workers on one key, one timer."""

from __future__ import annotations

import asyncio

import pytest

from ansible_operator.runtime.control.workqueue import ShutDown, WorkQueue


def run(coro):
    return asyncio.run(coro)


def test_a_key_is_queued_once_however_many_adds():
    async def scenario():
        q: WorkQueue[str] = WorkQueue()
        for _ in range(5):
            q.add("a")
        q.add("b")
        assert len(q) == 2
        assert [await q.get(), await q.get()] == ["a", "b"]
        assert len(q) == 0

    run(scenario())


def test_an_add_during_processing_requeues_after_done_not_before():
    async def scenario():
        q: WorkQueue[str] = WorkQueue()
        q.add("a")
        key = await q.get()
        q.add("a")  # an event while the worker holds the key
        assert len(q) == 0, "a key being processed must not be handed to a second worker"
        q.done(key)
        assert len(q) == 1
        assert await q.get() == "a"
        q.done("a")
        assert len(q) == 0

    run(scenario())


def test_schedule_replaces_the_previous_timer():
    async def scenario():
        q: WorkQueue[str] = WorkQueue()
        q.schedule("a", 100)
        first = q.scheduled("a")
        q.schedule("a", 0.01)
        second = q.scheduled("a")
        assert first is not None and second is not None and second < first
        assert await asyncio.wait_for(q.get(), 5) == "a"
        assert q.scheduled("a") is None

    run(scenario())


def test_schedule_zero_adds_now_and_cancel_drops_the_timer():
    async def scenario():
        q: WorkQueue[str] = WorkQueue()
        q.schedule("now", 0)
        assert len(q) == 1
        q.schedule("later", 0.01)
        q.cancel("later")
        await asyncio.sleep(0.05)
        assert len(q) == 1 and q.scheduled("later") is None

    run(scenario())


def test_shutdown_stops_adds_timers_and_gets():
    async def scenario():
        q: WorkQueue[str] = WorkQueue()
        q.schedule("a", 0.01)
        q.shutdown()
        q.add("b")
        await asyncio.sleep(0.05)
        assert len(q) == 0
        with pytest.raises(ShutDown):
            await q.get()

    run(scenario())


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def drain_now(q: WorkQueue[str]) -> list[str]:
    """Every key the queue hands out at this instant (each marked done at once)."""
    taken = []
    while (key := q.try_get()) is not None:
        q.done(key)
        taken.append(key)
    return taken


def test_asked_for_keys_go_before_resyncs_whatever_the_order_of_arrival():
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(resync_rate=1.0, clock=clock)
    for name in ("old-1", "old-2", "old-3"):
        q.add_resync(name)
    q.add("new-1")
    q.add("new-2")
    assert len(q) == 5
    assert drain_now(q) == ["new-1", "new-2", "old-1"]  # then the rate holds the rest back
    assert len(q) == 2


def test_resyncs_are_handed_out_at_the_rate_and_all_of_them_eventually():
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(resync_rate=2.0, clock=clock)
    for i in range(5):
        q.add_resync(f"old-{i}")
    taken = drain_now(q)
    for _ in range(8):
        clock.now += 0.25  # half an interval at 2 runs/s
        taken += drain_now(q)
    # t=0: one; then one per 0.5 s: at 0.5, 1.0, 1.5 and 2.0
    assert taken == [f"old-{i}" for i in range(5)]
    q.add_resync("again")
    clock.now += 0.25
    assert drain_now(q) == [], "the next slot is 0.5 s after the last one"
    clock.now += 0.25
    assert drain_now(q) == ["again"]


def test_an_idle_spell_does_not_save_up_a_burst_of_resyncs():
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(resync_rate=1.0, clock=clock)
    q.add_resync("a")
    assert drain_now(q) == ["a"]
    clock.now += 60
    for name in ("b", "c", "d"):
        q.add_resync(name)
    assert drain_now(q) == ["b"]
    clock.now += 1
    assert drain_now(q) == ["c"]


def test_a_new_key_arriving_mid_backlog_is_next():
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(resync_rate=1.0, clock=clock)
    for i in range(3):
        q.add_resync(f"old-{i}")
    assert drain_now(q) == ["old-0"]
    clock.now += 0.5
    q.add("new")
    assert drain_now(q) == ["new"], "asked-for work does not wait for the resync rate"
    clock.now += 0.5
    assert drain_now(q) == ["old-1"]


def test_an_add_promotes_a_waiting_resync_and_a_resync_never_demotes():
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(resync_rate=1.0, clock=clock)
    q.add_resync("x")
    q.add_resync("y")
    q.add("y")  # its spec changed while it waited for a resync
    q.add("z")
    q.add_resync("z")  # already asked for: stays in the fast lane
    assert len(q) == 3
    assert drain_now(q) == ["y", "z", "x"]


def test_a_resync_of_a_running_key_is_dropped_but_an_add_is_kept():
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(resync_rate=1.0, clock=clock)
    q.add("a")
    assert q.try_get() == "a"
    q.add_resync("a")  # the running reconcile re-reads the object anyway
    q.done("a")
    assert len(q) == 0
    q.add("b")
    assert q.try_get() == "b"
    q.add("b")
    q.done("b")
    assert q.try_get() == "b"


def test_without_a_rate_resyncs_still_wait_for_asked_for_keys():
    q: WorkQueue[str] = WorkQueue(clock=FakeClock())
    q.add_resync("old")
    q.add("new")
    assert drain_now(q) == ["new", "old"]


def test_get_waits_for_an_add_and_wakes_at_once():
    async def scenario():
        q: WorkQueue[str] = WorkQueue(resync_rate=0.001)
        q.add_resync("old")
        assert await q.get() == "old"
        q.done("old")
        q.add_resync("older")  # not due for 1000 s
        waiter = asyncio.create_task(q.get())
        await asyncio.sleep(0)
        assert not waiter.done()
        q.add("new")
        assert await asyncio.wait_for(waiter, 5) == "new"

    run(scenario())


def test_a_rate_that_is_not_positive_is_refused():
    for rate in (0.0, -1.0):
        with pytest.raises(ValueError):
            WorkQueue(resync_rate=rate)
