"""YAML files edited as text, so that their comments and layout survive: a block inserted
before a kubebuilder marker, an element appended to a top-level list. Each edit returns None when
the file does not have the shape it needs; the caller parses the result again to prove the edit
is what was meant (``new_api``).
"""

from __future__ import annotations

import re

import yaml


def insert_before_marker(text: str, marker: str, block: str) -> str | None:
    """`block` inserted on the lines just before `marker`; None without the marker."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.strip() == marker:
            return "".join(lines[:i]) + _ending_newline(block) + "".join(lines[i:])
    return None


def _ending_newline(block: str) -> str:
    return block if block.endswith("\n") else block + "\n"


def append_to_list(text: str, key: str, item: str) -> str | None:
    """`item` (YAML for one list element, without indentation) appended to the block sequence
    under the top-level `key`; None when the file does not have that shape."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if re.match(rf"^{re.escape(key)}:\s*$", ln)), -1)
    if start < 0:
        return None
    indent: str | None = None
    last = start
    for i in range(start + 1, len(lines)):
        stripped = lines[i].strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not lines[i][:1].isspace() and not stripped.startswith("- "):
            break  # the next top-level key
        if indent is None:
            match = re.match(r"^(\s*)- ", lines[i])
            if not match:
                return None
            indent = match.group(1)
        last = i
    indent = "  " if indent is None else indent
    cont = indent + "  "
    item_lines = item.rstrip("\n").splitlines()
    block = indent + "- " + item_lines[0] + "\n"
    block += "".join(cont + ln + "\n" for ln in item_lines[1:])
    head = "".join(lines[: last + 1])
    if not head.endswith("\n"):
        head += "\n"
    return head + block + "".join(lines[last + 1 :])


def entries_spaced(text: str) -> bool:
    """Whether the entries of a watches file are separated by blank lines."""
    return "\n\n- " in text


def last_key(text: str) -> str | None:
    node = yaml.compose(text)
    if isinstance(node, yaml.MappingNode) and node.value:
        return str(node.value[-1][0].value)
    return None
