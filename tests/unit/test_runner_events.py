"""runner.events: from job events to a run's outcome, with events shaped like ansible-runner's."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_operator.runner.events import (
    DEFAULT_FAILURE_MESSAGE,
    MISSING_STATS_MESSAGE,
    AnsibleResult,
    EventSummary,
    FailedTask,
    failure_message,
    summarize,
)


def ev(kind: str, **data: Any) -> dict[str, Any]:
    return {"event": kind, "counter": 0, "stdout": data.pop("stdout", ""), "event_data": data}


def failed(task: str, msg: Any = "boom", host: str = "localhost", **data: Any) -> dict[str, Any]:
    res = {} if msg is None else {"msg": msg}
    return ev("runner_on_failed", task=task, host=host, res=res, task_path=f"/p.yml:{task}", **data)


def unreachable(task: str, host: str) -> dict[str, Any]:
    return ev("runner_on_unreachable", task=task, host=host, res={"msg": f"{host} is down"})


def stats(**counters: dict[str, int]) -> dict[str, Any]:
    event = ev("playbook_on_stats", stdout="PLAY RECAP ...", **counters)
    event["created"] = "2026-01-02T03:04:05.123456+00:00"
    return event


def requeue(period: Any, action: str = "operator_sdk.util.requeue_after", **data: Any) -> dict:
    return ev("runner_on_ok", task="requeue", task_action=action, res={"period": period}, **data)


def test_success_sums_counts_over_every_host() -> None:
    outcome = summarize(
        [
            ev("runner_on_ok", task="t", host="a"),
            stats(
                ok={"a": 3, "b": 2},
                changed={"a": 1, "b": 1},
                skipped={"b": 4},
                failures={},
                dark={},
                artifact_data={"x": 1},
            ),
        ]
    )
    assert outcome.ok and outcome.stats_received and outcome.failures == []
    assert outcome.ansible_result == AnsibleResult(
        ok=5, changed=2, skipped=4, failures=0, completion="2026-01-02T03:04:05.123456+00:00"
    )
    assert outcome.stats["b"] == {
        "ok": 2,
        "changed": 1,
        "failures": 0,
        "dark": 0,
        "ignored": 0,
        "rescued": 0,
        "processed": 0,
        "skipped": 4,
    }
    assert outcome.artifact_data == {"x": 1}
    assert outcome.stats_stdout == "PLAY RECAP ..."


def test_failed_task_is_reported_with_its_location() -> None:
    outcome = summarize(
        [failed("create thing", "quota exceeded"), stats(failures={"localhost": 1})]
    )
    assert not outcome.ok
    assert outcome.failures == [
        FailedTask("create thing", "quota exceeded", "localhost", "/p.yml:create thing")
    ]
    assert outcome.ansible_result.failures == 1


@pytest.mark.parametrize(
    ("res", "message"),
    [
        ({"msg": "text"}, "text"),
        ({"msg": ["not", "a", "string"]}, DEFAULT_FAILURE_MESSAGE),
        ({"reason": "Could not find or access 'x.yml'"}, "Could not find or access 'x.yml'"),
        ({"msg": 3, "reason": "the reason"}, "the reason"),
        ({}, DEFAULT_FAILURE_MESSAGE),
        ("not a mapping", DEFAULT_FAILURE_MESSAGE),
    ],
)
def test_failure_message(res: Any, message: str) -> None:
    assert failure_message(ev("runner_on_failed", res=res)) == message


def test_ignored_failure_is_not_a_failure() -> None:
    outcome = summarize(
        [failed("t", ignore_errors=True), stats(ok={"localhost": 1}, ignored={"localhost": 1})]
    )
    assert outcome.ok and outcome.failures == []


def test_rescued_failure_is_not_a_failure() -> None:
    outcome = summarize([failed("t"), stats(rescued={"localhost": 1}, failures={})])
    assert outcome.ok and outcome.failures == []


def test_rescued_then_real_failure_keeps_the_last_one() -> None:
    outcome = summarize(
        [
            failed("first", "rescued one"),
            failed("second", "real one"),
            stats(rescued={"localhost": 1}, failures={"localhost": 1}),
        ]
    )
    assert outcome.failure_messages == ["real one"]


def test_rescue_is_counted_per_host() -> None:
    outcome = summarize(
        [
            failed("t", "a failed", host="a"),
            failed("t", "b failed", host="b"),
            stats(rescued={"a": 1}, failures={"b": 1}),
        ]
    )
    assert [(f.host, f.message) for f in outcome.failures] == [("b", "b failed")]


def test_unreachable_host_is_a_failure() -> None:
    outcome = summarize(
        [
            ev("runner_on_ok", task="ping", host="localhost"),
            unreachable("ping", "db"),
            stats(ok={"localhost": 1}, dark={"db": 1}),
        ]
    )
    assert not outcome.ok
    assert outcome.failures == [FailedTask("ping", "db is down", "db", "")]
    assert outcome.ansible_result.failures == 1


def test_ignored_unreachable_is_not_a_failure() -> None:
    # ignore_unreachable: Ansible counts it ok+ignored, not dark, but still sends the event.
    outcome = summarize([unreachable("ping", "db"), stats(ok={"db": 1}, ignored={"db": 1})])
    assert outcome.ok


def test_stats_counting_more_failures_than_events_never_reads_ok() -> None:
    outcome = summarize([stats(failures={"localhost": 1})])
    assert not outcome.ok
    assert outcome.failures == [FailedTask("", DEFAULT_FAILURE_MESSAGE, "localhost")]


def test_missing_stats_is_a_failure_with_the_output_tail() -> None:
    outcome = summarize(
        [failed("t", ignore_errors=True)], stdout_tail="\x1b[0;31m[ERROR]: bad\x1b[0m\n"
    )
    assert not outcome.ok and not outcome.stats_received
    assert outcome.failure_messages == [f"{MISSING_STATS_MESSAGE}\n[ERROR]: bad"]
    assert outcome.ansible_result == AnsibleResult()


def test_missing_stats_counts_every_failure_seen() -> None:
    outcome = summarize([failed("t", "maybe rescued"), unreachable("p", "db")])
    assert outcome.failure_messages == ["maybe rescued", "db is down", MISSING_STATS_MESSAGE]


def test_abort_reason_replaces_the_missing_stats_message() -> None:
    outcome = summarize([ev("runner_on_ok", task="t")], abort_reason="timed out after 5s")
    assert not outcome.ok
    assert outcome.failure_messages == ["timed out after 5s"]


def test_abort_reason_makes_even_a_complete_run_fail() -> None:
    outcome = summarize([stats(ok={"localhost": 1})], abort_reason="timed out after 5s")
    assert not outcome.ok and outcome.stats_received


@pytest.mark.parametrize(
    ("event", "seconds"),
    [
        (requeue("30s"), 30.0),
        (requeue("1h2m", action="requeue_after"), 3720.0),
        (
            requeue(
                "500ms", action="requeue_after", resolved_action="operator_sdk.util.requeue_after"
            ),
            0.5,
        ),
        (
            requeue("2m", action="my_alias", resolved_action="operator_sdk.util.requeue_after"),
            120.0,
        ),
        (requeue("0s"), 0.0),
    ],
)
def test_requeue_after_is_read_from_the_ok_event(event: dict[str, Any], seconds: float) -> None:
    outcome = summarize([event, stats(ok={"localhost": 1})])
    assert outcome.ok and outcome.requeue_after == seconds


def test_requeue_after_does_not_stop_processing() -> None:
    outcome = summarize([requeue("10s"), failed("later"), stats(failures={"localhost": 1})])
    assert outcome.requeue_after == 10.0
    assert outcome.failure_messages == ["boom"]


def test_first_requeue_after_wins() -> None:
    outcome = summarize([requeue("10s"), requeue("20s"), stats()])
    assert outcome.requeue_after == 10.0


def test_failed_or_other_modules_do_not_requeue() -> None:
    events = [
        ev(
            "runner_on_failed",
            task="r",
            task_action="requeue_after",
            res={"period": "5s"},
            ignore_errors=True,
        ),
        ev("runner_on_ok", task="d", task_action="debug", res={"period": "5s"}),
        stats(),
    ]
    assert summarize(events).requeue_after is None


@pytest.mark.parametrize("period", ["soon", "", None])
def test_unusable_requeue_period_is_a_warning(period: Any) -> None:
    outcome = summarize([requeue(period), stats()])
    assert outcome.ok and outcome.requeue_after is None
    [warning] = outcome.warnings
    assert "requeue_after task 'requeue'" in warning


def test_last_stats_event_wins_and_incremental_feed_equals_summarize() -> None:
    events = [stats(ok={"a": 1}), failed("t", host="a"), stats(failures={"a": 1})]
    summary = EventSummary()
    for event in events:
        summary.feed(event)
    assert summary.outcome() == summarize(events)
    assert summarize(events).failure_messages == ["boom"]
