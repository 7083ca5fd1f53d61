"""runner.logging_events: upstream's --ansible-log-events lines, as log records with fields."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from ansible_operator.runner.logging_events import (
    TASK_STDOUT_BANNER,
    TASK_STDOUT_END,
    EventLogger,
    LogEventsMode,
    banner,
    emit,
    log_debug_result,
    log_stats_stdout,
)

LOGGER = "test.runner.events"


def ev(kind: str, stdout: str = "", **data: Any) -> dict[str, Any]:
    return {"event": kind, "counter": 1, "stdout": stdout, "event_data": data}


@pytest.fixture(autouse=True)
def _capture(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)


def handler(mode: LogEventsMode = LogEventsMode.TASKS, verbosity: int = 0) -> EventLogger:
    return EventLogger(
        mode, logger=logging.getLogger(LOGGER), ident="123", gvk="g/v1, Kind=K", verbosity=verbosity
    )


def messages(records: list[logging.LogRecord]) -> list[str]:
    return [record.getMessage() for record in records]


@pytest.mark.parametrize(
    ("value", "mode"),
    [
        ("Tasks", LogEventsMode.TASKS),
        ("EVERYTHING", LogEventsMode.EVERYTHING),
        ("nothing", LogEventsMode.NOTHING),
        (" tasks ", LogEventsMode.TASKS),
    ],
)
def test_mode_parse_is_case_insensitive(value: str, mode: LogEventsMode) -> None:
    assert LogEventsMode.parse(value) is mode


def test_mode_parse_rejects_other_values() -> None:
    with pytest.raises(ValueError, match="use Tasks, Everything or Nothing"):
        LogEventsMode.parse("some")


def test_task_start_logs_the_name_then_the_stdout_block(caplog: pytest.LogCaptureFixture) -> None:
    handler()(
        ev(
            "playbook_on_task_start",
            stdout="\r\nTASK [create deployment] ****",
            task="create deployment",
            name="create deployment",
            task_action="kubernetes.core.k8s",
        )
    )
    start, block = caplog.records
    assert start.getMessage() == "[playbook task start]"
    assert start.levelno == logging.INFO
    assert start.fields == {  # type: ignore[attr-defined]
        "event_type": "playbook_on_task_start",
        "job": "123",
        "gvk": "g/v1, Kind=K",
        "EventData.Name": "create deployment",
    }
    assert block.getMessage() == "\n".join(
        [TASK_STDOUT_BANNER, "TASK [create deployment] ****", "", TASK_STDOUT_END]
    )


@pytest.mark.parametrize("action", ["set_fact", "debug", "ansible.builtin.set_fact"])
def test_set_fact_and_debug_task_starts_are_quiet(
    caplog: pytest.LogCaptureFixture, action: str
) -> None:
    handler()(ev("playbook_on_task_start", stdout="TASK", task="t", name="t", task_action=action))
    assert caplog.records == []


def test_debug_result_logs_task_args_and_the_task_banner(caplog: pytest.LogCaptureFixture) -> None:
    handler()(
        ev(
            "runner_on_ok",
            stdout='ok: [localhost] => {\r\n    "msg": "hi"\r\n}',
            task="show",
            task_action="debug",
            task_args="msg=hi",
        )
    )
    debug, block = caplog.records
    assert debug.getMessage() == "[playbook debug]"
    assert debug.fields["EventData.TaskArgs"] == "msg=hi"  # type: ignore[attr-defined]
    assert block.getMessage() == "\n".join(
        [
            TASK_STDOUT_BANNER,
            "",
            " TASK [show] ******************************** ",
            'ok: [localhost] => {\n    "msg": "hi"\n}',
            "",
            TASK_STDOUT_END,
        ]
    )


def test_failed_task_is_an_error_with_its_path(caplog: pytest.LogCaptureFixture) -> None:
    handler()(
        ev(
            "runner_on_failed",
            stdout="\x1b[0;31mfatal: [localhost]: FAILED!\x1b[0m",
            task="boom",
            task_args="",
            task_path="/r/tasks/main.yml:3",
        )
    )
    failed, block = caplog.records
    assert failed.getMessage() == "[playbook task failed]"
    assert failed.levelno == logging.ERROR
    fields = failed.fields  # type: ignore[attr-defined]
    assert fields["EventData.Task"] == "boom"
    assert fields["EventData.FailedTaskPath"] == "/r/tasks/main.yml:3"
    assert "fatal: [localhost]: FAILED!" in block.getMessage()
    assert "\x1b" not in block.getMessage()


def test_item_results_log_their_stdout_only(caplog: pytest.LogCaptureFixture) -> None:
    handler()(ev("runner_item_on_ok", stdout="ok: [localhost] => (item=1)", task="loop"))
    [block] = caplog.records
    assert block.getMessage().startswith(TASK_STDOUT_BANNER)
    assert "ok: [localhost] => (item=1)" in block.getMessage()


def test_tasks_mode_ignores_events_without_a_task(caplog: pytest.LogCaptureFixture) -> None:
    log = handler()
    log(ev("playbook_on_start"))
    log(ev("playbook_on_stats", stdout="PLAY RECAP"))
    log(ev("runner_on_ok", stdout="ok", task="t", task_action="command"))  # not logged upstream
    assert caplog.records == []


def test_verbosity_logs_raw_stdout_of_task_events(caplog: pytest.LogCaptureFixture) -> None:
    log = handler(verbosity=1)
    log(ev("runner_on_ok", stdout="ok: [localhost]", task="t", task_action="command"))
    log(ev("runner_on_start", stdout="", task="t"))
    log(ev("playbook_on_start", stdout="not a task event"))
    assert messages(caplog.records) == ["ok: [localhost]"]


def test_everything_mode_logs_every_event_with_its_data(caplog: pytest.LogCaptureFixture) -> None:
    log = handler(LogEventsMode.EVERYTHING)
    log(ev("playbook_on_start", playbook="p.yml"))
    log(ev("runner_on_ok", stdout="ok: [localhost]", task="t"))
    assert messages(caplog.records)[:2] == ["playbook_on_start", "runner_on_ok"]
    assert caplog.records[0].fields["EventData"] == {"playbook": "p.yml"}  # type: ignore[attr-defined]
    assert "ok: [localhost]" in caplog.records[2].getMessage()


def test_nothing_mode_is_silent(caplog: pytest.LogCaptureFixture) -> None:
    handler(LogEventsMode.NOTHING)(ev("runner_on_failed", stdout="x", task="t"))
    assert caplog.records == []


def test_banner_matches_upstream_layout() -> None:
    title = "Ansible Task Status Event StdOut (g/v1, Kind=K, n/ns)"
    assert (
        banner(title, "body")
        == f"----- {' ' * (70 - len(title))}{title} -----\n\nbody\n\n----------"
    )


def test_stats_and_debug_banners(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    logger = logging.getLogger(LOGGER)
    stdout = tmp_path / "stdout"
    stdout.write_text("PLAY [localhost]\r\nok\r\n")
    log_stats_stdout(
        logger,
        "\r\nPLAY RECAP ***\r\nlocalhost : ok=1",
        gvk="/v1, Kind=Secret",
        name="s",
        namespace="default",
        ident="9",
    )
    log_debug_result(logger, stdout, gvk="/v1, Kind=Secret", name="s", namespace="default")
    log_debug_result(logger, tmp_path / "missing", gvk="g", name="n", namespace="ns")
    log_stats_stdout(logger, "", gvk="g", name="n", namespace="ns")  # nothing to show
    stats, debug = caplog.records
    assert stats.getMessage().startswith("----- ")
    assert "Ansible Task Status Event StdOut (/v1, Kind=Secret, s/default) -----\n\n" in (
        stats.getMessage()
    )
    assert stats.getMessage().endswith("PLAY RECAP ***\nlocalhost : ok=1\n\n----------")
    assert stats.fields == {"job": "9"}  # type: ignore[attr-defined]
    assert "Ansible Debug Result (/v1, Kind=Secret, s/default)" in debug.getMessage()
    assert "PLAY [localhost]\nok" in debug.getMessage()


def test_emit_merges_adapter_fields(caplog: pytest.LogCaptureFixture) -> None:
    adapter = logging.LoggerAdapter(
        logging.getLogger(LOGGER), {"kind": "K", "fields": {"namespace": "ns", "job": "old"}}
    )
    emit(adapter, logging.WARNING, "hello", {"job": "new"})
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert record.fields == {"kind": "K", "namespace": "ns", "job": "new"}  # type: ignore[attr-defined]
