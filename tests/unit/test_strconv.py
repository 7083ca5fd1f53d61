"""Go's strconv as the package reproduces it; every expected value was printed by Go 1.x's
strconv (Quote, Atoi, ParseInt(s, 0, 64), ParseBool)."""

from __future__ import annotations

import pytest

from ansible_operator.gocompat.strconv import atoi, parse_bool, parse_int, quote


@pytest.mark.parametrize(
    ("raw", "quoted"),
    [
        ("abc", '"abc"'),
        ('a"b', '"a\\"b"'),
        ("a\\b", '"a\\\\b"'),
        ("a\nb", '"a\\nb"'),
        ("\x01", '"\\x01"'),
        ("\a\b\f\v\t\r", '"\\a\\b\\f\\v\\t\\r"'),
        ("\x7f", '"\\x7f"'),
        ("é 日本", '"é 日本"'),
        ("\u0085", '"\\u0085"'),
        ("\u00a0", '"\\u00a0"'),
        ("\u2028", '"\\u2028"'),
        ("\U0001f600", '"\U0001f600"'),
        ("\U000e0001", '"\\U000e0001"'),
        ("\udc80", '"\\x80"'),  # the byte 0x80 as os.environ decodes it
        ("\ud800", '"\\ufffd"'),  # no valid rune: Go escapes utf8.RuneError
    ],
)
def test_quote(raw: str, quoted: str) -> None:
    assert quote(raw) == quoted


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("42", 42),
        ("-42", -42),
        ("+42", 42),
        ("007", 7),
        ("-0", 0),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
    ],
)
def test_atoi(text: str, value: int) -> None:
    assert atoi(text) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'strconv.Atoi: parsing "": invalid syntax'),
        ("+", 'strconv.Atoi: parsing "+": invalid syntax'),
        ("0x10", 'strconv.Atoi: parsing "0x10": invalid syntax'),
        ("1_000", 'strconv.Atoi: parsing "1_000": invalid syntax'),
        ("1e3", 'strconv.Atoi: parsing "1e3": invalid syntax'),
        ("42\n", 'strconv.Atoi: parsing "42\\n": invalid syntax'),
        # a full-width digit, which Python's int() would accept
        ("\uff11", 'strconv.Atoi: parsing "\uff11": invalid syntax'),
        ("9223372036854775808", 'strconv.Atoi: parsing "9223372036854775808": value out of range'),
        (
            "-9223372036854775809",
            'strconv.Atoi: parsing "-9223372036854775809": value out of range',
        ),
    ],
)
def test_atoi_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        atoi(text)
    assert str(excinfo.value) == message


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("42", 42),
        ("-42", -42),
        ("+42", 42),
        ("0x1F", 31),
        ("0X1f", 31),
        ("0x_1f", 31),
        ("0o17", 15),
        ("017", 15),
        ("0_17", 15),
        ("0b101", 5),
        ("1_000", 1000),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("-0x8000000000000000", -(2**63)),
    ],
)
def test_parse_int(text: str, value: int) -> None:
    assert parse_int(text) == value


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "invalid syntax"),
        ("-", "invalid syntax"),
        ("1.5", "invalid syntax"),
        ("089", "invalid syntax"),
        ("0x", "invalid syntax"),
        ("0x_", "invalid syntax"),
        ("0_", "invalid syntax"),
        ("_1", "invalid syntax"),
        ("1__0", "invalid syntax"),
        (" 1", "invalid syntax"),
        ("\uff11", "invalid syntax"),
        ("9223372036854775808", "value out of range"),
        ("0x8000000000000000", "value out of range"),
    ],
)
def test_parse_int_errors(text: str, problem: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        parse_int(text)
    assert str(excinfo.value) == f'strconv.ParseInt: parsing "{text}": {problem}'


def test_parse_int_error_quotes_like_go() -> None:
    with pytest.raises(ValueError) as excinfo:
        parse_int("17\n")
    assert str(excinfo.value) == 'strconv.ParseInt: parsing "17\\n": invalid syntax'


@pytest.mark.parametrize(
    ("text", "value"),
    [(t, True) for t in ("1", "t", "T", "TRUE", "true", "True")]
    + [(f, False) for f in ("0", "f", "F", "FALSE", "false", "False")],
)
def test_parse_bool(text: str, value: bool) -> None:
    assert parse_bool(text) is value


@pytest.mark.parametrize("text", ["", "yes", "no", "tRUE", "on", "2"])
def test_parse_bool_errors(text: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        parse_bool(text)
    assert str(excinfo.value) == f'strconv.ParseBool: parsing "{text}": invalid syntax'
