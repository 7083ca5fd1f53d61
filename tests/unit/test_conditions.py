"""Status conditions: formats, the SetCondition rules, and whole reconcile sequences."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from ansible_operator.core.conditions import (
    format_completion,
    format_transition_time,
    get_condition,
    is_rfc3339,
    mark_error,
    mark_failure,
    mark_held,
    mark_interrupted,
    mark_running,
    mark_success,
    parse_runner_time,
    settled,
    timeout_message,
)
from ansible_operator.core.limits import CONDITION_MESSAGE_BYTES

T0 = datetime(2026, 1, 2, 15, 4, 5, 123456, tzinfo=UTC)
T1 = T0 + timedelta(minutes=1)
T2 = T0 + timedelta(minutes=2)
T3 = T0 + timedelta(minutes=3)
S0, S1, S2, S3 = (format_transition_time(t) for t in (T0, T1, T2, T3))
RESULT = {
    "ok": 3,
    "changed": 1,
    "skipped": 0,
    "failures": 0,
    "completion": "2026-01-02T15:05:05+00:00",
}
BAD_RESULT = {
    "ok": 1,
    "changed": 0,
    "skipped": 0,
    "failures": 1,
    "completion": "2026-01-02T15:06:05+00:00",
}


def cond(
    ctype: str, status: str, reason: str, message: str, ltt: str, gen: int | None = 1, **extra: Any
) -> dict[str, Any]:
    c: dict[str, Any] = {
        "type": ctype,
        "status": status,
        "lastTransitionTime": ltt,
        "reason": reason,
        "message": message,
        **extra,
    }
    if gen is not None:
        c["observedGeneration"] = gen
    return c


def types(status: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["type"], c["status"]) for c in status["conditions"]]


# --- formats ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        (T0, "2026-01-02T15:04:05Z"),
        (datetime(2026, 1, 2, 15, 4, 5), "2026-01-02T15:04:05Z"),  # naive is UTC
        (
            datetime(2026, 1, 2, 17, 4, 5, tzinfo=timezone(timedelta(hours=2))),
            "2026-01-02T15:04:05Z",
        ),
    ],
)
def test_format_transition_time(moment: datetime, text: str) -> None:
    assert format_transition_time(moment) == text


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        (T0, "2026-01-02T15:04:05.123456+00:00"),
        (T0.replace(microsecond=120000), "2026-01-02T15:04:05.12+00:00"),
        (T0.replace(microsecond=1), "2026-01-02T15:04:05.000001+00:00"),
        (T0.replace(microsecond=0), "2026-01-02T15:04:05+00:00"),
        (
            datetime(2026, 1, 2, 10, 4, 5, 500000, tzinfo=timezone(timedelta(hours=-5))),
            "2026-01-02T15:04:05.5+00:00",
        ),
        (datetime(2026, 1, 2, 15, 4, 5, 500000), "2026-01-02T15:04:05.5+00:00"),
    ],
)
def test_format_completion(moment: datetime, text: str) -> None:
    assert format_completion(moment) == text


@pytest.mark.parametrize(
    ("created", "moment"),
    [
        ("2026-01-02T15:04:05.123456", T0),
        ("2026-01-02T15:04:05.123456Z", T0),
        ("2026-01-02T17:04:05.123456+02:00", T0),
        ("2026-01-02T15:04:05", T0.replace(microsecond=0)),
    ],
)
def test_parse_runner_time(created: str, moment: datetime) -> None:
    parsed = parse_runner_time(created)
    assert parsed == moment
    assert parsed.tzinfo is not None


def test_parse_runner_time_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        parse_runner_time("yesterday")


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("2026-01-02T15:04:05Z", True),
        ("2026-01-02T15:04:05.5Z", True),
        ("2026-01-02T15:04:05.123456789Z", True),
        ("2026-01-02T15:04:05+02:00", True),
        ("2026-01-02t15:04:05z", True),
        ("2026-01-02T15:04:05", False),
        ("2026-01-02", False),
        ("2026-13-02T15:04:05Z", False),
        ("2026-01-02 15:04:05Z", False),
        ("yesterday", False),
        ("", False),
        (12345, False),
        (None, False),
    ],
)
def test_is_rfc3339(value: Any, valid: bool) -> None:
    assert is_rfc3339(value) is valid


def succeeded(running_since: str, finished: str) -> dict[str, Any]:
    """The status after a successful run that started running at ``running_since``."""
    return {
        "conditions": [
            cond(
                "Running",
                "True",
                "Successful",
                "Awaiting next reconciliation",
                running_since,
                ansibleResult=RESULT,
            ),
            cond("Successful", "True", "Successful", "Last reconciliation succeeded", finished),
            cond("Failure", "False", "", "", finished),
        ]
    }


# --- sequences --------------------------------------------------------------------------------


def test_first_run_success() -> None:
    running = mark_running(None, now=T0, generation=1)
    assert running == {
        "conditions": [cond("Running", "True", "Running", "Running reconciliation", S0)]
    }

    done = mark_success(running, ansible_result=RESULT, now=T1, generation=1)
    # Running stays True (its transition time is kept); its reason changes so it is rewritten.
    assert done == succeeded(running_since=S0, finished=S1)


def test_steady_state_after_repeated_successes() -> None:
    status: dict[str, Any] | None = None
    for i, moment in enumerate((T0, T1, T2)):
        status = mark_running(status, now=moment, generation=1)
        status = mark_success(
            status, ansible_result=RESULT, now=moment + timedelta(seconds=30), generation=1
        )
        assert types(status) == [
            ("Running", "True"),
            ("Successful", "True"),
            ("Failure", "False"),
        ], i


def test_second_run_flips_successful_then_succeeds_again() -> None:
    first = mark_success(
        mark_running(None, now=T0, generation=1), ansible_result=RESULT, now=T1, generation=1
    )

    running = mark_running(first, now=T2, generation=2)
    assert running == {
        "conditions": [
            cond("Failure", "False", "", "", S1),
            # Flipped to False, reason and message kept; a fresh transition time (upstream keeps
            # the stale one) and the generation being worked on.
            cond("Successful", "False", "Successful", "Last reconciliation succeeded", S2, gen=2),
            cond("Running", "True", "Running", "Running reconciliation", S0, gen=2),
        ]
    }

    done = mark_success(running, ansible_result=RESULT, now=T3, generation=2)
    assert done == {
        "conditions": [
            cond(
                "Running",
                "True",
                "Successful",
                "Awaiting next reconciliation",
                S0,
                gen=2,
                ansibleResult=RESULT,
            ),
            cond("Successful", "True", "Successful", "Last reconciliation succeeded", S3, gen=2),
            cond("Failure", "False", "", "", S1, gen=2),
        ]
    }


def test_failure_after_success() -> None:
    first = mark_success(
        mark_running(None, now=T0, generation=1), ansible_result=RESULT, now=T1, generation=1
    )
    running = mark_running(first, now=T2, generation=1)
    failed = mark_failure(
        running,
        message="task a failed\ntask b failed",
        ansible_result=BAD_RESULT,
        now=T3,
        generation=1,
    )
    assert failed == {
        "conditions": [
            # Running flips to False keeping reason "Running" and its message, as upstream.
            cond("Running", "False", "Running", "Running reconciliation", S3),
            cond(
                "Failure",
                "True",
                "Failed",
                "task a failed\ntask b failed",
                S3,
                ansibleResult=BAD_RESULT,
            ),
            cond("Successful", "False", "", "", S2),
        ]
    }
    assert types(failed) == [("Running", "False"), ("Failure", "True"), ("Successful", "False")]


def test_first_run_failure() -> None:
    failed = mark_failure(
        mark_running(None, now=T0, generation=1),
        message="boom",
        ansible_result=None,
        now=T1,
        generation=1,
    )
    assert failed == {
        "conditions": [
            cond("Running", "False", "Running", "Running reconciliation", S1),
            cond("Failure", "True", "Failed", "boom", S1),
            cond("Successful", "False", "", "", S1),
        ]
    }


def test_a_failure_message_past_a_conditions_limit_is_cut_saying_so() -> None:
    dump = "debug1: " + "ssh chatter " * 4000  # 48 KiB of a verbose failure
    for status in (
        mark_failure(None, message=dump, ansible_result=None, now=T0, generation=1),
        mark_error(None, message=dump, now=T0, generation=1),
    ):
        message = get_condition(status, "Failure")["message"]  # type: ignore[index]
        assert len(message.encode()) <= CONDITION_MESSAGE_BYTES
        assert message.startswith("debug1: ssh chatter ")
        assert message.endswith(f" ... [cut: {len(dump) - message.index(' ... [cut')} more bytes]")


def test_recovery_after_failure() -> None:
    failed = mark_failure(
        mark_running(None, now=T0, generation=1),
        message="boom",
        ansible_result=None,
        now=T1,
        generation=1,
    )
    running = mark_running(failed, now=T2, generation=1)
    assert types(running) == [("Failure", "True"), ("Successful", "False"), ("Running", "True")]
    done = mark_success(running, ansible_result=RESULT, now=T3, generation=1)
    assert done == succeeded(running_since=S2, finished=S3)


def test_failure_is_always_rewritten() -> None:
    once = mark_failure(None, message="first", ansible_result=None, now=T0, generation=1)
    twice = mark_failure(once, message="second", ansible_result=BAD_RESULT, now=T1, generation=1)
    failure = get_condition(twice, "Failure")
    assert failure == cond("Failure", "True", "Failed", "second", S0, ansibleResult=BAD_RESULT)


def test_timeout_reason() -> None:
    status = mark_failure(
        None,
        message="run timed out after 10m0s",
        ansible_result=None,
        now=T0,
        generation=4,
        reason="Timeout",
    )
    assert get_condition(status, "Failure") == cond(
        "Failure", "True", "Timeout", "run timed out after 10m0s", S0, gen=4
    )


def test_timeout_message_says_it_will_be_retried() -> None:
    assert timeout_message("Ansible run timed out after 4s and was stopped") == (
        "Ansible run timed out after 4s and was stopped. It will be retried"
    )


def test_interrupted_after_success_is_not_a_failure() -> None:
    succeeded = mark_success(
        mark_running(None, now=T0, generation=1), ansible_result=RESULT, now=T1, generation=1
    )
    running = mark_running(succeeded, now=T2, generation=2)
    stopped = mark_interrupted(running, cause="the operator is shutting down", now=T3, generation=2)
    assert stopped == {
        "conditions": [
            cond("Failure", "False", "", "", S1),  # untouched: the role did not fail
            cond("Successful", "False", "Successful", "Last reconciliation succeeded", S2, gen=2),
            cond(
                "Running",
                "False",
                "Interrupted",
                "Reconciliation interrupted: the operator is shutting down. It will be retried",
                S3,
                gen=2,
            ),
        ]
    }


def test_interrupted_keeps_an_earlier_failure_and_its_generation() -> None:
    failed = mark_failure(None, message="boom", ansible_result=None, now=T0, generation=1)
    running = mark_running(failed, now=T1, generation=2)
    stopped = mark_interrupted(running, cause="x", now=T2, generation=2)
    assert get_condition(stopped, "Failure") == cond("Failure", "True", "Failed", "boom", S0)
    assert types(stopped) == [("Failure", "True"), ("Successful", "False"), ("Running", "False")]


def test_a_run_after_an_interruption_ends_in_the_steady_state() -> None:
    stopped = mark_interrupted(
        mark_running(None, now=T0, generation=1), cause="x", now=T1, generation=1
    )
    rerun = mark_running(stopped, now=T2, generation=1)
    running = get_condition(rerun, "Running")
    assert running == cond("Running", "True", "Running", "Running reconciliation", S2)
    done = mark_success(rerun, ansible_result=RESULT, now=T3, generation=1)
    assert types(done) == [("Running", "True"), ("Successful", "True"), ("Failure", "False")]


def test_same_status_and_reason_is_a_no_op() -> None:
    first = mark_running(None, now=T0, generation=1)
    again = mark_running(first, now=T1, generation=1)
    assert again == first


def test_new_generation_is_not_a_no_op_but_keeps_transition_time() -> None:
    first = mark_running(None, now=T0, generation=1)
    again = mark_running(first, now=T1, generation=2)
    assert again == {
        "conditions": [cond("Running", "True", "Running", "Running reconciliation", S0, gen=2)]
    }


def test_no_generation_means_no_observed_generation() -> None:
    status = mark_success(
        mark_running(None, now=T0, generation=None), ansible_result=None, now=T1, generation=None
    )
    assert all("observedGeneration" not in c for c in status["conditions"])
    assert "ansibleResult" not in status["conditions"][0]


@pytest.mark.parametrize(
    ("before", "after_types"),
    [
        (None, [("Failure", "True")]),
        ({}, [("Failure", "True")]),
        (
            "steady",
            [("Running", "False"), ("Successful", "False"), ("Failure", "True")],
        ),
    ],
)
def test_mark_error(before: Any, after_types: list[tuple[str, str]]) -> None:
    if before == "steady":
        before = mark_success(
            mark_running(None, now=T0, generation=1), ansible_result=RESULT, now=T1, generation=1
        )
    status = mark_error(
        before,
        message='Unable to parse reconcile period annotation: time: invalid duration "x"',
        now=T2,
        generation=1,
    )
    assert types(status) == after_types
    failure = get_condition(status, "Failure")
    assert failure == cond(
        "Failure",
        "True",
        "Failed",
        'Unable to parse reconcile period annotation: time: invalid duration "x"',
        S2,
    )


def test_mark_error_flips_keep_reason_and_message() -> None:
    steady = mark_success(
        mark_running(None, now=T0, generation=1), ansible_result=RESULT, now=T1, generation=1
    )
    status = mark_error(steady, message="Unable to run reconciliation", now=T2, generation=1)
    assert get_condition(status, "Running") == cond(
        "Running", "False", "Successful", "Awaiting next reconciliation", S2, ansibleResult=RESULT
    )
    assert get_condition(status, "Successful") == cond(
        "Successful", "False", "Successful", "Last reconciliation succeeded", S2
    )


# --- merging with what others wrote -----------------------------------------------------------


def test_user_status_keys_and_custom_conditions_are_kept() -> None:
    before = {
        "nodes": ["a", "b"],
        "observedGeneration": 7,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "AllGood",
                "message": "ready",
                "lastTransitionTime": "2025-05-05T05:05:05.5+02:00",
                "lastHeartbeatTime": "2025-05-05T05:05:06Z",
                "observedGeneration": 3,
            },
        ],
    }
    original: dict[str, Any] = copy.deepcopy(before)
    status = mark_success(
        mark_running(before, now=T0, generation=8), ansible_result=RESULT, now=T1, generation=8
    )
    assert before == original  # inputs are not modified
    assert status["nodes"] == ["a", "b"]
    assert status["observedGeneration"] == 7  # a user key; ours are per condition
    assert status["conditions"][0] == original["conditions"][0]
    assert types(status) == [
        ("Ready", "True"),
        ("Running", "True"),
        ("Successful", "True"),
        ("Failure", "False"),
    ]


def test_user_written_operator_conditions_are_overwritten() -> None:
    before = {
        "conditions": [
            {
                "type": "Successful",
                "status": "True",
                "reason": "Mine",
                "message": "user",
                "lastTransitionTime": S0,
            },
            {
                "type": "Failure",
                "status": "True",
                "reason": "Mine",
                "message": "user",
                "lastTransitionTime": S0,
            },
        ]
    }
    status = mark_success(
        mark_running(before, now=T1, generation=1), ansible_result=None, now=T2, generation=1
    )
    assert get_condition(status, "Successful") == cond(
        "Successful", "True", "Successful", "Last reconciliation succeeded", S2
    )
    assert get_condition(status, "Failure") == cond("Failure", "False", "", "", S2)


@pytest.mark.parametrize(
    ("conditions", "expected_first"),
    [
        # Invalid transition times are replaced by now; fields we do not own are kept.
        (
            [
                {
                    "type": "Ready",
                    "status": "False",
                    "lastTransitionTime": "yesterday",
                    "extra": {"a": 1},
                }
            ],
            {
                "type": "Ready",
                "status": "False",
                "lastTransitionTime": S1,
                "reason": "",
                "message": "",
                "extra": {"a": 1},
            },
        ),
        (
            [
                {
                    "type": "Ready",
                    "status": "True",
                    "lastTransitionTime": "2025-01-01T00:00:00.123+05:30",
                }
            ],
            {
                "type": "Ready",
                "status": "True",
                "lastTransitionTime": "2025-01-01T00:00:00.123+05:30",
                "reason": "",
                "message": "",
            },
        ),
        (
            [{"type": "Ready", "status": "True"}],
            {
                "type": "Ready",
                "status": "True",
                "lastTransitionTime": S1,
                "reason": "",
                "message": "",
            },
        ),
        # Non-mapping entries are dropped.
        (["junk", 3, None], None),
    ],
)
def test_normalisation_of_existing_conditions(
    conditions: list[Any], expected_first: dict[str, Any] | None
) -> None:
    status = mark_running({"conditions": conditions}, now=T1, generation=1)
    if expected_first is None:
        assert status["conditions"] == [
            cond("Running", "True", "Running", "Running reconciliation", S1)
        ]
    else:
        assert status["conditions"][0] == expected_first
        assert types(status)[1:] == [("Running", "True")]


def test_missing_type_and_status_default_to_running_true() -> None:
    # Upstream's defaults; the status stays True, so its transition time is kept.
    before = {"conditions": [{"reason": "r", "lastTransitionTime": S0}]}
    status = mark_running(before, now=T1, generation=1)
    assert status["conditions"] == [
        cond("Running", "True", "Running", "Running reconciliation", S0)
    ]


def test_missing_type_defaults_to_running_and_is_replaced() -> None:
    before = {"conditions": [{"status": "False", "reason": "Running", "lastTransitionTime": S0}]}
    status = mark_running(before, now=T1, generation=1)
    assert status["conditions"] == [
        cond("Running", "True", "Running", "Running reconciliation", S1)
    ]


@pytest.mark.parametrize(
    "status", [None, "text", [], {"conditions": "nope"}, {"conditions": {"a": 1}}]
)
def test_odd_status_shapes(status: Any) -> None:
    result = mark_running(status, now=T0, generation=1)
    assert types(result) == [("Running", "True")]


def test_duplicate_condition_types_collapse() -> None:
    before = {
        "conditions": [
            {"type": "Running", "status": "False", "reason": "x", "lastTransitionTime": S0},
            {"type": "Running", "status": "True", "reason": "y", "lastTransitionTime": S0},
        ]
    }
    status = mark_running(before, now=T1, generation=1)
    assert status["conditions"] == [
        cond("Running", "True", "Running", "Running reconciliation", S1)
    ]


@pytest.mark.parametrize(
    ("status", "ctype", "found"),
    [
        ({"conditions": [{"type": "A", "status": "True"}]}, "A", {"type": "A", "status": "True"}),
        ({"conditions": [{"type": "A"}]}, "B", None),
        ({"conditions": ["x", {"type": "B"}]}, "B", {"type": "B"}),
        ({}, "A", None),
        (None, "A", None),
        ({"conditions": "x"}, "A", None),
    ],
)
def test_get_condition(status: Any, ctype: str, found: dict[str, Any] | None) -> None:
    assert get_condition(status, ctype) == found


def _cr(generation: Any, *conditions: dict[str, Any]) -> dict[str, Any]:
    meta = {} if generation is None else {"generation": generation}
    return {"metadata": meta, "status": {"conditions": list(conditions)}}


_OK = {"type": "Successful", "status": "True"}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (_cr(3, {**_OK, "observedGeneration": 3}), True),
        (_cr(3, {"type": "Running", "status": "True"}, {**_OK, "observedGeneration": 3}), True),
        (_cr(4, {**_OK, "observedGeneration": 3}), False),  # changed since
        (_cr(3, {**_OK}), False),  # no generation recorded (upstream's status)
        (_cr(3, {**_OK, "status": "False", "observedGeneration": 3}), False),
        (_cr(3, {"type": "Failure", "status": "True", "observedGeneration": 3}), False),
        (_cr(None, {**_OK, "observedGeneration": 3}), False),
        ({"metadata": {"generation": 1}}, False),  # never reconciled
        ({"metadata": {"generation": 1}, "status": {"conditions": "x"}}, False),
        ({"metadata": {"generation": 1}, "status": "x"}, False),
    ],
)
def test_settled_means_successful_at_the_current_generation(
    obj: dict[str, Any], expected: bool
) -> None:
    assert settled(obj) is expected


def test_a_success_written_here_is_settled_until_the_generation_moves() -> None:
    status = mark_success(None, ansible_result=None, now=T0, generation=2)
    assert settled({"metadata": {"generation": 2}, "status": status})
    assert not settled({"metadata": {"generation": 3}, "status": status})


def test_held_after_success_flips_successful_only_when_something_would_change() -> None:
    succeeded = mark_success(None, ansible_result=RESULT, now=T0, generation=1)
    calm = mark_held(succeeded, message="nothing would change", pending=False, now=T1, generation=1)
    assert get_condition(calm, "Successful") == cond(
        "Successful", "True", "Successful", "Last reconciliation succeeded", S0
    )
    assert get_condition(calm, "Running") == cond(
        "Running", "False", "Held", "nothing would change", S1
    )
    pending = mark_held(succeeded, message="1 change", pending=True, now=T1, generation=1)
    assert get_condition(pending, "Successful")["status"] == "False"


def test_a_held_cr_s_message_follows_what_is_pending_at_one_generation() -> None:
    first = mark_held(None, message="1 change", pending=True, now=T0, generation=1)
    again = mark_held(first, message="1 change", pending=True, now=T1, generation=1)
    assert again == first  # nothing new: no write
    more = mark_held(first, message="2 changes", pending=True, now=T2, generation=1)
    assert get_condition(more, "Running") == cond("Running", "False", "Held", "2 changes", S0)
