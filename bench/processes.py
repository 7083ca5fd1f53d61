"""What the operator's processes use, read from /proc: the operator and every descendant
(runner processes and warm workers, whatever session or group they put themselves in)."""

from __future__ import annotations

import os
from pathlib import Path

from ansible_operator.procfs import read_fields

PROC = Path("/proc")
TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def tree(root: int) -> list[int]:
    """``root`` and its descendants that are alive now."""
    children: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            fields = read_fields(int(entry.name))
            if fields is not None and fields[0] not in ("Z", "X"):
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def memory_mib(pids: list[int]) -> tuple[float, float]:
    """Summed RSS and PSS (MiB) of ``pids``, from smaps_rollup; PSS shares pages fairly between
    forked workers, RSS counts a shared page once per process."""
    rss = pss = 0
    for pid in pids:
        try:
            lines = (PROC / str(pid) / "smaps_rollup").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            name, _, rest = line.partition(":")
            if name == "Rss":
                rss += int(rest.split()[0])
            elif name == "Pss":
                pss += int(rest.split()[0])
    return rss / 1024, pss / 1024


def cpu_ticks(pids: list[int]) -> dict[int, int]:
    """CPU time (clock ticks) of each of ``pids``, its waited-for children included."""
    ticks = {}
    for pid in pids:
        fields = read_fields(pid)
        if fields is not None:
            ticks[pid] = sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime .. cstime
    return ticks


def cpu_percent(before: dict[int, int], after: dict[int, int], seconds: float) -> float:
    """% of one core used between two `cpu_ticks` readings ``seconds`` apart (a process new
    in ``after`` counts whole)."""
    used = sum(t - before.get(pid, 0) for pid, t in after.items())
    return 100.0 * used / TICKS_PER_S / seconds
