"""Task results taken as they arrive: the strategy's wait for results sleeps until one does."""

from __future__ import annotations

import threading
import time

import pytest

from ansible_operator.runner.warm.patches import result_wait


class SpiedEvent(threading.Event):
    """An event that says when someone waits on it and what the wait returned."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()
        self.returned: list[bool] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        woken = super().wait(timeout)
        self.returned.append(woken)
        return woken


@pytest.fixture
def results(monkeypatch):
    """The queue of results this thread's wait is for; the periodic check is 30 s away."""
    monkeypatch.setattr(result_wait, "WORKER_CHECK", 30.0)
    queue = result_wait._Arrivals(result_wait.deque())
    queue.arrived = SpiedEvent()
    result_wait._waiting.results = queue
    yield queue
    result_wait._waiting.results = None


def test_the_wait_ends_when_a_result_arrives(results):
    def results_thread() -> None:  # as Ansible's: appends a result while the strategy waits
        assert results.arrived.waiting.wait(60)
        results.append("result")

    threading.Thread(target=results_thread, daemon=True).start()
    result_wait._StrategyClock.sleep(0.001)
    assert results.arrived.returned == [True]  # woken by the result, not by the 30 s check
    assert not results.arrived.is_set()  # cleared for the next wait
    assert list(results) == ["result"]


def test_a_result_queued_before_the_wait_does_not_wait(results):
    results.append("result")
    results.arrived.clear()  # as after an earlier wait whose pass did not take it yet
    result_wait._StrategyClock.sleep(0.001)
    assert results.arrived.returned == []


def test_other_sleeps_of_the_strategy_are_time_sleep(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    result_wait._waiting.results = None
    result_wait._StrategyClock.sleep(0.0001)
    assert slept == [0.0001]
    assert result_wait._StrategyClock().monotonic is time.monotonic
