"""A run record's tasks laid out on the run's time span: where each task's bar starts and how
long it is, as fractions of the span, for the two pictures drawn of a run (``ansible-operator
runs show``'s text bars and the operator's runs page's SVG).

A record is the JSON of the runs API (``started``, ``ended``, each task's ``started`` and
``duration``; RFC 3339 times). A run or task still going has no end yet: it lasts until ``now``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

FAILED = frozenset({"failed", "unreachable"})


def parse_time(text: str) -> datetime:
    """An RFC 3339 time (``Z`` or an offset, any fraction) as an aware datetime; ValueError if
    it is not one."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    if value.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return value


def format_time(text: str) -> str:
    """An RFC 3339 time to the second, in UTC: ``2026-11-26 21:40:01Z``."""
    return parse_time(text).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


@dataclass(frozen=True)
class Bar:
    """One task on the run's span: ``start`` and ``width`` are fractions of it (0 to 1)."""

    name: str
    status: str
    start: float
    width: float
    seconds: float  # how long it took, or has been running
    message: str

    @property
    def failed(self) -> bool:
        return self.status in FAILED


@dataclass(frozen=True)
class Timeline:
    seconds: float  # the run's span: its duration, or the time since it started
    bars: Sequence[Bar]


def layout(record: Mapping[str, Any], now: datetime | None = None) -> Timeline:
    """The bars of ``record``'s tasks in their order; ValueError for a time that is not one."""
    now = now or datetime.now(UTC)
    started = parse_time(record["started"])
    ended = parse_time(record["ended"]) if record.get("ended") else now
    placed = []
    for task in record.get("tasks") or ():
        task_started = parse_time(task["started"])
        duration = task.get("duration")
        seconds = float(duration) if duration is not None else (now - task_started).total_seconds()
        begin = (task_started - started).total_seconds()
        placed.append((task, max(begin, 0.0), max(seconds, 0.0)))
    span = max(
        [(ended - started).total_seconds(), *(begin + seconds for _, begin, seconds in placed)]
    )
    scale = 1 / span if span > 0 else 0.0
    bars = [
        Bar(
            name=str(task.get("name") or ""),
            status=str(task.get("status") or ""),
            start=begin * scale,
            width=seconds * scale,
            seconds=seconds,
            message=str(task.get("message") or ""),
        )
        for task, begin, seconds in placed
    ]
    return Timeline(seconds=max(span, 0.0), bars=bars)


def format_seconds(seconds: float | None) -> str:
    """``0.42s``, ``12.3s``, ``4m05s``, ``1h02m``; ``-`` for none."""
    if seconds is None:
        return "-"
    if seconds < 10:
        return f"{seconds:.2f}s"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{rest:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"
