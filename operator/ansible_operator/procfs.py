"""What Linux's ``/proc/<pid>/stat`` says about a process: its state, group and start time.

Both the runner (killing a run's process tree) and the dev cluster (stopping its components)
recognise a process by its pid together with its start time, so a pid the kernel has reused for
somebody else's process is never signalled. The second field, the command name, is in
parentheses and may contain anything, spaces and parentheses included, so the fields are read
after its last closing parenthesis.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
_GONE = ("Z", "X", "x")  # zombie or dead: runs nothing any more


@dataclass(frozen=True)
class ProcStat:
    state: str  # field 3: R, S, D, Z, ...
    ppid: int  # field 4: the parent
    pgrp: int  # field 5: the process group
    start_time: int  # field 22: clock ticks after boot

    @property
    def running(self) -> bool:
        """Not a zombie, not dead: it still runs (or sleeps)."""
        return self.state not in _GONE


def fields_after_name(text: str) -> list[str]:
    """The fields of one ``/proc/<pid>/stat`` line after the command name: the state first."""
    return text[text.rfind(")") + 2 :].split()


def read_fields(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat``'s fields after the command name; None when the process is gone (or
    unreadable)."""
    try:
        return fields_after_name((PROC / str(pid) / "stat").read_text())
    except OSError:
        return None


def parse_stat(text: str) -> ProcStat | None:
    """The fields of one ``/proc/<pid>/stat`` line; None when it is cut short."""
    fields = fields_after_name(text)
    try:
        return ProcStat(
            state=fields[0], ppid=int(fields[1]), pgrp=int(fields[2]), start_time=int(fields[19])
        )
    except (IndexError, ValueError):
        return None


def read_stat(pid: int) -> ProcStat | None:
    """``/proc/<pid>/stat`` parsed; None when the process is gone (or unreadable)."""
    try:
        return parse_stat((PROC / str(pid) / "stat").read_text())
    except OSError:
        return None


def start_time(pid: int) -> int | None:
    """The start time of a running process, which identifies it together with its pid; None
    when it is gone or a zombie."""
    stat = read_stat(pid)
    return stat.start_time if stat is not None and stat.running else None
