"""One run at a time per runner input dir (per custom resource), across operator processes.

The work queue keeps one operator process from running a CR twice at once, but a run outlives
its operator: an operator killed with SIGKILL (OOM, eviction) leaves ansible-runner running in a
session of its own, and the next operator process would start a second run of the same CR beside
it, in the same directory. So a run first takes ``<input dir>/run.lock``, an exclusive ``flock``
whose descriptor ansible-runner inherits: the lock lasts as long as the run, whoever started it.
The file records the holder: the run's process marker (see proctree.py) and the operator's pid.

A run that finds the lock taken by a live operator process (another one on this machine that is
finishing its runs while it shuts down) waits for it. A lock whose operator is gone is held by an
orphan: its processes are stopped (SIGTERM, then SIGKILL) and the lock taken. Stopping rather than
waiting, because nothing can use the orphan's work any more: its outcome would never be recorded,
and its API calls went through its operator's proxy, which is gone with the operator, so each of
its remaining Kubernetes tasks would fail anyway. A record left in a free lock means the last
holder's operator died after its ansible-runner: any process still carrying that marker (a
module's own subprocess, say) is stopped too.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from pathlib import Path

from ansible_operator import procfs
from ansible_operator.runner import proctree
from ansible_operator.runner.types import Logger, RunnerError

LOCK_FILE = "run.lock"


@dataclass(frozen=True)
class Holder:
    """Who holds (or last held, if the record was not cleared) a run lock."""

    marker: str  # the run's processes carry it in their environment
    operator_pid: int
    operator_started: int | None  # with the pid, identifies the operator process

    @classmethod
    def this_process(cls, marker: str) -> Holder:
        return cls(marker, os.getpid(), procfs.start_time(os.getpid()))

    def operator_alive(self) -> bool:
        """Whether the operator that started the run still runs (and is not this process)."""
        if self.operator_pid == os.getpid():
            return False  # a leftover of our own earlier run: ours to stop
        return procfs.start_time(self.operator_pid) == self.operator_started


@contextlib.asynccontextmanager
async def hold(
    directory: Path, marker: str, *, log: Logger, grace: float = 5.0, poll: float = 0.25
) -> AsyncIterator[int]:
    """Hold the run lock of ``directory`` for the body, for the run whose processes carry
    ``marker``; yields the lock's descriptor, for the run's process to inherit.

    Waits while a live operator process holds it; stops an orphaned run that holds it, giving it
    ``grace`` seconds between SIGTERM and SIGKILL. Raises RunnerError if the orphan survives.
    """
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        await _acquire(fd, log=log, grace=grace, poll=poll)
        _write(fd, Holder.this_process(marker))
        try:
            yield fd
        finally:
            os.ftruncate(fd, 0)  # released cleanly: nothing of this run is left to stop
    finally:
        os.close(fd)  # the lock goes with the last descriptor, in the run's process if alive


async def _acquire(fd: int, *, log: Logger, grace: float, poll: float) -> None:
    waiting_for: int | None = None
    stopped: str | None = None
    while not _try_lock(fd):
        holder = _read(fd)
        if holder is None or holder.operator_alive():
            # Another operator's run (or one that is just writing its record).
            pid = holder.operator_pid if holder else None
            if waiting_for != pid:
                log.info(
                    "Waiting for the run of another operator process to end",
                    extra={"operator_pid": pid},
                )
                waiting_for = pid
        elif holder.marker == stopped:  # its processes are gone, yet the lock is held
            raise RunnerError(f"{LOCK_FILE} of this resource is held by an unknown process")
        else:
            await _stop_orphan(holder, log=log, grace=grace)
            stopped = holder.marker
        await asyncio.sleep(poll)
    # Ours. A record still there means its run was never released by its operator.
    previous = _read(fd)
    if previous is not None and proctree.marked_pids(previous.marker):
        await _stop_orphan(previous, log=log, grace=grace)


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


async def _stop_orphan(holder: Holder, *, log: Logger, grace: float) -> None:
    log.info(
        "Stopping an orphaned run of this resource, left by a stopped operator process",
        extra={"operator_pid": holder.operator_pid, "run": holder.marker},
    )
    if not await proctree.terminate_run(None, holder.marker, grace=grace):
        raise RunnerError(
            f"an earlier run of this resource ({holder.marker}) survived SIGKILL; "
            "no new run starts beside it"
        )


def _read(fd: int) -> Holder | None:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"null")
        return Holder(**data) if isinstance(data, dict) else None
    except (OSError, ValueError, TypeError):
        return None


def _write(fd: int, holder: Holder) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(asdict(holder)).encode(), 0)
