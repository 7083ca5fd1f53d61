"""Go duration strings (`"30s"`, `"1h2m"`, `"1.5h"`) in watches.yaml, flags and annotations.

Everything upstream configures with `time.ParseDuration`, so this module accepts exactly that
grammar and reports errors with Go's wording (`time: invalid duration "x"`), which users and tests
grep for. Parsing works in integer nanoseconds, as Go does, and converts to float seconds last.
"""

from __future__ import annotations

from ansible_operator.gocompat.strconv import quote

_NANOSECOND = 1
_MICROSECOND = 1_000 * _NANOSECOND
_MILLISECOND = 1_000 * _MICROSECOND
_SECOND = 1_000 * _MILLISECOND
_MINUTE = 60 * _SECOND
_HOUR = 60 * _MINUTE

_UNITS: dict[str, int] = {
    "ns": _NANOSECOND,
    "us": _MICROSECOND,
    "\u00b5s": _MICROSECOND,  # U+00B5 micro sign
    "\u03bcs": _MICROSECOND,  # U+03BC Greek small letter mu
    "ms": _MILLISECOND,
    "s": _SECOND,
    "m": _MINUTE,
    "h": _HOUR,
}

_MAX_DURATION = (1 << 63) - 1  # Go's time.Duration is an int64 of nanoseconds
_DIGITS = "0123456789"


def _invalid(orig: str) -> ValueError:
    return ValueError(f"time: invalid duration {quote(orig)}")


def _leading_fraction(digits: str) -> tuple[int, float]:
    """Go's leadingFraction: the digits as an integer and 10**count, ignoring digits that
    would overflow int64."""
    value, scale = 0, 1.0
    for ch in digits:
        if value > ((1 << 63) - 1) // 10:
            break
        candidate = value * 10 + int(ch)
        if candidate > 1 << 63:
            break
        value = candidate
        scale *= 10
    return value, scale


def parse_go_duration_ns(s: str) -> int:
    """Parse a Go duration string into integer nanoseconds (may be negative).

    Raises ValueError with Go's message for anything `time.ParseDuration` rejects.
    """
    orig = s
    neg = False
    if s and s[0] in "+-":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise _invalid(orig)

    total = 0
    while s:
        if s[0] != "." and s[0] not in _DIGITS:
            raise _invalid(orig)
        # Integer part.
        i = 0
        while i < len(s) and s[i] in _DIGITS:
            i += 1
        whole_digits, s = s[:i], s[i:]
        whole = int(whole_digits) if whole_digits else 0
        if whole > _MAX_DURATION + 1:
            raise _invalid(orig)
        # Fraction part.
        frac_digits = ""
        has_point = bool(s) and s[0] == "."
        if has_point:
            s = s[1:]
            j = 0
            while j < len(s) and s[j] in _DIGITS:
                j += 1
            frac_digits, s = s[:j], s[j:]
        if not whole_digits and not frac_digits:
            raise _invalid(orig)  # no digits at all, e.g. ".s"
        # Unit: everything up to the next digit or '.'.
        k = 0
        while k < len(s) and s[k] != "." and s[k] not in _DIGITS:
            k += 1
        if k == 0:
            raise ValueError(f"time: missing unit in duration {quote(orig)}")
        unit_name, s = s[:k], s[k:]
        unit = _UNITS.get(unit_name)
        if unit is None:
            raise ValueError(f"time: unknown unit {quote(unit_name)} in duration {quote(orig)}")
        if whole > (1 << 63) // unit:
            raise _invalid(orig)
        value = whole * unit
        fraction, scale = _leading_fraction(frac_digits)
        if fraction > 0:
            # float64 arithmetic, exactly as Go does it ("0.3333333333333333333h" is 20m).
            value += int(float(fraction) * (float(unit) / scale))
            if value > 1 << 63:
                raise _invalid(orig)
        total += value
        if total > 1 << 63:
            raise _invalid(orig)

    if neg:
        return -total
    if total > _MAX_DURATION:
        raise _invalid(orig)
    return total


def parse_go_duration(s: str) -> float:
    """Parse a Go duration string (`"1h30m"`, `"1.5s"`, `"-2ms"`, `"0"`) into float seconds."""
    return parse_go_duration_ns(s) / _SECOND


def _format_fraction(value: int, precision: int) -> tuple[str, int]:
    """Split `value` into an integer part and up to `precision` fractional digits (Go's fmtFrac)."""
    digits = []
    printed = False
    for _ in range(precision):
        digit = value % 10
        printed = printed or digit != 0
        if printed:
            digits.append(str(digit))
        value //= 10
    frac = "." + "".join(reversed(digits)) if printed else ""
    return frac, value


def format_go_duration(seconds: float) -> str:
    """Format seconds like Go's `Duration.String()`: `10h0m0s`, `1.5s`, `500ms`, `0s`."""
    ns = round(seconds * _SECOND)
    return format_go_duration_ns(ns)


def format_go_duration_ns(ns: int) -> str:
    """Format integer nanoseconds like Go's `Duration.String()`."""
    if ns == 0:
        return "0s"
    neg = ns < 0
    u = -ns if neg else ns
    if u < _SECOND:
        # Sub-second: use the largest unit that keeps a leading non-zero digit.
        if u < _MICROSECOND:
            text = f"{u}ns"
        elif u < _MILLISECOND:
            frac, whole = _format_fraction(u, 3)
            text = f"{whole}{frac}\u00b5s"
        else:
            frac, whole = _format_fraction(u, 6)
            text = f"{whole}{frac}ms"
    else:
        frac, whole_seconds = _format_fraction(u, 9)
        text = f"{whole_seconds % 60}{frac}s"
        minutes = whole_seconds // 60
        if minutes > 0:
            text = f"{minutes % 60}m{text}"
            hours = minutes // 60
            if hours > 0:
                text = f"{hours}h{text}"
    return "-" + text if neg else text
