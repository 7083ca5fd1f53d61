"""JSON from the API server, decoded whatever its depth.

Python's decoder recurses once per level and raises RecursionError past about 1,500, a depth
the API server stores (it allows 10,000). One such object in a list page or a watch would fail
every read of its kind; instead, what sits deeper than ``CUT_DEPTH`` is replaced by ``CUT`` (the
API server's own data is never written back from such a copy: the informer skips an object nested
past ``core.objects.MAX_OBJECT_DEPTH`` and the reconciler refuses its spec).
"""

from __future__ import annotations

import json
import re
from typing import Any

CUT_DEPTH = 256  # deeper than core.objects.MAX_OBJECT_DEPTH, far from the decoder's limit
CUT = "<nested too deep: not read>"
# A string (escapes included), or a bracket: what the depth of a JSON text is counted on.
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


def loads(raw: bytes) -> Any:
    """``json.loads``, but a text too deep for it is decoded with its deepest parts cut."""
    try:
        return json.loads(raw)
    except RecursionError:
        return json.loads(cut_deeper_than(raw, CUT_DEPTH))


def cut_deeper_than(raw: bytes, limit: int) -> bytes:
    """`raw` with each array or object that opens more than `limit` levels deep replaced by
    the string CUT. A text that is not JSON stays as broken as it was."""
    kept: list[bytes] = []
    depth, start, cut_from = 0, 0, -1
    for token in _TOKENS.finditer(raw):
        bracket = token.group()
        if bracket in (b"[", b"{"):
            depth += 1
            if depth == limit + 1 and cut_from < 0:
                cut_from = token.start()
        elif bracket in (b"]", b"}"):
            if depth == limit + 1 and cut_from >= 0:
                kept += [raw[start:cut_from], json.dumps(CUT).encode()]
                start, cut_from = token.end(), -1
            depth -= 1
    kept.append(raw[start:])
    return b"".join(kept)
