"""Log lines: JSON objects by default (as upstream's zap production mode), console text on request.

Every line written while an object is being reconciled carries its kind, namespace and name
(and, when traces are on, the trace and span ids of its reconcile),
taken from a context variable that the controller sets, so no call site has to pass them.
Fields given with ``extra={...}`` are merged into the JSON object. As zap does, lines at or above
a level carry the stack of the call that logged them (``stacktrace``), and the time is encoded
as ``--zap-time-encoding`` says (always in UTC).
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import json
import logging
import sys
import traceback
from collections.abc import Callable, Iterator
from typing import Any

_current_object: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "current_object", default=None
)

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "error": logging.ERROR}
# zap's levels for --zap-stacktrace-level; Python's highest level stands for zap's panic.
STACKTRACE_LEVELS = {
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "panic": logging.CRITICAL,
}


@contextlib.contextmanager
def object_context(kind: str, namespace: str, name: str, **more: str) -> Iterator[None]:
    """Within this block every log line names the object."""
    fields = {"kind": kind, "namespace": namespace, "name": name, **more}
    token = _current_object.set(fields)
    try:
        yield
    finally:
        _current_object.reset(token)


@contextlib.contextmanager
def more_context(**fields: str) -> Iterator[None]:
    """Within this block every log line carries these fields too (a trace's ids, say)."""
    token = _current_object.set({**(_current_object.get() or {}), **fields})
    try:
        yield
    finally:
        _current_object.reset(token)


# Attributes every LogRecord has; anything else came from ``extra=``.
_NOT_FIELDS = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields: dict[str, Any] = dict(_current_object.get() or {})
    for key, value in vars(record).items():
        if key == "fields" and isinstance(value, dict):
            fields.update(value)
        elif key not in _NOT_FIELDS:
            fields[key] = value
    return fields


def _iso8601(record: logging.LogRecord) -> str:
    moment = datetime.datetime.fromtimestamp(record.created, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _rfc3339(record: logging.LogRecord) -> str:
    moment = datetime.datetime.fromtimestamp(int(record.created), datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _rfc3339nano(record: logging.LogRecord) -> str:
    """Go's RFC3339Nano: the fraction without trailing zeros, and none at all when zero."""
    nanos = round(record.created * 1e9)
    seconds, fraction = divmod(nanos, 10**9)
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    digits = f"{fraction:09d}".rstrip("0")
    return f"{moment}.{digits}Z" if digits else f"{moment}Z"


# --zap-time-encoding: zap's time encoders (numbers for the epoch ones, as zap writes them).
TIME_ENCODERS: dict[str, Callable[[logging.LogRecord], str | float | int]] = {
    "epoch": lambda record: record.created,
    "millis": lambda record: record.created * 1000,
    "nanos": lambda record: round(record.created * 1e9),
    "iso8601": _iso8601,
    "rfc3339": _rfc3339,
    "rfc3339nano": _rfc3339nano,
}
DEFAULT_TIME_ENCODING = "iso8601"


def _call_stack() -> str:
    """The stack of the call that logged, without the logging machinery's own frames."""
    frames = traceback.extract_stack()
    while frames and frames[-1].filename in (logging.__file__, __file__):
        frames.pop()
    return "".join(traceback.format_list(frames)).rstrip("\n")


class StacktraceFilter(logging.Filter):
    """Attach the call stack to records at or above ``level`` (zap's ``stacktrace`` field)."""

    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= self.level and not record.stack_info:
            record.stack_info = _call_stack()
        return True


class _Formatter(logging.Formatter):
    def __init__(self, time_encoding: str = DEFAULT_TIME_ENCODING) -> None:
        super().__init__()
        self._time = TIME_ENCODERS[time_encoding]


class JsonFormatter(_Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "level": record.levelname.lower(),
            "ts": self._time(record),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        line.update(_fields(record))
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stacktrace"] = record.stack_info
        return json.dumps(line, default=str)


class ConsoleFormatter(_Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields = _fields(record)
        obj = ""
        if "kind" in fields:
            kind, ns, name = fields.pop("kind"), fields.pop("namespace"), fields.pop("name")
            obj = f" {kind} {ns + '/' if ns else ''}{name}"
        rest = " ".join(f"{k}={v}" for k, v in fields.items())
        text = (
            f"{self._time(record)} {record.levelname:<5} {record.name}{obj}: {record.getMessage()}"
        )
        if rest:
            text += f"  {rest}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        if record.stack_info:
            text += "\n" + record.stack_info
        return text


def configure(
    *,
    encoder: str = "json",
    level: str = "info",
    stacktrace_level: str = "error",
    time_encoding: str = DEFAULT_TIME_ENCODING,
) -> None:
    """Send every log line to stderr in the chosen format; aiohttp's own chatter at warning."""
    handler = logging.StreamHandler(sys.stderr)
    formatter = ConsoleFormatter if encoder == "console" else JsonFormatter
    handler.setFormatter(formatter(time_encoding))
    handler.addFilter(StacktraceFilter(STACKTRACE_LEVELS[stacktrace_level]))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(LEVELS.get(level, logging.INFO))
    logging.getLogger("aiohttp").setLevel(logging.WARNING)
