"""Task results taken as they arrive, instead of by polling every millisecond.

Ansible's strategy waits for its workers by polling: it takes what its results thread has queued,
checks that no worker died, sleeps `internal_poll_interval` (1 ms by default), and again: about
900 wake-ups for each second a task runs (measured here), each a context switch and a pass over
the workers, on a machine whose cores the runs share. In a warm run, the results thread's queue
says when a result arrives and the wait sleeps until one does or until WORKER_CHECK
seconds (at least the poll interval) have passed, then goes on as Ansible's does: so a worker
that dies without a result is still found, within WORKER_CHECK, and a stopped run still stops.
Only that wait changes; every other sleep of the strategy sleeps as before.

`install()` patches the strategy base class, in the process of a warm run only.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

WORKER_CHECK = 0.05
"""Seconds between the wait's checks for a dead worker or a stopped run while no result comes."""

_waiting = threading.local()  # .results: the _Arrivals of the strategy waiting in this thread


class _Arrivals(deque[Any]):
    """A strategy's queue of results, which says when one is appended."""

    def __init__(self, queued: deque[Any]) -> None:
        super().__init__(queued)
        self.arrived = threading.Event()

    def append(self, item: Any) -> None:
        super().append(item)
        self.arrived.set()


class _StrategyClock:
    """The `time` of Ansible's strategy module: its sleep inside a wait for results returns when
    a result arrives; any other sleep is time.sleep."""

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    @staticmethod
    def sleep(seconds: float) -> None:
        results = getattr(_waiting, "results", None)
        if results is None:
            time.sleep(seconds)
            return
        if not results:
            results.arrived.wait(max(seconds, WORKER_CHECK))
        # Cleared before the caller takes the queue: what arrives from now on sets it again.
        results.arrived.clear()


def install() -> None:
    from ansible.plugins import strategy

    base = strategy.StrategyBase
    if isinstance(strategy.time, _StrategyClock):
        return
    builtin_init, builtin_wait = base.__init__, base._wait_on_pending_results

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        builtin_init(self, *args, **kwargs)
        self._results = _Arrivals(self._results)

    def _wait_on_pending_results(self: Any, iterator: Any) -> Any:
        outer = getattr(_waiting, "results", None)
        _waiting.results = self._results if isinstance(self._results, _Arrivals) else None
        try:
            return builtin_wait(self, iterator)
        finally:
            _waiting.results = outer

    base.__init__ = __init__
    base._wait_on_pending_results = _wait_on_pending_results
    strategy.time = _StrategyClock()
