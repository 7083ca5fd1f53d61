"""Starting, recognising and stopping the control plane's processes, and finding free ports.

Each component runs in a session of its own, so stopping it reaches every process it forked.
A process is identified by its pid together with its start time, so a pid that the kernel
reused for somebody else's process is never signalled.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ansible_operator.procfs import start_time


@dataclass(frozen=True)
class ProcessRef:
    pid: int
    start_time: int  # clock ticks since boot, field 22 of /proc/<pid>/stat


def is_running(ref: ProcessRef) -> bool:
    return start_time(ref.pid) == ref.start_time


def spawn(argv: Sequence[str], log_path: Path, env: dict[str, str] | None = None) -> ProcessRef:
    """Start ``argv`` detached in its own session, stdout and stderr appended to ``log_path``."""
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
    started = start_time(proc.pid)
    return ProcessRef(proc.pid, started if started is not None else -1)


def exit_code(ref: ProcessRef) -> int | None:
    """Reap ``ref`` if it is our exited child; its exit code, or None when unknown or running."""
    with contextlib.suppress(ChildProcessError):
        pid, status = os.waitpid(ref.pid, os.WNOHANG)
        if pid == ref.pid:
            return os.waitstatus_to_exitcode(status)
    return None


def stop(refs: Sequence[ProcessRef], grace: float = 10.0) -> None:
    """SIGTERM each process group, wait up to ``grace`` seconds, then SIGKILL what is left."""
    alive = [r for r in refs if is_running(r)]
    for ref in alive:
        _signal_group(ref, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        for ref in alive:
            exit_code(ref)
        alive = [r for r in alive if is_running(r)]
        if alive:
            time.sleep(0.1)
    for ref in alive:
        _signal_group(ref, signal.SIGKILL)
    for ref in alive:
        for _ in range(50):
            exit_code(ref)
            if not is_running(ref):
                break
            time.sleep(0.1)


def _signal_group(ref: ProcessRef, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(ref.pid, sig)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(ref.pid, sig)


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
PICKED_SPAN = 8192  # ports below the ephemeral range that free_ports picks from


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports that were free a moment ago, from below the kernel's
    ephemeral range: a port from inside it could be handed out, before its user binds it, to
    any bind to port 0 (one of the operator's own listeners) or outgoing connection."""
    try:
        low = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768  # Linux's default
    candidates = list(range(max(1024, low - PICKED_SPAN), low))
    random.shuffle(candidates)  # parallel callers rarely try the same ones
    ports: list[int] = []
    for port in candidates:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        ports.append(port)
        if len(ports) == count:
            return ports
    raise OSError(f"fewer than {count} free loopback ports below {low}")


def tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])
