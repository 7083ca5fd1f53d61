"""Stopping the operator for real: SIGTERM lets runs finish within --graceful-shutdown-timeout,
then interrupts them (not a failure, retried by the next operator process); after a SIGKILL the
orphaned run is stopped before the next one starts. A role records each run's start and end in a
journal file, so that overlapping runs of one CR would show."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest
from kubernetes.client.rest import ApiException

from ansible_operator.runner.proctree import MARKER_ENV

from .crds import GROUP, VERSION
from .operators import Operator
from .resources import condition, new_cr, wait_condition
from .waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.long]

KIND, PLURAL = "Sleeper", "sleepers"
RUNNER_BASE = Path("/tmp/ansible-operator/runner")


class Journal:
    """The file the journal role appends `start|end <name> <run id>` lines to."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def entries(self) -> list[tuple[str, str, str]]:
        lines = self.path.read_text().splitlines() if self.path.exists() else []
        entries = []
        for line in lines:
            what, name, run = line.split()
            entries.append((what, name, run))
        return entries

    def of(self, name: str) -> list[str]:
        return [what for what, who, _ in self.entries() if who == name]

    def of_all(self, what: str) -> list[str]:
        return [name for w, name, _ in self.entries() if w == what]

    def overlaps(self) -> list[str]:
        """Runs that ended after a later run of the same CR had started."""
        latest: dict[str, str] = {}
        found = []
        for what, name, run in self.entries():
            if what == "start":
                latest[name] = run
            elif latest.get(name) != run:
                found.append(f"{name}: run {run} ended after run {latest.get(name)} started")
        return found


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "journal")


def create(crs, namespace: str, name: str, seconds: float, journal: Journal) -> None:
    spec = {"seconds": seconds, "journal": str(journal.path)}
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, new_cr(KIND, name, spec))


def get(crs, namespace: str, name: str) -> dict:
    return crs.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)


def run_processes(namespace: str, name: str) -> list[int]:
    """Live processes of any run of this CR: their environment carries a run marker made of an
    ident found in the CR's artifacts dir."""
    artifacts = RUNNER_BASE / GROUP / VERSION / KIND / namespace / name / "artifacts"
    idents = [p.name for p in artifacts.iterdir() if p.is_dir()] if artifacts.is_dir() else []
    markers = [f"\0{MARKER_ENV}={ident}.".encode() for ident in idents]
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = b"\0" + Path("/proc", pid, "environ").read_bytes()
            stat = Path("/proc", pid, "stat").read_text()
        except OSError:
            continue
        if stat[stat.rfind(")") + 2] not in "ZX" and any(m in environ for m in markers):
            found.append(int(pid))
    return found


def start_journal_operator(operator: Operator, *args: str) -> None:
    operator.write_watches([{"kind": KIND, "role": "journal"}])
    operator.start(*args)


def exit_code(operator: Operator, timeout: float = 180) -> int:
    assert operator.proc is not None
    return operator.proc.wait(timeout)


def test_sigterm_lets_the_running_run_finish_and_starts_no_new_one(
    operator, crs, namespace, journal
):
    start_journal_operator(operator, "--zap-log-level=debug")
    create(crs, namespace, "long", 12, journal)
    wait_until(lambda: journal.of("long") == ["start"], what="the run to start")
    operator.proc.send_signal(signal.SIGTERM)
    # Once the operator has taken the signal: an event it reads in the same turn of its loop as
    # the signal may still be taken first (seen once with parallel test workers on 2 cores).
    wait_until(
        lambda: "Shutting down: waiting for running reconciles" in operator.log(),
        what="the operator to take the signal",
    )
    create(crs, namespace, "late", 1, journal)
    wait_until(
        lambda: f"key={namespace}/late" in operator.log(), what="the late CR's event to arrive"
    )

    assert exit_code(operator) == 0
    assert journal.of("long") == ["start", "end"], "the run was given its time"
    assert journal.of("late") == [], "no run starts after SIGTERM"
    obj = get(crs, namespace, "long")
    assert condition(obj, "Successful")["status"] == "True"
    assert condition(obj, "Running")["reason"] == "Successful"
    assert "status" not in get(crs, namespace, "late")


