"""Go duration parsing and formatting, against the behaviour of Go's time package."""

from __future__ import annotations

import pytest

from ansible_operator.gocompat.durations import (
    format_go_duration,
    format_go_duration_ns,
    parse_go_duration,
    parse_go_duration_ns,
)


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [
        ("0", 0),
        ("+0", 0),
        ("-0", 0),
        ("0s", 0),
        ("5s", 5_000_000_000),
        ("30s", 30_000_000_000),
        ("1478s", 1478_000_000_000),
        ("-5s", -5_000_000_000),
        ("+5s", 5_000_000_000),
        ("-0.5s", -500_000_000),
        ("5.6s", 5_600_000_000),
        ("5.s", 5_000_000_000),
        (".5s", 500_000_000),
        ("1.0s", 1_000_000_000),
        ("1.004s", 1_004_000_000),
        ("100.00100s", 100_001_000_000),
        ("10ns", 10),
        ("11us", 11_000),
        ("12\u00b5s", 12_000),
        ("12\u03bcs", 12_000),
        ("13ms", 13_000_000),
        ("14s", 14_000_000_000),
        ("15m", 15 * 60_000_000_000),
        ("16h", 16 * 3_600_000_000_000),
        ("10h", 36_000_000_000_000),
        ("3h30m", 12_600_000_000_000),
        ("1h2m3s", 3_723_000_000_000),
        ("10.5s4m", 4 * 60_000_000_000 + 10_500_000_000),
        ("-2m3.4s", -(2 * 60_000_000_000 + 3_400_000_000)),
        ("1h2m3s4ms5us6ns", 3_723_004_005_006),
        ("39h9m14.425s", 140_954_425_000_000),
        ("52763797000ns", 52_763_797_000),
        ("0.3333333333333333333h", 1_200_000_000_000),
        ("9007199254740993ns", 9_007_199_254_740_993),
        ("9223372036854775807ns", 9_223_372_036_854_775_807),
        ("-9223372036854775808ns", -9_223_372_036_854_775_808),
        ("0.100000000000000000000h", 360_000_000_000),
        ("1.5h", 5_400_000_000_000),
    ],
)
def test_parse_valid(text: str, nanoseconds: int) -> None:
    assert parse_go_duration_ns(text) == nanoseconds
    assert parse_go_duration(text) == nanoseconds / 1e9


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("3", 'time: missing unit in duration "3"'),
        ("30", 'time: missing unit in duration "30"'),
        ("-", 'time: invalid duration "-"'),
        ("s", 'time: invalid duration "s"'),
        (".", 'time: invalid duration "."'),
        ("-.", 'time: invalid duration "-."'),
        (".s", 'time: invalid duration ".s"'),
        ("+.s", 'time: invalid duration "+.s"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("1sec", 'time: unknown unit "sec" in duration "1sec"'),
        ("1 s", 'time: unknown unit " s" in duration "1 s"'),
        ("1h 2m", 'time: unknown unit "h " in duration "1h 2m"'),
        ("abc", 'time: invalid duration "abc"'),
        ("1s-1s", 'time: unknown unit "s-" in duration "1s-1s"'),
        ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
        ("9223372036854775.808us", 'time: invalid duration "9223372036854775.808us"'),
        ("3000000h", 'time: invalid duration "3000000h"'),
        ('"5s"', 'time: invalid duration "\\"5s\\""'),
    ],
)
def test_parse_invalid(text: str, message: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        parse_go_duration(text)
    assert str(excinfo.value) == message


@pytest.mark.parametrize(
    ("nanoseconds", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (1_100, "1.1\u00b5s"),
        (2_200_000, "2.2ms"),
        (3_300_000_000, "3.3s"),
        (4 * 60_000_000_000 + 5_000_000_000, "4m5s"),
        (4 * 60_000_000_000 + 5_001_000_000, "4m5.001s"),
        (5 * 3_600_000_000_000 + 6 * 60_000_000_000 + 7_001_000_000, "5h6m7.001s"),
        (8 * 60_000_000_000 + 1, "8m0.000000001s"),
        (36_000_000_000_000, "10h0m0s"),
        (-1, "-1ns"),
        (-1_500_000_000, "-1.5s"),
        (500_000_000, "500ms"),
        (9_223_372_036_854_775_807, "2562047h47m16.854775807s"),
    ],
)
def test_format(nanoseconds: int, text: str) -> None:
    assert format_go_duration_ns(nanoseconds) == text


@pytest.mark.parametrize("seconds", [0.0, 0.5, 1.5, 30.0, 600.0, 36000.0, 3723.004])
def test_format_round_trips(seconds: float) -> None:
    assert parse_go_duration(format_go_duration(seconds)) == pytest.approx(seconds)
