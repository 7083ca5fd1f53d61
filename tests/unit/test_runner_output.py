"""What of a run's output may be shown: a no_log task's display events never are."""

from __future__ import annotations

from typing import Any

from ansible_operator.runner.events import MISSING_STATS_MESSAGE, summarize
from ansible_operator.runner.output import NoLogOutput, censored, strip_ansi, without_lines

CENSORED = {"censored": "the output has been hidden due to the fact that 'no_log: true' was..."}


def event(kind: str, task: str | None = None, stdout: str = "", **data: Any) -> dict[str, Any]:
    event_data = {"task_uuid": task, **data} if task else data
    return {"event": kind, "stdout": stdout, "event_data": event_data}


def shown(events: list[dict[str, Any]]) -> tuple[list[str], NoLogOutput]:
    output = NoLogOutput(lines=True)
    return [e["stdout"] or e["event"] for ev in events for e in output.feed(ev)], output


def test_a_tasks_display_waits_for_its_result_and_is_shown_when_it_is_not_censored() -> None:
    said, _ = shown(
        [
            event("playbook_on_task_start", "t1", "TASK [a]"),
            event("verbose", "t1", "<localhost> EXEC echo hello"),
            event("runner_on_ok", "t1", "ok: [localhost]", res={"msg": "hello"}),
        ]
    )
    assert said == ["TASK [a]", "<localhost> EXEC echo hello", "ok: [localhost]"]


def test_a_no_log_tasks_display_and_result_output_are_dropped() -> None:
    said, output = shown(
        [
            event("playbook_on_task_start", "t1", "TASK [a]"),
            event("verbose", "t1", "<localhost> EXEC echo s3cret"),
            event("warning", "t1", "[WARNING]: s3cret"),
            event("runner_on_ok", "t1", "ok: [one]", res=CENSORED),
            event("verbose", "t1", "<two> EXEC s3cret"),
            event("runner_on_failed", "t1", "[ERROR]: Action failed: s3cret", res=CENSORED),
            event("verbose", None, "a line of no task"),
            event("playbook_on_stats", None, "PLAY RECAP"),
        ]
    )
    assert said == [
        "TASK [a]",
        "runner_on_ok",
        "runner_on_failed",
        "a line of no task",
        "PLAY RECAP",
    ]
    stdout = "TASK [a]\n<localhost> EXEC echo s3cret\n  [WARNING]: s3cret\nok: [one]\n"
    stdout += "<two> EXEC s3cret\nPLAY RECAP"
    assert without_lines(stdout, output.hidden_lines()) == "TASK [a]\nPLAY RECAP"
    assert "s3cret" not in repr(output.hidden_lines())


def test_a_dump_keeps_the_lines_that_shown_events_have_too() -> None:
    _, output = shown(
        [
            event(
                "runner_on_ok", "t1", 'ok: [localhost] => {\n    "msg": "s3cret"\n}', res=CENSORED
            ),
            event("runner_on_ok", "t2", 'ok: [localhost] => {\n    "msg": "hi"\n}', res={}),
        ]
    )
    stdout = (
        'ok: [localhost] => {\n    "msg": "s3cret"\n}\nok: [localhost] => {\n    "msg": "hi"\n}'
    )
    assert without_lines(stdout, output.hidden_lines()) == (
        'ok: [localhost] => {\n}\nok: [localhost] => {\n    "msg": "hi"\n}'
    )


def test_a_loop_with_one_censored_item_hides_the_tasks_display() -> None:
    said, _ = shown(
        [
            event("verbose", "t1", "EXEC s3cret"),
            event("runner_on_ok", "t1", "ok", res={"results": [{"msg": "x"}, CENSORED]}),
        ]
    )
    assert said == ["runner_on_ok"]
    assert censored({"results": [CENSORED]}) and not censored({"results": [{"msg": "x"}]})


def test_the_display_of_a_task_without_results_comes_with_the_stats() -> None:
    said, output = shown(
        [event("verbose", "meta", "META: noop"), event("playbook_on_stats", None, "PLAY RECAP")]
    )
    assert said == ["META: noop", "PLAY RECAP"]
    assert output.hidden_lines() == frozenset()


def test_a_run_that_ends_mid_task_hides_that_tasks_display_from_its_message() -> None:
    outcome = summarize(
        [
            event("playbook_on_task_start", "t1", "TASK [a]"),
            event("verbose", "t1", "<localhost> EXEC echo s3cret"),
        ],
        stdout_tail="TASK [a]\n\x1b[0;34m<localhost> EXEC echo s3cret\x1b[0m\nKilled",
    )
    [failure] = outcome.failures
    assert failure.message == f"{MISSING_STATS_MESSAGE}\nTASK [a]\nKilled"


def test_the_fatal_error_that_ended_the_run_stays_in_its_message() -> None:
    outcome = summarize(
        [
            event("playbook_on_task_start", "t1", "TASK [a]"),
            event("verbose", "t1", "<localhost> EXEC echo s3cret"),
            event("error", "t1", "ERROR! A worker was found in a dead state"),
        ],
        stdout_tail="TASK [a]\n<localhost> EXEC echo s3cret\nERROR! A worker was found in a dead "
        "state",
    )
    [failure] = outcome.failures
    assert failure.message == (
        f"{MISSING_STATS_MESSAGE}\nTASK [a]\nERROR! A worker was found in a dead state"
    )


def test_colour_codes_are_removed() -> None:
    assert strip_ansi("\x1b[0;31mfatal\x1b[0m: [\x1b[1mx\x1b[0m]") == "fatal: [x]"
