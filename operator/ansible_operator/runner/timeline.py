"""Every task of one run, per host, with when it started and how long it took, from the run's
job events: what a run's record shows as its timeline.

Pure and incremental, as ``events``: fed one event at a time while the run goes. A task is
``running`` from its ``runner_on_start`` until its result (ok, changed, failed, ignored,
skipped, unreachable); its start and duration are the ones ansible-runner's callback puts on
the result. A failed task's message is the one the run's outcome uses (``failure_message``),
which a ``no_log`` task's censored result does not reveal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ansible_operator.runner.events import failure_message

_RESULTS = {
    "runner_on_ok": "ok",
    "runner_on_failed": "failed",
    "runner_on_skipped": "skipped",
    "runner_on_unreachable": "unreachable",
}


@dataclass
class TaskRun:
    name: str
    role: str
    host: str
    status: str  # running, ok, changed, failed, ignored, skipped, unreachable
    changed: bool
    started: str  # ISO 8601, as the event says it
    duration: float | None  # seconds; None while running
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "role": self.role,
            "host": self.host,
            "status": self.status,
            "changed": self.changed,
            "started": self.started,
            "duration": self.duration,
            "message": self.message,
        }


class Timeline:
    def __init__(self, *, max_tasks: int = 2000) -> None:
        self.tasks: list[TaskRun] = []
        self.dropped = 0  # tasks past max_tasks, counted and not kept
        self._max = max_tasks
        self._open: dict[tuple[str, str], TaskRun] = {}  # (task uuid, host) → its running entry
        self._left_out: set[tuple[str, str]] = set()  # started past max_tasks, result to come

    def feed(self, event: Mapping[str, Any]) -> None:
        kind = event.get("event")
        data = event.get("event_data")
        if not isinstance(data, Mapping) or not isinstance(kind, str):
            return
        where = (str(data.get("task_uuid") or data.get("task") or ""), str(data.get("host") or ""))
        if kind == "runner_on_start":
            started = _running(data, str(event.get("created") or ""))
            if self._keep(started):
                self._open[where] = started
            else:
                self._left_out.add(where)
            return
        status = _RESULTS.get(kind)
        if status is None:
            return
        if where in self._left_out:
            self._left_out.discard(where)
            return
        task: TaskRun | None = self._open.pop(where, None)
        if task is None:  # a result without its start: kept from the result's own times
            task = _running(data, "")
            if not self._keep(task):
                return
        res = data.get("res")
        task.changed = isinstance(res, Mapping) and res.get("changed") is True
        if status == "ok" and task.changed:
            status = "changed"
        if status == "failed" and data.get("ignore_errors") is True:
            status = "ignored"
        if status in ("failed", "ignored", "unreachable"):
            task.message = failure_message(event)
        task.status = status
        task.started = str(data.get("start") or task.started)
        duration = data.get("duration")
        task.duration = float(duration) if isinstance(duration, int | float) else None

    def _keep(self, task: TaskRun) -> bool:
        if len(self.tasks) >= self._max:
            self.dropped += 1
            return False
        self.tasks.append(task)
        return True


def _running(data: Mapping[str, Any], started: str) -> TaskRun:
    return TaskRun(
        name=str(data.get("task") or ""),
        role=str(data.get("role") or ""),
        host=str(data.get("host") or ""),
        status="running",
        changed=False,
        started=started,
        duration=None,
    )