def test_a_run_past_the_graceful_timeout_is_interrupted_then_rerun_by_the_next_operator(
    operator, crs, namespace, journal
):
    start_journal_operator(operator, "--graceful-shutdown-timeout=2s")
    create(crs, namespace, "cut", 10, journal)
    wait_until(lambda: journal.of("cut") == ["start"], what="the run to start")
    operator.proc.send_signal(signal.SIGTERM)

    assert exit_code(operator) == 0
    assert journal.of("cut") == ["start"], "the run was stopped"
    assert run_processes(namespace, "cut") == [], "with its whole process tree"
    obj = get(crs, namespace, "cut")
    running = condition(obj, "Running")
    assert (running["status"], running["reason"]) == ("False", "Interrupted")
    assert running["message"] == (
        "Reconciliation interrupted: the operator is shutting down and the run did not end"
        " within its graceful shutdown timeout (2s). It will be retried"
    )
    assert condition(obj, "Successful") is None, "never succeeded yet"
    assert condition(obj, "Failure") is None, "an interruption is not a failure"

    operator.start()
    obj = wait_condition(crs, namespace, KIND, "cut", "Successful", timeout=300)
    assert condition(obj, "Running")["reason"] == "Successful"
    assert journal.of("cut") == ["start", "start", "end"]
    assert journal.overlaps() == []


def test_a_second_signal_interrupts_at_once(operator, crs, namespace, journal):
    start_journal_operator(operator, "--graceful-shutdown-timeout=1h")
    create(crs, namespace, "impatient", 3600, journal)
    wait_until(lambda: journal.of("impatient") == ["start"], what="the run to start")
    operator.proc.send_signal(signal.SIGTERM)
    wait_until(
        lambda: "Shutting down: waiting for running reconciles" in operator.log(),
        what="the graceful shutdown to begin",
    )
    operator.proc.send_signal(signal.SIGTERM)

    assert exit_code(operator) == 0
    running = condition(get(crs, namespace, "impatient"), "Running")
    assert (running["status"], running["reason"]) == ("False", "Interrupted")
    assert "told twice to stop" in running["message"]
    assert run_processes(namespace, "impatient") == []


def test_after_a_sigkill_the_orphaned_run_is_stopped_before_the_next_one(
    operator, crs, namespace, journal
):
    start_journal_operator(operator)
    create(crs, namespace, "orphan", 20, journal)
    wait_until(lambda: journal.of("orphan") == ["start"], what="the run to start")
    operator.kill()
    assert run_processes(namespace, "orphan"), "the run outlives its operator"

    operator.start()
    obj = wait_condition(crs, namespace, KIND, "orphan", "Successful", timeout=300)
    assert condition(obj, "Running")["reason"] == "Successful"
    assert journal.overlaps() == []
    assert journal.of("orphan") == ["start", "start", "end"], "the orphan never finished"
    assert "Stopping an orphaned run of this resource" in operator.log()
    assert run_processes(namespace, "orphan") == []


def test_short_fault_run_sigkill_and_sigterm_at_random_points(operator, crs, namespace, journal):
    """A few CRs, the operator killed or stopped at random moments, restarted each time: every
    CR ends Successful, no run of one CR overlaps another, no process is left."""
    rng = random.Random(os.environ.get("FAULT_SEED", "13"))
    names = [f"cr{i}" for i in range(4)]
    operator.write_watches([{"kind": KIND, "role": "journal"}])
    for name in names:
        create(crs, namespace, name, rng.choice([1, 3, 6]), journal)
    faults = ["SIGKILL", "SIGTERM"] * 3
    rng.shuffle(faults)
    for fault in faults:
        operator.start(f"--graceful-shutdown-timeout={rng.choice([0, 1, 3])}s")
        # A fault at a random point, but after some run has started since this operator did.
        started = len(journal.entries())
        wait_until(lambda n=started: len(journal.entries()) > n, what="a run to start", timeout=180)
        time.sleep(rng.uniform(0, 6))  # the random point of the fault
        assert operator.proc.poll() is None, "the operator stopped by itself"
        if fault == "SIGKILL":
            operator.kill()
        else:
            operator.proc.send_signal(signal.SIGTERM)
            assert exit_code(operator) == 0
    operator.start()

    def all_successful() -> bool:
        for name in names:
            try:
                c = condition(get(crs, namespace, name), "Successful")
            except ApiException:
                return False
            if not (c and c["status"] == "True"):
                return False
        return True

    wait_until(all_successful, what="every CR Successful", timeout=600)
    log = operator.log()
    print(
        f"faults {faults}: {len(journal.of_all('start'))} runs started,"
        f" {len(journal.of_all('end'))} ended, {log.count('Reconciliation interrupted')}"
        f" interrupted, {log.count('Stopping an orphaned run')} orphans stopped"
    )
    assert journal.overlaps() == []
    for name in names:
        assert journal.of(name)[-1] == "end"
        running = condition(get(crs, namespace, name), "Running")
        assert running["reason"] == "Successful"
        wait_until(lambda n=name: run_processes(namespace, n) == [], what=f"no process of {name}")
