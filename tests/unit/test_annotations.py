"""The CR annotations upstream reads: parsed with Go's rules, bad values reported, not raised."""

from __future__ import annotations

import pytest

from ansible_operator.core.annotations import (
    HOLD_ANNOTATION,
    MAX_RUNNER_ARTIFACTS_ANNOTATION,
    RECONCILE_PERIOD_ANNOTATION,
    VERBOSITY_ANNOTATION,
    hold,
    log_verbosity,
    max_runner_artifacts,
    reconcile_period,
    verbosity,
)

ARTIFACTS = "Invalid max runner artifact annotation: strconv.Atoi: parsing "
VERBOSITY = "Invalid ansible verbosity annotation: strconv.Atoi: parsing "


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
def test_reconcile_period(
    annotations: dict[str, str] | None,
    watch_period: float | None,
    flag_period: float,
    expected: tuple[float | None, str | None],
) -> None:
    assert reconcile_period(annotations, watch_period, flag_period) == expected


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


@pytest.mark.parametrize(
    ("annotations", "environ_value", "expected"),
    [
        (None, None, 0),
        ({}, "3", 3),  # no annotation: ANSIBLE_VERBOSITY
        ({}, "loud", 0),
        ({VERBOSITY_ANNOTATION: "0"}, "3", 0),  # the annotation wins, even 0
        ({VERBOSITY_ANNOTATION: "4"}, None, 4),
        ({VERBOSITY_ANNOTATION: "high"}, "3", 0),  # present but bad: not the environment
    ],
)
def test_log_verbosity(
    annotations: dict[str, str] | None, environ_value: str | None, expected: int
) -> None:
    assert log_verbosity(annotations, environ_value) == expected


@pytest.mark.parametrize(
    ("annotations", "watch_hold", "expected"),
    [
        (None, False, (False, None)),
        (None, True, (True, None)),  # the watch's hold
        ({HOLD_ANNOTATION: "true"}, False, (True, None)),
        ({HOLD_ANNOTATION: "1"}, False, (True, None)),  # Go's ParseBool
        ({HOLD_ANNOTATION: "false"}, True, (False, None)),  # a CR released from its kind's hold
        (
            {HOLD_ANNOTATION: "please"},
            False,
            (
                True,
                'Invalid hold annotation (the CR is held): strconv.ParseBool: parsing "please": '
                "invalid syntax",
            ),
        ),  # a typo holds
    ],
)
def test_hold(
    annotations: dict[str, str] | None, watch_hold: bool, expected: tuple[bool, str | None]
) -> None:
    assert hold(annotations, watch_hold) == expected
