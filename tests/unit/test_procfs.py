"""Reading /proc/<pid>/stat: the fields after a command name that may contain anything."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_operator.procfs import ProcStat, parse_stat, read_stat, start_time

# A real line (kernel 6.x), its command name changed to one with spaces and parentheses.
LINE = (
    "4242 (a) b (c)) S 1 4240 4240 0 -1 4194560 137 0 0 0 0 0 0 0 20 0 1 0 98765 "
    "5431296 384 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
)


def test_parse_stat_reads_after_the_last_parenthesis() -> None:
    assert parse_stat(LINE) == ProcStat(state="S", ppid=1, pgrp=4240, start_time=98765)


@pytest.mark.parametrize(
    ("state", "running"),
    [("R", True), ("S", True), ("D", True), ("Z", False), ("X", False), ("x", False)],
)
def test_running_by_state(state: str, running: bool) -> None:
    stat = parse_stat(LINE.replace(")) S ", f")) {state} "))
    assert stat is not None
    assert stat.running is running


@pytest.mark.parametrize("text", ["", "4242 (cut) S 1 4240", "4242 (x) S 1 notanumber 0"])
def test_parse_stat_cut_short(text: str) -> None:
    assert parse_stat(text) is None


def test_own_process() -> None:
    stat = read_stat(os.getpid())
    assert stat is not None
    assert stat.running
    assert stat.pgrp == os.getpgrp()
    assert start_time(os.getpid()) == stat.start_time


def test_zombie_and_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
    stat = read_stat(child.pid)
    assert stat is not None
    assert stat.state == "Z"
    assert not stat.running
    assert start_time(child.pid) is None
    child.wait()
    assert read_stat(child.pid) is None
    assert start_time(child.pid) is None
