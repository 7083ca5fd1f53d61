"""Log Ansible job events as the Go operator does (`--ansible-log-events`), through `logging`.

Upstream's lines are kept word for word (`[playbook task start]`, `[playbook debug]`,
`[playbook task failed]`, the `Ansible Task StdOut` and status/debug banners) because users and
tests grep for them. Unlike upstream, which printed the banners straight to stdout between its
JSON lines, every block here is one log record with its fields in `extra={"fields": ...}` (the
convention of `ansible_operator.runtime.observe.logs`), so a JSON formatter keeps one object per
line. Records carry `event_type` and `job`; the CR's kind, namespace and name come from the
caller's logging context (or adapter).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ansible_operator.runner.output import NoLogOutput, strip_ansi, without_lines
from ansible_operator.runner.types import Logger

TASK_STDOUT_BANNER = (
    "--------------------------- Ansible Task StdOut -------------------------------"
)
TASK_STDOUT_END = "-------------------------------------------------------------------------------"
_QUIET_ACTIONS = frozenset(
    {
        f"{prefix}{action}"
        for action in ("set_fact", "debug")
        for prefix in ("", "ansible.builtin.", "ansible.legacy.")
    }
)
_DEBUG_ACTIONS = frozenset({"debug", "ansible.builtin.debug", "ansible.legacy.debug"})


class LogEventsMode(enum.Enum):
    """Which job events are logged: the tasks (default), every event, or none."""

    TASKS = "tasks"
    EVERYTHING = "everything"
    NOTHING = "nothing"

    @classmethod
    def parse(cls, value: str) -> LogEventsMode:
        """Case-insensitive `Tasks`, `Everything` or `Nothing`; ValueError otherwise.

        Upstream logs an error for anything else and uses Tasks; that is the caller's move.
        """
        try:
            return cls(value.strip().lower())
        except ValueError:
            raise ValueError(
                f"invalid --ansible-log-events value {value!r}: use Tasks, Everything or Nothing"
            ) from None


def emit(
    logger: Logger,
    level: int,
    message: str,
    fields: Mapping[str, Any] | None = None,
    *,
    exc_info: bool = False,
) -> None:
    """Log `message` with structured `fields`, the project's way: `extra={"fields": {...}}`.

    Through a `LoggerAdapter` the adapter's fields are merged in (the call's win): the standard
    adapter of Python 3.11 would otherwise replace a call's `extra` with its own.
    """
    merged: dict[str, Any] = {}
    base: Any = logger
    if isinstance(logger, logging.LoggerAdapter):
        adapter_extra = dict(logger.extra or {})
        nested = adapter_extra.pop("fields", None)
        merged.update(adapter_extra)
        if isinstance(nested, Mapping):
            merged.update(nested)
        base = logger.logger
    merged.update(fields or {})
    base.log(level, message, extra={"fields": merged}, exc_info=exc_info, stacklevel=2)


class EventLogger:
    """An `on_event` callback that logs one run's events in the chosen mode.

    `verbosity` is upstream's: the CR's verbosity annotation if > 0, else `ANSIBLE_VERBOSITY`
    if > 0, else 0. Above 0, Tasks mode logs each task event's raw stdout instead of the
    summaries. What a `no_log` task displays while it runs is never logged (output.NoLogOutput).
    """

    def __init__(
        self,
        mode: LogEventsMode,
        *,
        logger: Logger,
        ident: str,
        gvk: str = "",
        verbosity: int = 0,
    ) -> None:
        self.mode = mode
        self.logger = logger
        self.ident = ident
        self.gvk = gvk
        self.verbosity = verbosity
        self._no_log = NoLogOutput()

    def __call__(self, event: Mapping[str, Any]) -> None:
        if self.mode is LogEventsMode.NOTHING:
            return
        for shown in self._no_log.feed(event):
            self._log(shown)

    def _log(self, event: Mapping[str, Any]) -> None:
        kind = str(event.get("event", ""))
        raw_data = event.get("event_data")
        data: Mapping[str, Any] = raw_data if isinstance(raw_data, Mapping) else {}
        fields: dict[str, Any] = {"event_type": kind, "job": self.ident}
        if self.gvk:
            fields["gvk"] = self.gvk
        if self.mode is LogEventsMode.EVERYTHING:
            emit(self.logger, logging.INFO, kind, {**fields, "EventData": dict(data)})
            self._stdout_block(event, fields)
            return
        if "task" not in data:
            return
        action = data.get("task_action")
        if self.verbosity > 0:
            stdout = _clean(str(event.get("stdout") or ""))
            if stdout:
                emit(self.logger, logging.INFO, stdout, fields)
        elif kind == "playbook_on_task_start" and action not in _QUIET_ACTIONS:
            emit(
                self.logger,
                logging.INFO,
                "[playbook task start]",
                {**fields, "EventData.Name": data.get("name")},
            )
            self._stdout_block(event, fields)
        elif kind == "runner_on_ok" and action in _DEBUG_ACTIONS:
            emit(
                self.logger,
                logging.INFO,
                "[playbook debug]",
                {**fields, "EventData.TaskArgs": data.get("task_args")},
            )
            self._stdout_block(event, fields)
        elif kind == "runner_item_on_ok":
            self._stdout_block(event, fields)
        elif kind == "runner_on_failed":
            failed = {
                **fields,
                "EventData.Task": data.get("task"),
                "EventData.TaskArgs": data.get("task_args"),
            }
            if "task_path" in data:
                failed["EventData.FailedTaskPath"] = data.get("task_path")
            emit(self.logger, logging.ERROR, "[playbook task failed]", failed)
            self._stdout_block(event, fields)

    def _stdout_block(self, event: Mapping[str, Any], fields: Mapping[str, Any]) -> None:
        stdout = _clean(str(event.get("stdout") or ""))
        if not stdout:
            return
        lines = [TASK_STDOUT_BANNER]
        if event.get("event") != "playbook_on_task_start":
            raw_data = event.get("event_data")
            task = raw_data.get("task") if isinstance(raw_data, Mapping) else None
            lines += ["", f" TASK [{task}] ******************************** "]
        lines += [stdout, "", TASK_STDOUT_END]
        emit(self.logger, logging.INFO, "\n".join(lines), fields)


def banner(title: str, body: str) -> str:
    """Upstream's `----- <title right-aligned in 70> -----` block around `body`."""
    return f"----- {title:>70} -----\n\n{body}\n\n----------"


