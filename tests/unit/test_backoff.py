"""Backoff delays per key and per retry loop, with explicit numbers."""

from __future__ import annotations

import pytest

from ansible_operator.core.backoff import Backoff, ItemBackoff, exponential_delay


def test_default_sequence() -> None:
    backoff = ItemBackoff()
    delays = [backoff.failure("ns/a") for _ in range(14)]
    assert delays == [
        0.5,
        1.0,
        2.0,
        4.0,
        8.0,
        16.0,
        32.0,
        64.0,
        128.0,
        256.0,
        512.0,
        1000.0,
        1000.0,
        1000.0,
    ]
    assert backoff.failures("ns/a") == 14


def test_keys_are_independent_and_forget_resets() -> None:
    backoff = ItemBackoff()
    assert [backoff.failure("a") for _ in range(3)] == [0.5, 1.0, 2.0]
    assert backoff.failure("b") == 0.5
    assert backoff.failure("a") == 4.0
    assert len(backoff) == 2
    backoff.forget("a")
    assert backoff.failures("a") == 0
    assert backoff.failure("a") == 0.5
    assert backoff.failure("b") == 1.0
    backoff.forget("never-seen")  # no error
    assert len(backoff) == 2


@pytest.mark.parametrize(
    ("base", "cap", "expected"),
    [
        (0.005, 1000.0, [0.005, 0.01, 0.02, 0.04, 0.08]),  # upstream's numbers
        (1.0, 5.0, [1.0, 2.0, 4.0, 5.0, 5.0]),
        (2.0, 1.0, [1.0, 1.0, 1.0, 1.0, 1.0]),
    ],
)
def test_custom_base_and_cap(base: float, cap: float, expected: list[float]) -> None:
    backoff = ItemBackoff(base_delay=base, max_delay=cap)
    assert [backoff.failure(("ns", "name")) for _ in range(5)] == pytest.approx(expected)


def test_many_failures_stay_at_cap() -> None:
    backoff = ItemBackoff()
    for _ in range(2000):
        delay = backoff.failure("k")
    assert delay == 1000.0


@pytest.mark.parametrize(("base", "cap"), [(0.0, 1.0), (-1.0, 1.0), (1.0, 0.0)])
def test_invalid_delays(base: float, cap: float) -> None:
    with pytest.raises(ValueError):
        ItemBackoff(base_delay=base, max_delay=cap)
    with pytest.raises(ValueError):
        Backoff(base=base, cap=cap)


@pytest.mark.parametrize(
    ("failures", "base", "cap", "delay"),
    [
        (0, 1.0, 30.0, 1.0),
        (4, 1.0, 30.0, 16.0),
        (5, 1.0, 30.0, 30.0),
        (3, 0.05, 1.0, 0.4),
        (5, 0.05, 1.0, 1.0),
        (0, 1.0, 0.01, 0.01),  # a cap below the base caps the first delay too
        (1023, 1.0, 30.0, 30.0),
        (5000, 1.0, 30.0, 30.0),  # no float overflow
    ],
)
def test_exponential_delay(failures: int, base: float, cap: float, delay: float) -> None:
    assert exponential_delay(failures, base=base, cap=cap) == pytest.approx(delay)


def test_retry_loop_backoff_doubles_and_resets() -> None:
    backoff = Backoff(base=1.0, cap=30.0)
    assert [backoff.next_delay() for _ in range(7)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert backoff.failures == 7
    backoff.reset()
    assert backoff.failures == 0
    assert [backoff.next_delay() for _ in range(2)] == [1.0, 2.0]
