"""Backoff delays, with explicit numbers."""

from __future__ import annotations

import pytest

from ansible_operator.runtime.backoff import ItemBackoff


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