def log_stats_stdout(
    logger: Logger, stats_stdout: str, *, gvk: str, name: str, namespace: str, ident: str = ""
) -> None:
    """The PLAY RECAP of a run in upstream's `Ansible Task Status Event StdOut` banner."""
    text = _clean(stats_stdout)
    if not text:
        return
    title = f"Ansible Task Status Event StdOut ({gvk}, {name}/{namespace})"
    emit(logger, logging.INFO, banner(title, text), {"job": ident} if ident else {})


def log_debug_result(
    logger: Logger,
    stdout_path: Path,
    *,
    gvk: str,
    name: str,
    namespace: str,
    ident: str = "",
    hidden: frozenset[bytes] = frozenset(),
) -> None:
    """A run's whole stdout in upstream's `Ansible Debug Result` banner (ANSIBLE_DEBUG_LOGS),
    without the `hidden` lines (`RunOutcome.hidden_output`)."""
    try:
        text = _clean(Path(stdout_path).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return
    text = without_lines(text, hidden)
    if not text:
        return
    title = f"Ansible Debug Result ({gvk}, {name}/{namespace})"
    emit(logger, logging.INFO, banner(title, text), {"job": ident} if ident else {})


def _clean(text: str) -> str:
    """Ansible's terminal output made fit for a log record: no colour codes, no CRs."""
    return strip_ansi(text).replace("\r\n", "\n").replace("\r", "\n").strip("\n")
