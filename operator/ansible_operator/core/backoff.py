"""Exponential backoff, the one implementation behind every retry of the operator.

The delay after the n-th failure in a row is ``base * 2**n``, capped, as client-go's
ItemExponentialFailureRateLimiter computes it. `ItemBackoff` counts failures per key (the
controller's reconciles); `Backoff` counts them for one retry loop (a dependent watch
reconnecting, the wait for the API server at start, a status write conflict). Nothing here sleeps
or reads a clock: the caller waits the delay it is given.
"""

from __future__ import annotations

from collections.abc import Hashable

# The reconcile backoff: controller-runtime's doubling and 1000 s cap, with a deliberate
# difference: a 0.5 s base instead of 5 ms, because upstream's base re-runs a failing playbook
# back-to-back (5, 10, 20, 40 ms, ...), each run costing seconds of CPU.
DEFAULT_BASE_DELAY = 0.5
DEFAULT_MAX_DELAY = 1000.0


def exponential_delay(failures: int, *, base: float, cap: float) -> float:
    """``base * 2**failures``, at most ``cap``: the wait after failure number ``failures + 1``."""
    if failures >= 1024:  # 2**1024 overflows a float; the cap was passed long ago
        return cap
    return min(base * 2.0**failures, cap)


def _check_delays(base: float, cap: float) -> None:
    if base <= 0 or cap <= 0:
        raise ValueError("backoff delays must be positive")


class Backoff:
    """The delays of one retry loop: `next_delay()` after each failure, `reset()` after a
    success."""

    def __init__(self, *, base: float, cap: float) -> None:
        _check_delays(base, cap)
        self.base = base
        self.cap = cap
        self.failures = 0

    def next_delay(self) -> float:
        delay = exponential_delay(self.failures, base=self.base, cap=self.cap)
        self.failures += 1
        return delay

    def reset(self) -> None:
        self.failures = 0


class ItemBackoff:
    """A `Backoff` per key, all with one base and cap: `failure(key)` records a failure and
    returns how long to wait before the retry; `forget(key)` (after a success) starts the key
    over."""

    def __init__(
        self, *, base_delay: float = DEFAULT_BASE_DELAY, max_delay: float = DEFAULT_MAX_DELAY
    ) -> None:
        _check_delays(base_delay, max_delay)
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._keys: dict[Hashable, Backoff] = {}

    def failure(self, key: Hashable) -> float:
        backoff = self._keys.get(key)
        if backoff is None:
            backoff = self._keys[key] = Backoff(base=self.base_delay, cap=self.max_delay)
        return backoff.next_delay()

    def forget(self, key: Hashable) -> None:
        self._keys.pop(key, None)

    def failures(self, key: Hashable) -> int:
        """How many failures in a row `key` has had (controller-runtime's NumRequeues)."""
        backoff = self._keys.get(key)
        return backoff.failures if backoff is not None else 0

    def __len__(self) -> int:
        return len(self._keys)
