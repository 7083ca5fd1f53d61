"""Reading the role author's guide (docs/role-authors-guide.md): its code blocks and their claims.

Shared by the unit test of the guide (YAML, JSON, commands, examples, tables) and the runner test
(Ansible's syntax check of its task examples). A block's *claim* is the last "from `path`" in
the paragraph just before it: such a block must be an excerpt of that file. A *marker* is an
HTML comment (`<!-- name -->`, invisible when rendered) between the previous block and this one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
GUIDE = REPO / "docs" / "role-authors-guide.md"

_FENCE = re.compile(r"^```(\S*)\s*$")
_CLAIM = re.compile(r"\bfrom\s+`([^`]+)`", re.IGNORECASE)
_MARKER = re.compile(r"^<!--\s*(.+?)\s*-->$")


@dataclass(frozen=True)
class Block:
    lang: str
    text: str
    line: int  # of the opening fence, 1-based
    claim: str | None  # repository path the block says it comes from
    marker: str | None

    @property
    def where(self) -> str:
        return f"{GUIDE.name}:{self.line}"


def blocks(text: str | None = None) -> list[Block]:
    """Every fenced code block of the guide, in order."""
    lines = (GUIDE.read_text(encoding="utf-8") if text is None else text).splitlines()
    found: list[Block] = []
    paragraph: list[str] = []  # the last paragraph of text before the current line
    in_paragraph = False
    marker: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        fence = _FENCE.match(line)
        if fence is None:
            comment = _MARKER.match(line)
            if comment is not None:
                marker = comment.group(1)
            elif line:
                paragraph = [*paragraph, line] if in_paragraph else [line]
            in_paragraph = bool(line) and comment is None
            continue
        start = i
        body: list[str] = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        claims = _CLAIM.findall(" ".join(paragraph))
        found.append(
            Block(
                lang=fence.group(1),
                text="\n".join(body) + "\n",
                line=start,
                claim=claims[-1] if claims else None,
                marker=marker,
            )
        )
        paragraph, in_paragraph, marker = [], False, None
    return found


def is_task_list(document: Any) -> bool:
    """A list of Ansible tasks: mappings that each have a `name` (and are not plays)."""
    return (
        isinstance(document, list)
        and bool(document)
        and all(isinstance(t, dict) and "name" in t and "hosts" not in t for t in document)
    )
