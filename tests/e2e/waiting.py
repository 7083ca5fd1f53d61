"""Waiting for the cluster to reach a state: generous deadlines, never an assertion on time."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until[T](
    probe: Callable[[], T], *, what: str, timeout: float = 120, every: float = 0.5
) -> T:
    """Call ``probe`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}; last value: {last!r}")
