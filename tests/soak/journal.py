"""The journal the soak role appends to: one line at the start and one at the end of each run.

A line is ``start|end <uid> <generation> <run> <pid> <time>``. The file's order is the order of
the writes (each line is one O_APPEND write), so two runs of one CR overlapped exactly when a run
ends after another run of the same CR has started. A run that was killed writes no end line; it
cannot be seen to overlap, which is why the operator must stop an orphan before it starts again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Entry:
    what: str  # "start" or "end"
    uid: str
    generation: int
    run: str
    pid: int
    time: float


def parse(text: str) -> list[Entry]:
    """The entries of a journal; a line that is not one is a ValueError naming it."""
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if len(fields) != 6 or fields[0] not in ("start", "end"):
            raise ValueError(
                f"journal line {number} is not `start|end uid gen run pid time`: {line!r}"
            )
        what, uid, generation, run, pid, time = fields
        entries.append(Entry(what, uid, int(generation), run, int(pid), float(time)))
    return entries


def read(path: Path) -> list[Entry]:
    return parse(path.read_text()) if path.exists() else []


def overlaps(entries: list[Entry]) -> list[str]:
    """Each run that ended after a later run of the same CR had started, in words."""
    latest: dict[str, Entry] = {}
    found = []
    for entry in entries:
        if entry.what == "start":
            latest[entry.uid] = entry
            continue
        last = latest.get(entry.uid)
        if last is None or last.run != entry.run:
            later = "no recorded start" if last is None else f"run {last.run} (pid {last.pid})"
            found.append(
                f"CR {entry.uid}: run {entry.run} (pid {entry.pid}, generation"
                f" {entry.generation}) ended after {later} had started"
            )
    return found


def unfinished(entries: list[Entry]) -> int:
    """Runs that started and never recorded their end (killed or interrupted)."""
    ended = {e.run for e in entries if e.what == "end"}
    return sum(1 for e in entries if e.what == "start" and e.run not in ended)
