"""`dev run` shares its stdout and stderr with the operator it launches: each of its lines must
reach the stream in one write, or an unbuffered stream (`python -u`) lets an operator line fall
between a banner line and its newline (seen in CI: a sample's "condition met" glued to a log
line, and the count of met samples one short)."""

from __future__ import annotations

import pytest

from ansible_operator.dev import run


class Writes:
    """An unbuffered text stream that records each write."""

    def __init__(self) -> None:
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_each_line_is_one_write_on_stdout_and_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    out, err = Writes(), Writes()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    run._say("x.example.com/a condition met")
    run._say()
    run._progress("cluster ready")
    assert out.writes == ["x.example.com/a condition met\n", "\n"]
    assert err.writes == ["[dev-cluster] cluster ready\n"]
