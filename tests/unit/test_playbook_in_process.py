"""The warm run's pexpect class: closing the terminal of a child that has ended does not pause."""

from __future__ import annotations

import time
from unittest import mock

import pexpect
import ptyprocess.ptyprocess

from ansible_operator.runner.warm.patches import playbook_in_process


def closing_pauses(child: pexpect.spawn) -> list[float]:
    """The pauses ptyprocess takes while `child` is closed."""
    with mock.patch.object(ptyprocess.ptyprocess.time, "sleep", wraps=time.sleep) as sleep:
        child.close()
    return [call.args[0] for call in sleep.call_args_list]


def _never_run(argv: list[str], env: dict[str, str]) -> None:
    raise AssertionError("only ansible-playbook runs in-process")


def test_closing_an_ended_child_does_not_pause():
    spawn = playbook_in_process._in_process_spawn_class(pexpect.spawn, _never_run)
    child = spawn("true")
    child.expect(pexpect.EOF, timeout=60)
    child.wait()
    assert not [pause for pause in closing_pauses(child) if pause > 0]
    assert child.exitstatus == 0


def test_closing_a_running_child_still_gives_it_time_then_stops_it():
    spawn = playbook_in_process._in_process_spawn_class(pexpect.spawn, _never_run)
    child = spawn("sleep", ["600"])
    pauses = closing_pauses(child)
    assert child.ptyproc.delayafterclose in pauses  # the hangup's grace, as pexpect gives it
    assert not child.isalive()
