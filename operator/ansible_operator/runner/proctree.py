"""Find and kill every process of one Ansible run, however it detached itself.

Killing ansible-runner's process group is not enough: ansible-runner starts ansible-playbook on a
pseudo-terminal in a new session, and ansible-core 2.19's workers call setsid() again (2.18's
do not), so a module's `sleep 600` runs one or two sessions away from the process we started,
and is re-parented to init once its parents die. What all of them keep is the environment.
Each run therefore gets a unique marker variable; a sweep signals ansible-runner's process group
plus every process whose `/proc/<pid>/environ` carries the marker. A process counts as gone once
it is a zombie or has vanished; orphaned zombies stay until init reaps them, so the operator
needs an init that reaps (tini, as in upstream's image). Processes are remembered by pid and
start time, so a recycled pid is never signalled. Without /proc (not Linux) only the process
group is signalled.

A run that ends by itself is swept too (`sweep_ended_run`): a module whose worker was killed, or
that a failed run left running, must not outlive its run. Only what a task asked to outlive it
is spared: an `async` task's job, which Ansible's async_wrapper module daemonizes and runs (the
wrapper and everything under it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

from ansible_operator.procfs import PROC, read_stat, start_time

MARKER_ENV = "ANSIBLE_OPERATOR_RUN_ID"
ASYNC_WRAPPER = b"async_wrapper"  # in the command line of Ansible's runner of `async` jobs


def marked_pids(marker: str) -> set[int]:
    """Live (non-zombie) processes whose environment carries this run's marker."""
    entry = f"\0{MARKER_ENV}={marker}\0".encode()
    found: set[int] = set()
    try:
        names = os.listdir(PROC)
    except OSError:
        return found
    own = os.getpid()
    for name in names:
        if not name.isdigit() or int(name) == own:
            continue
        try:
            environ = (PROC / name / "environ").read_bytes()
        except OSError:  # gone, or not ours to read
            continue
        if entry in b"\0" + environ + b"\0" and start_time(int(name)) is not None:
            found.add(int(name))
    return found


def group_alive(pgid: int) -> bool:
    """Whether a live process (not a zombie) remains in process group `pgid`.

    `killpg(pgid, 0)` also succeeds for zombies, which linger until their parent or init reaps
    them, so /proc is read where it exists.
    """
    try:
        names = os.listdir(PROC)
    except OSError:
        names = None
    if names is None:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    for name in names:
        if name.isdigit():
            stat = read_stat(int(name))
            if stat is not None and stat.running and stat.pgrp == pgid:
                return True
    return False


def async_jobs(pids: set[int]) -> set[int]:
    """Those of `pids` that run an `async` task's job: the async_wrapper processes, and their
    descendants among `pids`."""
    parents: dict[int, int] = {}
    jobs: set[int] = set()
    for pid in pids:
        stat = read_stat(pid)
        if stat is not None:
            parents[pid] = stat.ppid
        try:
            if ASYNC_WRAPPER in (PROC / str(pid) / "cmdline").read_bytes():
                jobs.add(pid)
        except OSError:
            continue
    for pid in pids:
        seen, up = set(), pid
        while up in parents and up not in jobs and up not in seen:
            seen.add(up)
            up = parents[up]
        if up in jobs:
            jobs.add(pid)
    return jobs


class RunProcesses:
    """The processes of one run: ansible-runner's group (None if not started) and the marked ones
    (less its `async` jobs if `spare_async`).

    The group id is safe to signal for as long as its leader, our child, is not reaped.
    """

    def __init__(self, pgid: int | None, marker: str, *, spare_async: bool = False) -> None:
        self.pgid = pgid
        self.marker = marker
        self.spare_async = spare_async
        self.known: dict[int, int] = {}  # pid -> start time

    def scan(self) -> set[int]:
        """Record the marked processes; returns the pids not seen before."""
        new = set()
        found = marked_pids(self.marker)
        if self.spare_async:
            found -= async_jobs(found)
        for pid in found:
            start = start_time(pid)
            if start is not None and self.known.get(pid) != start:
                self.known[pid] = start
                new.add(pid)
        return new

    def signal(self, sig: int, *, only_new: bool = False) -> None:
        """Send `sig` to the group and to the marked processes (or only newly found ones)."""
        if self.pgid is not None and not only_new:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pgid, sig)
        new = self.scan()
        for pid, start in list(self.known.items()):
            if (only_new and pid not in new) or start_time(pid) != start:
                continue
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    def alive(self) -> bool:
        if self.pgid is not None and group_alive(self.pgid):
            return True
        if any(start_time(pid) == start for pid, start in self.known.items()):
            return True
        return bool(self.scan())


def kill_run_now(pgid: int | None, marker: str, *, attempts: int = 50) -> bool:
    """SIGKILL everything of the run without awaiting; returns True when nothing is left.

    Repeats briefly, to catch a process forked between listing and signalling and to let the
    killed ones finish exiting.
    """
    run = RunProcesses(pgid, marker)
    for _ in range(attempts):
        run.signal(signal.SIGKILL)
        if not run.alive():
            return True
        time.sleep(0.01)
    return not run.alive()


async def terminate_run(
    pgid: int | None,
    marker: str,
    *,
    grace: float = 5.0,
    kill_timeout: float = 5.0,
    poll: float = 0.05,
    spare_async: bool = False,
) -> bool:
    """SIGTERM every process of the run, SIGKILL what is left after `grace` seconds.

    Returns True when no process of the run remains. If this coroutine is cancelled while it
    waits, the run is SIGKILLed at once before the cancellation propagates.
    """
    loop = asyncio.get_running_loop()
    run = RunProcesses(pgid, marker, spare_async=spare_async)
    try:
        deadline = loop.time() + grace
        run.signal(signal.SIGTERM)
        if not run.alive():
            return True
        while loop.time() < deadline:
            await asyncio.sleep(poll)
            if not run.alive():
                return True
            run.signal(signal.SIGTERM, only_new=True)  # started since the last sweep
        deadline = loop.time() + kill_timeout
        while True:
            run.signal(signal.SIGKILL)
            await asyncio.sleep(poll)
            if not run.alive():
                return True
            if loop.time() >= deadline:
                return False
    except asyncio.CancelledError:
        kill_run_now(pgid, marker)
        raise
