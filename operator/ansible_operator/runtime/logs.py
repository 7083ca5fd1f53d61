"""Log lines: JSON objects by default (as upstream's zap production mode), console text on request.

Every line written while an object is being reconciled carries its kind, namespace and name,
taken from a context variable that the controller sets, so no call site has to pass them.
Fields given with ``extra={...}`` are merged into the JSON object.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

_current_object: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "current_object", default=None
)

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "error": logging.ERROR}


@contextlib.contextmanager
def object_context(kind: str, namespace: str, name: str, **more: str) -> Iterator[None]:
    """Within this block every log line names the object."""
    fields = {"kind": kind, "namespace": namespace, "name": name, **more}
    token = _current_object.set(fields)
    try:
        yield
    finally:
        _current_object.reset(token)


# Attributes every LogRecord has, and kopf's internal ones; anything else came from ``extra=``.
_NOT_FIELDS = set(vars(logging.makeLogRecord({}))) | {
    "message",
    "asctime",
    "taskName",
    "settings",
    "k8s_skip",
    "k8s_ref",
}


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields: dict[str, Any] = dict(_current_object.get() or {})
    for key, value in vars(record).items():
        if key == "fields" and isinstance(value, dict):
            fields.update(value)
        elif key not in _NOT_FIELDS:
            fields[key] = value
    return fields


def _timestamp(record: logging.LogRecord) -> str:
    moment = datetime.datetime.fromtimestamp(record.created, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "level": record.levelname.lower(),
            "ts": _timestamp(record),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        line.update(_fields(record))
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class ConsoleFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields = _fields(record)
        obj = ""
        if "kind" in fields:
            kind, ns, name = fields.pop("kind"), fields.pop("namespace"), fields.pop("name")
            obj = f" {kind} {ns + '/' if ns else ''}{name}"
        rest = " ".join(f"{k}={v}" for k, v in fields.items())
        text = (
            f"{_timestamp(record)} {record.levelname:<5} {record.name}{obj}: {record.getMessage()}"
        )
        if rest:
            text += f"  {rest}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def configure(*, encoder: str = "json", level: str = "info") -> None:
    """Send every log line to stderr in the chosen format; kopf's own chatter at warning."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(ConsoleFormatter() if encoder == "console" else JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(LEVELS.get(level, logging.INFO))
    # kopf reports each handler call at info level: noise here, where handlers only enqueue.
    logging.getLogger("kopf").setLevel(logging.WARNING)
    logging.getLogger("aiohttp").setLevel(logging.WARNING)
