"""A `no_log` task's arguments and result leave a run nowhere: not in its outcome, the messages
made of it, nor any line the operator logs about it, in every log-events mode and verbosity.

The role `secretive` makes a secret from `seed`, hands it to `no_log` tasks (a module, a raw
command Ansible displays at -vvv, a loop, debug, a rescued failure) whose results hold it written
backwards, and ends with a `no_log` task that fails printing it. The events of each real run are
replayed into an event logger per mode and verbosity: the logger is a pure consumer of them.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import uuid
from importlib.metadata import version
from typing import Any

import pytest

from ansible_operator.runner import (
    ColdRunner,
    EventLogger,
    LogEventsMode,
    log_debug_result,
    log_stats_stdout,
)
from ansible_operator.runtime.control.reconciler import failure_summary

from .runs import ROLES, MakeRequest

pytestmark = pytest.mark.ansible_core  # the core's own behaviour, on each core

CORE = tuple(int(part) for part in version("ansible-core").split(".")[:2])


class Lines(logging.Handler):
    """Every record as the text a formatter could print: message and fields."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.getMessage()} {record.__dict__}")


@pytest.mark.parametrize("verbosity", [0, 4])
def test_a_no_log_tasks_secret_is_nowhere_in_what_leaves_the_run(
    runner: ColdRunner, make_request: MakeRequest, verbosity: int
) -> None:
    seed = f"seed-{uuid.uuid4().hex}"
    secret = base64.b64encode(seed.encode()).decode()
    lines = Lines()
    logger = logging.getLogger(f"test.no_log.{uuid.uuid4().hex}")
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    request = make_request(
        role=str(ROLES / "secretive"),
        skip_facts=True,
        extravars={"seed": seed, "fail": True},
        verbosity=verbosity,
    )
    events: list[dict[str, Any]] = []
    result = asyncio.run(runner.run(request, on_event=events.append, logger=logger))

    assert not result.ok
    [failure] = result.outcome.failures
    assert failure.task == "a command that fails, printing the secret backwards"
    # The secret is there to find: Ansible's own stdout has it at -vvv (its EXEC lines) and, on
    # ansible-core 2.19, in the error it displays for the `fail` task.
    stdout = result.stdout_path.read_text()
    assert (secret in stdout) == (verbosity >= 3 or CORE >= (2, 19))

    for mode in LogEventsMode:
        for log_verbosity in (0, 1):
            events_logger = EventLogger(
                mode, logger=logger, ident=request.ident, verbosity=log_verbosity
            )
            for event in events:
                events_logger(event)
    where = {"gvk": "test.example.com/v1, Kind=Thing", "name": "n", "namespace": "ns"}
    log_stats_stdout(logger, result.outcome.stats_stdout, **where)
    log_debug_result(logger, result.stdout_path, hidden=result.outcome.hidden_output, **where)
    assert any("[playbook task failed]" in line for line in lines.lines)
    assert any("Ansible Debug Result" in line for line in lines.lines)

    shown = [
        *lines.lines,
        repr(result.outcome),
        "\n".join(result.outcome.failure_messages),  # the Failure condition's message
        failure_summary(result),  # the Event's note
    ]
    for text in (secret, secret[::-1]):
        leaks = [line for line in shown if text in line]
        assert not leaks, leaks[0]
