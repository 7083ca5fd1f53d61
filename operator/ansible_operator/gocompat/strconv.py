"""Go's ``strconv`` where upstream uses it on user input: ``Atoi`` (CR annotations).

Accepts exactly Go's syntax (an optional sign and ASCII digits, within int64) and fails with
Go's message (``strconv.Atoi: parsing "x": invalid syntax``), which users see in logs.
"""

from __future__ import annotations

import re

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_DECIMAL = re.compile(r"[+-]?[0-9]+")


def quote(text: str) -> str:
    """Go's ``%q`` for the ASCII text of error messages: double quotes, backslash escapes."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def atoi(text: str) -> int:
    """Go's ``strconv.Atoi``; ValueError with Go's message when Go would fail."""
    if not _DECIMAL.fullmatch(text):
        raise ValueError(f"strconv.Atoi: parsing {quote(text)}: invalid syntax")
    value = int(text)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"strconv.Atoi: parsing {quote(text)}: value out of range")
    return value
