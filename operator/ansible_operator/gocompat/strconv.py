"""Go's strconv as upstream's messages and parsers show it: Quote, Atoi, ParseInt, ParseBool.

Upstream's error messages quote the offending text with `strconv.Quote` (or `%q`, which is the
same) and its numbers come from `strconv`, so users and tests see Go's exact wording:
`strconv.Atoi: parsing "x": invalid syntax`. Every parser here raises ValueError with that text.
"""

from __future__ import annotations

import re

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}
_DECIMAL = re.compile(r"[+-]?[0-9]+")
_INT_BODY = {
    16: re.compile(r"[0-9a-fA-F]+(_[0-9a-fA-F]+)*"),
    10: re.compile(r"[0-9]+(_[0-9]+)*"),
    8: re.compile(r"[0-7]+(_[0-7]+)*"),
    2: re.compile(r"[01]+(_[01]+)*"),
}


def quote(s: str) -> str:
    """Go's `strconv.Quote`: double quotes, backslash escapes, non-printable runes as \\x, \\u
    or \\U (Python's `isprintable` and Go's `IsPrint` agree: letters, marks, numbers,
    punctuation, symbols and the ASCII space). Bytes that were not UTF-8, which Python keeps
    as surrogates in `os.environ` and `sys.argv`, come out as \\x escapes as Go's do."""
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (os.environ, argv)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF:  # any other surrogate is no valid rune: Go's U+FFFD
            out.append("\\ufffd")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _error(func: str, text: str, problem: str) -> ValueError:
    return ValueError(f"strconv.{func}: parsing {quote(text)}: {problem}")


def atoi(text: str) -> int:
    """Go's `strconv.Atoi`: an optional sign and decimal digits, within int64."""
    if not _DECIMAL.fullmatch(text):
        raise _error("Atoi", text, "invalid syntax")
    value = int(text)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise _error("Atoi", text, "value out of range")
    return value


def parse_int(text: str) -> int:
    """Go's `strconv.ParseInt(text, 0, 64)`, as pflag's int flags use it: `0x1f`, `017`,
    `0o17`, `0b101`, `1_000`, `0x_1f`."""
    body = text
    negative = False
    if body[:1] in ("+", "-"):
        negative = body[0] == "-"
        body = body[1:]
    prefix = body[:2].lower()
    if prefix == "0x":
        base, body = 16, body[2:]
    elif prefix == "0o":
        base, body = 8, body[2:]
    elif prefix == "0b":
        base, body = 2, body[2:]
    elif len(body) > 1 and body[0] == "0":
        base, body = 8, body[1:]
    else:
        base = 10
    if base != 10 and body.startswith("_"):
        body = body[1:]  # Go allows one underscore between a base prefix and the digits
    if not _INT_BODY[base].fullmatch(body):
        raise _error("ParseInt", text, "invalid syntax")
    value = int(body.replace("_", ""), base)
    value = -value if negative else value
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise _error("ParseInt", text, "value out of range")
    return value


def parse_bool(text: str) -> bool:
    """Go's `strconv.ParseBool`."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise _error("ParseBool", text, "invalid syntax")
