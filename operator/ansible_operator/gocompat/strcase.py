"""camelCase → snake_case for CR spec keys, byte-for-byte what upstream hands to roles.

Roles written for the Go operator read `spec.sizeK8sBuckets` as `size_k8s_buckets` and
`spec.egressIPs` as `egress_ips`, surprises included, so the conversion reproduces upstream's
algorithm (an iancoleman/strcase derivative with special handling of HTTP, URL and IP) rather
than a "nicer" one. The only departure is that an empty key converts to "" instead of crashing.
"""

from __future__ import annotations

import re
from typing import Any

# A letter, a run of digits, then a letter followed by digits: "a1b2" -> "a 1 b2".
_NUMBER_SEQUENCE = re.compile(r"([a-zA-Z])(\d+)([a-zA-Z](\d+))")

# Acronyms that become words of their own. Upstream iterates a Go map (random order); every
# known vector gives the same result in any order, so a fixed order is used here.
_SPECIAL_WORDS = ("HTTP", "URL", "IP")
_SPECIAL_LOWER = frozenset(w.lower() for w in _SPECIAL_WORDS)
_DELIMITERS = " _-"


def _is_upper(c: str) -> bool:
    return "A" <= c <= "Z"


def _is_lower(c: str) -> bool:
    return "a" <= c <= "z"


def _isolate_word(s: str, word: str) -> str:
    """Surround the first occurrence of `word` with underscores; a trailing `s` joins it as `S`."""
    start = s.find(word)
    if start < 0:
        return s
    end = start + len(word)  # index just past the word
    before, after = s[:start], s[end:]
    if not after:
        return f"{before}_{word}"
    if after[0] == "s":
        rest = after[1:]
        if not rest:
            return f"{before}_{word}S"
        if start == 0:
            return f"{word}S_{rest}"
        return f"{before}_{word}S_{rest}"
    if start == 0:
        return f"{word}_{after}"
    return f"{before}_{word}_{after}"


def _split_words(s: str) -> list[str]:
    """Split on delimiters and case changes, the way upstream's scanner does."""
    words: list[str] = []
    current = ""
    pos = -1  # position of the current character within the current word
    for i, c in enumerate(s):
        pos += 1
        nxt = s[i + 1] if i + 1 < len(s) else ""
        case_changes = bool(nxt) and (
            (_is_upper(c) and _is_lower(nxt)) or (_is_lower(c) and _is_upper(nxt))
        )
        if pos > 0 and case_changes and not current.endswith("_"):
            if _is_upper(c):
                # "JSONData": the "D" starts a new word.
                words.append(current.lower())
                current = c
                pos = 0
            else:
                # "egressIP": the "s" ends the current word.
                words.append((current + c).lower())
                current = ""
                pos = -1
        elif c in _DELIMITERS:
            words.append(current.lower())
            current = ""
            pos = -1
        else:
            current += c
    words.append(current.lower())
    return words


def to_snake(key: str) -> str:
    """Convert one key to upstream's snake_case: `ThisIsIt` → `_this_is_it`."""
    return _to_snake(key, _SPECIAL_WORDS)


def _to_snake(key: str, special_words: tuple[str, ...]) -> str:
    s = _NUMBER_SEQUENCE.sub(lambda m: f"{m[1]} {m[2]} {m[3]}", key).strip(" ")
    if not s:
        return ""  # upstream panics on an empty key
    prefix = "_" if _is_upper(s[0]) else ""
    for word in special_words:
        s = _isolate_word(s, word)
    words = _split_words(s)
    joined = "_".join(words)
    if words[0] in _SPECIAL_LOWER:
        return joined
    return prefix + joined


def map_to_snake(obj: Any) -> Any:
    """Return a copy of `obj` with every mapping key converted by `to_snake`, at every depth.

    Lists are descended into; other values are returned as they are. When two keys convert to the
    same name, a key that was already in that form wins; otherwise the later key wins (upstream
    picks at random through Go map order).
    """
    if isinstance(obj, dict):
        result: dict[Any, Any] = {}
        verbatim: set[str] = set()
        for key, value in obj.items():
            if not isinstance(key, str):
                result[key] = map_to_snake(value)
                continue
            new_key = to_snake(key)
            if new_key in verbatim and new_key != key:
                continue
            if new_key == key:
                verbatim.add(new_key)
            result[new_key] = map_to_snake(value)
        return result
    if isinstance(obj, list):
        return [map_to_snake(item) for item in obj]
    return obj
