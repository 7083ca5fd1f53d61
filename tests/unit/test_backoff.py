"""Backoff delays (per key, per retry loop), the periodic requeue, the per-CR annotations."""

from __future__ import annotations

import pytest

from ansible_operator.core.backoff import Backoff, ItemBackoff, exponential_delay
from ansible_operator.runtime.backoff import (
    MAX_RUNNER_ARTIFACTS_ANNOTATION,
    RECONCILE_PERIOD_ANNOTATION,
    VERBOSITY_ANNOTATION,
    max_runner_artifacts,
    requeue_delay,
    verbosity,
)

ARTIFACTS = "Invalid max runner artifact annotation: strconv.Atoi: parsing "
VERBOSITY = "Invalid ansible verbosity annotation: strconv.Atoi: parsing "


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


@pytest.mark.parametrize(
    ("annotations", "watch_period", "flag_period", "expected"),
    [
        # Flag only (default 10h).
        (None, None, 36000.0, (36000.0, None)),
        ({}, None, 36000.0, (36000.0, None)),
        ({"other": "x"}, None, 60.0, (60.0, None)),
        # The watch beats the flag; a watch period of 0/None means "use the flag".
        (None, 30.0, 36000.0, (30.0, None)),
        (None, 0.0, 36000.0, (36000.0, None)),
        # A negative watch period switches periodic requeue off (upstream's RequeueAfter <= 0).
        (None, -1.0, 36000.0, (None, None)),
        # A zero flag switches it off too.
        (None, None, 0.0, (None, None)),
        # The annotation beats both.
        ({RECONCILE_PERIOD_ANNOTATION: "5m"}, 30.0, 36000.0, (300.0, None)),
        ({RECONCILE_PERIOD_ANNOTATION: "1h30m"}, None, 60.0, (5400.0, None)),
        ({RECONCILE_PERIOD_ANNOTATION: "1.5s"}, None, 60.0, (1.5, None)),
        ({RECONCILE_PERIOD_ANNOTATION: "0s"}, 30.0, 36000.0, (None, None)),
        ({RECONCILE_PERIOD_ANNOTATION: "0"}, 30.0, 36000.0, (None, None)),
        ({RECONCILE_PERIOD_ANNOTATION: "-1m"}, 30.0, 36000.0, (None, None)),
        # A bad annotation: upstream's message, and the watch/flag period as the fallback.
        (
            {RECONCILE_PERIOD_ANNOTATION: "soon"},
            30.0,
            36000.0,
            (30.0, 'Unable to parse reconcile period annotation: time: invalid duration "soon"'),
        ),
        (
            {RECONCILE_PERIOD_ANNOTATION: "30"},
            None,
            36000.0,
            (
                36000.0,
                'Unable to parse reconcile period annotation: time: missing unit in duration "30"',
            ),
        ),
        (
            {RECONCILE_PERIOD_ANNOTATION: ""},
            None,
            36000.0,
            (36000.0, 'Unable to parse reconcile period annotation: time: invalid duration ""'),
        ),
        (
            {RECONCILE_PERIOD_ANNOTATION: "1d"},
            None,
            0.0,
            (
                None,
                "Unable to parse reconcile period annotation: "
                'time: unknown unit "d" in duration "1d"',
            ),
        ),
    ],
)
def test_requeue_delay(
    annotations: dict[str, str] | None,
    watch_period: float | None,
    flag_period: float,
    expected: tuple[float | None, str | None],
) -> None:
    assert requeue_delay(annotations, watch_period, flag_period) == expected


def test_requeue_delay_default_flag_is_ten_hours() -> None:
    assert requeue_delay(None, None) == (36000.0, None)


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (None, (20, None)),
        ({}, (20, None)),
        ({MAX_RUNNER_ARTIFACTS_ANNOTATION: "5"}, (5, None)),
        ({MAX_RUNNER_ARTIFACTS_ANNOTATION: "0"}, (0, None)),  # keep all
        ({MAX_RUNNER_ARTIFACTS_ANNOTATION: "+7"}, (7, None)),
        ({MAX_RUNNER_ARTIFACTS_ANNOTATION: "-1"}, (-1, None)),
        (
            {MAX_RUNNER_ARTIFACTS_ANNOTATION: "many"},
            (
                20,
                ARTIFACTS + '"many": invalid syntax',
            ),
        ),
        (
            {MAX_RUNNER_ARTIFACTS_ANNOTATION: " 5"},
            (
                20,
                ARTIFACTS + '" 5": invalid syntax',
            ),
        ),
        (
            {MAX_RUNNER_ARTIFACTS_ANNOTATION: "1_000"},
            (
                20,
                ARTIFACTS + '"1_000": invalid syntax',
            ),
        ),
        (
            {MAX_RUNNER_ARTIFACTS_ANNOTATION: "99999999999999999999"},
            (
                20,
                ARTIFACTS + '"99999999999999999999": value out of range',
            ),
        ),
    ],
)
def test_max_runner_artifacts(
    annotations: dict[str, str] | None, expected: tuple[int, str | None]
) -> None:
    assert max_runner_artifacts(annotations, 20) == expected


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (None, (2, None)),
        ({VERBOSITY_ANNOTATION: "0"}, (0, None)),
        ({VERBOSITY_ANNOTATION: "4"}, (4, None)),
        ({VERBOSITY_ANNOTATION: "7"}, (7, None)),
        ({VERBOSITY_ANNOTATION: "12"}, (7, "Ansible verbosity annotation 12 is above 7; using 7")),
        ({VERBOSITY_ANNOTATION: "-3"}, (0, "Ansible verbosity annotation -3 is below 0; using 0")),
        (
            {VERBOSITY_ANNOTATION: "high"},
            (
                2,
                VERBOSITY + '"high": invalid syntax',
            ),
        ),
        (
            {VERBOSITY_ANNOTATION: "2.0"},
            (
                2,
                VERBOSITY + '"2.0": invalid syntax',
            ),
        ),
    ],
)
def test_verbosity(annotations: dict[str, str] | None, expected: tuple[int, str | None]) -> None:
    assert verbosity(annotations, 2) == expected
