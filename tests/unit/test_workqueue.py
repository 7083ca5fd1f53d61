"""The work queue's guarantees: one queued copy per key, never two workers on one key, one timer."""

from __future__ import annotations

import asyncio

import pytest

from ansible_operator.runtime.workqueue import ShutDown, WorkQueue


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
