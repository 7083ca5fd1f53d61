"""Log lines: zap's time encodings and stack traces (the --zap-time-encoding and
--zap-stacktrace-level flags)."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys

import pytest

from ansible_operator.runtime.observe import logs

# 2026-01-02T03:04:05.120000Z
MOMENT = 1767323045.12


def record(level: int = logging.INFO) -> logging.LogRecord:
    rec = logging.makeLogRecord({"name": "t", "levelno": level, "levelname": "INFO", "msg": "m"})
    rec.created = MOMENT
    return rec


@pytest.mark.parametrize(
    ("encoding", "expected"),
    [
        ("epoch", MOMENT),
        ("millis", MOMENT * 1000),
        ("nanos", 1767323045120000000),
        ("iso8601", "2026-01-02T03:04:05.120Z"),
        ("rfc3339", "2026-01-02T03:04:05Z"),
        ("rfc3339nano", "2026-01-02T03:04:05.12Z"),
    ],
)
def test_time_encodings(encoding, expected):
    line = json.loads(logs.JsonFormatter(encoding).format(record()))
    assert line["ts"] == pytest.approx(expected) if isinstance(expected, float) else expected
    assert type(line["ts"]) is type(expected)
    console = logs.ConsoleFormatter(encoding).format(record())
    assert console.startswith(f"{expected} INFO")


def test_rfc3339nano_drops_a_zero_fraction():
    rec = record()
    rec.created = 1767323045.0
    assert json.loads(logs.JsonFormatter("rfc3339nano").format(rec))["ts"] == (
        "2026-01-02T03:04:05Z"
    )


def log_at(level: int, stacktrace_level: str, formatter: logging.Formatter) -> str:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    handler.addFilter(logs.StacktraceFilter(logs.STACKTRACE_LEVELS[stacktrace_level]))
    logger = logging.getLogger(f"test-stacktrace-{level}-{stacktrace_level}")
    logger.propagate = False
    logger.handlers[:] = [handler]
    logger.setLevel(logging.DEBUG)

    def the_call_site() -> None:
        logger.log(level, "something")

    the_call_site()
    return out.getvalue()


@pytest.mark.parametrize(
    ("level", "stacktrace_level", "has_stack"),
    [
        (logging.INFO, "info", True),
        (logging.INFO, "error", False),
        (logging.WARNING, "warn", True),
        (logging.ERROR, "error", True),
        (logging.ERROR, "panic", False),
        (logging.CRITICAL, "panic", True),
    ],
)
def test_stack_traces_from_the_chosen_level(level, stacktrace_level, has_stack):
    line = json.loads(log_at(level, stacktrace_level, logs.JsonFormatter()))
    assert ("stacktrace" in line) is has_stack
    if has_stack:
        frames = line["stacktrace"].splitlines()
        # It ends at the line that logged, not inside the logging machinery.
        assert "in the_call_site" in frames[-2]
        assert "logger.log(level" in frames[-1]
        assert not any("logging/__init__.py" in frame for frame in frames)


def test_the_console_format_prints_the_stack_after_the_line():
    text = log_at(logging.ERROR, "error", logs.ConsoleFormatter())
    first, *rest = text.splitlines()
    assert " ERROR " in first and first.endswith("something")
    assert any("in the_call_site" in line for line in rest)


def run_operator(tmp_path, *flags):
    """`run` until it stops for the missing credentials, after logging the deprecation of
    --metrics-addr (a refused start logs nothing else before its one line)."""
    (tmp_path / "roles" / "r" / "tasks").mkdir(parents=True)
    (tmp_path / "watches.yaml").write_text(
        "- {version: v1, group: x.example.com, kind: F, role: r}\n"
    )
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "none")}
    result = subprocess.run(
        [sys.executable, "-m", "ansible_operator.cli", "run", "--metrics-addr=:8443", *flags],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    return [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]


def test_run_applies_the_zap_flags(tmp_path):
    lines = run_operator(tmp_path, "--zap-time-encoding=nanos", "--zap-stacktrace-level=info")
    logged = next(line for line in lines if line["msg"].startswith("Flag --metrics-addr"))
    assert isinstance(logged["ts"], int)
    assert "in prepare" in logged["stacktrace"]


def test_run_by_default_has_no_stack_on_info_lines(tmp_path):
    lines = run_operator(tmp_path)
    logged = next(line for line in lines if line["msg"].startswith("Flag --metrics-addr"))
    assert isinstance(logged["ts"], str) and "stacktrace" not in logged
