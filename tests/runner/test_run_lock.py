"""The run lock: one run per input dir, across operator processes, with real ansible-runner runs.

An "operator" here is a Python process running ColdRunner; killing it with SIGKILL leaves its
ansible-runner running, as a crashed operator does.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from ansible_operator import procfs
from ansible_operator.runner import ColdRunner, proctree
from ansible_operator.runner.runlock import LOCK_FILE, Holder
from tests.runner.runs import REPO, ROLES, TAG_ENV, MakeRequest, tagged_processes

pytestmark = pytest.mark.any_core(
    reason="the lock, the orphans and their stopping are the operator's; Ansible is the workload"
)

OPERATOR = """
import asyncio, json, sys
from pathlib import Path
from ansible_operator.runner import ColdRunner, RunRequest

fields = json.loads(sys.argv[1])
fields["private_data_dir"] = Path(fields["private_data_dir"])
asyncio.run(ColdRunner().run(RunRequest(**fields)))
"""


class Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage())


def listening_logger(name: str) -> tuple[logging.Logger, Messages]:
    logger = logging.getLogger(f"test.runlock.{name}")
    logger.setLevel(logging.DEBUG)
    messages = Messages()
    logger.addHandler(messages)
    return logger, messages


def wait_for(probe: Any, what: str, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def lock_is_free(pdd: Path) -> bool:
    fd = os.open(pdd / LOCK_FILE, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def sleeper_of(tag: str) -> bool:
    return any(proc.cmdline == "sleep 600" for proc in tagged_processes(tag))


def test_an_orphan_of_a_killed_operator_is_stopped_before_the_next_run(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    first = make_request(role=str(ROLES / "sleeper"), skip_facts=True)
    fields = asdict(first)
    fields["private_data_dir"] = str(first.private_data_dir)
    operator = subprocess.Popen(
        [sys.executable, "-c", OPERATOR, json.dumps(fields)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "operator")},
    )
    orphan_tag = first.extra_env[TAG_ENV]
    try:

        def sleeping() -> bool:
            assert operator.poll() is None, "the first operator ended early"
            return sleeper_of(orphan_tag)

        wait_for(sleeping, "the first run's sleep to start")
        operator.send_signal(signal.SIGKILL)
        operator.wait(30)
        pdd = Path(first.private_data_dir)
        assert sleeper_of(orphan_tag), "the run outlives its operator"
        assert not lock_is_free(pdd), "ansible-runner holds the lock after its operator died"

        second = make_request(role=str(ROLES / "greeter"), skip_facts=True)
        logger, messages = listening_logger("orphan")
        overlapped = []

        async def main() -> Any:
            async def watch() -> None:
                while True:
                    if tagged_processes(orphan_tag) and tagged_processes(second.extra_env[TAG_ENV]):
                        overlapped.append(True)
                    await asyncio.sleep(0.02)

            watcher = asyncio.create_task(watch())
            try:
                return await runner.run(second, logger=logger)
            finally:
                watcher.cancel()

        result = asyncio.run(main())
    finally:
        for proc in tagged_processes(orphan_tag):
            os.kill(proc.pid, signal.SIGKILL)
        if operator.poll() is None:
            operator.kill()
    assert result.ok, result.outcome.failures
    assert tagged_processes(orphan_tag) == []
    assert overlapped == [], "the new run ran beside the orphan"
    assert any(m.startswith("Stopping an orphaned run") for m in messages.seen)
    assert lock_is_free(pdd) and (pdd / LOCK_FILE).read_text() == ""


def test_a_run_waits_while_a_live_operator_holds_the_lock(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    request = make_request(role=str(ROLES / "greeter"), skip_facts=True)
    pdd = Path(request.private_data_dir)
    pdd.mkdir(parents=True)
    # Another operator process that is alive and holds the lock: a process of its own (a sleep)
    # that has the locked descriptor, and is named as the operator in the record.
    fd = os.open(pdd / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    other = subprocess.Popen(["sleep", "600"], pass_fds=(fd,))
    holder = Holder("another-run", other.pid, procfs.start_time(other.pid))
    os.pwrite(fd, json.dumps(asdict(holder)).encode(), 0)
    os.close(fd)
    logger, messages = listening_logger("live")

    async def main() -> Any:
        task = asyncio.create_task(runner.run(request, logger=logger))
        try:
            while "Waiting for the run of another operator process to end" not in messages.seen:
                assert not task.done(), "the run did not wait"
                await asyncio.sleep(0.05)
            assert not (pdd / "artifacts" / request.ident).exists(), "nothing of it started"
            assert other.poll() is None, "the live operator's run was left alone"
        finally:
            other.kill()
            other.wait()
        return await asyncio.wait_for(task, 120)

    result = asyncio.run(main())
    assert result.ok, result.outcome.failures


def test_a_leftover_process_of_a_released_orphan_is_stopped(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    # The orphan's ansible-runner is gone (the lock is free) but a module's subprocess that
    # carries its marker lives on; the record its dead operator never cleared names it.
    request = make_request(role=str(ROLES / "greeter"), skip_facts=True)
    pdd = Path(request.private_data_dir)
    pdd.mkdir(parents=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    (pdd / LOCK_FILE).write_text(json.dumps(asdict(Holder("gone-run", dead.pid, 1))))
    straggler = subprocess.Popen(
        ["sleep", "600"], env={**os.environ, proctree.MARKER_ENV: "gone-run"}
    )
    try:
        # Popen returns once the exec has begun; /proc shows the new environment a moment later
        # (an orphan's leftover has long been running).
        wait_for(lambda: proctree.marked_pids("gone-run") == {straggler.pid}, "the marker")
        result = asyncio.run(runner.run(request))
        assert straggler.wait(30) == -signal.SIGTERM
    finally:
        straggler.kill()
    assert result.ok, result.outcome.failures
