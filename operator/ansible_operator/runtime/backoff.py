"""When to retry a failed reconcile: per-key exponential backoff.

`ItemBackoff` is controller-runtime's per-item exponential limiter (doubling, capped at 1000 s)
with a deliberate difference: a 0.5 s base instead of 5 ms, because upstream's base re-runs a
failing playbook back-to-back (5, 10, 20, 40 ms, ...), each run costing seconds of CPU. Nothing
here reads a clock.
"""

from __future__ import annotations

from collections.abc import Hashable

DEFAULT_BASE_DELAY = 0.5
DEFAULT_MAX_DELAY = 1000.0


class ItemBackoff:
    """Exponential backoff per key: `base * 2**(failures so far)`, capped at `max_delay`.

    `failure(key)` records a failure and returns how long to wait before the retry;
    `forget(key)` (after a success) starts the key over.
    """

    def __init__(
        self, *, base_delay: float = DEFAULT_BASE_DELAY, max_delay: float = DEFAULT_MAX_DELAY
    ) -> None:
        if base_delay <= 0 or max_delay <= 0:
            raise ValueError("backoff delays must be positive")
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def failure(self, key: Hashable) -> float:
        exponent = self._failures.get(key, 0)
        self._failures[key] = exponent + 1
        if exponent >= 1024:  # 2**1024 overflows a float; the cap was passed long ago
            return self.max_delay
        return min(self.base_delay * 2.0**exponent, self.max_delay)

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    def failures(self, key: Hashable) -> int:
        """How many failures in a row `key` has had (controller-runtime's NumRequeues)."""
        return self._failures.get(key, 0)

    def __len__(self) -> int:
        return len(self._failures)
