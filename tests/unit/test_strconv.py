"""Go's strconv.Atoi: exactly Go's syntax and range, Go's error messages."""

from __future__ import annotations

import pytest

from ansible_operator.gocompat.strconv import atoi


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("42", 42),
        ("-42", -42),
        ("+42", 42),
        ("007", 7),
        ("9223372036854775807", 2**63 - 1),
    ],
)
def test_atoi(text: str, value: int) -> None:
    assert atoi(text) == value


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "invalid syntax"),
        ("+", "invalid syntax"),
        ("0x10", "invalid syntax"),
        ("1e3", "invalid syntax"),
        ("\uff11", "invalid syntax"),  # a full-width digit, which Python's int() would accept
        ("5\n", "invalid syntax"),  # a trailing newline, which a `$` regex would let through
        ("9223372036854775808", "value out of range"),
        ("-9223372036854775809", "value out of range"),
    ],
)
def test_atoi_errors(text: str, problem: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        atoi(text)
    assert str(excinfo.value).endswith(problem)
    assert str(excinfo.value).startswith("strconv.Atoi: parsing ")
