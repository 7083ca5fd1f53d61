"""Which kinds of object a role works with (makes or reads): the ``resources`` of its CRD in the
ClusterServiceVersion.

Read from the role's tasks and templates as text, since templates are Jinja, not YAML: every
mapping that names a literal ``kind`` and an ``apiVersion`` (or the k8s modules' ``api_version``)
at the same indentation, within a few lines of each other. Kinds written as Jinja expressions,
and the role's own CR (read for its status), are left out; what this misses, the author adds to
the base ClusterServiceVersion, where it is kept.
"""

from __future__ import annotations

import re
from pathlib import Path

from ansible_operator.scaffold.csv import Resource

_KEY = re.compile(r"^(?P<indent>[ -]*)(?P<key>kind|apiVersion|api_version):\s*(?P<value>\S.*?)\s*$")
_NEAR = 6  # lines between the two keys of one mapping, at most
_LITERAL = re.compile(r"^[\"']?([A-Za-z0-9./-]+)[\"']?$")
_SOURCES = ("tasks", "templates", "handlers")


def _keys(text: str) -> list[tuple[int, int, str, str]]:
    """(line, indentation, key, literal value) of each kind/apiVersion line outside comments."""
    found = []
    for number, line in enumerate(text.splitlines()):
        m = _KEY.match(line)
        literal = _LITERAL.match(m.group("value")) if m else None
        if m and literal:
            key = "kind" if m.group("key") == "kind" else "apiVersion"
            found.append((number, len(m.group("indent")), key, literal.group(1)))
    return found


def in_text(text: str) -> list[Resource]:
    """The (kind, apiVersion) pairs one file's mappings name, in order."""
    keys = _keys(text)
    found: list[Resource] = []
    for line, indent, key, value in keys:
        if key != "kind":
            continue
        versions = [
            v for n, i, k, v in keys if k == "apiVersion" and i == indent and abs(n - line) <= _NEAR
        ]
        if versions and Resource(value, versions[0]) not in found:
            found.append(Resource(value, versions[0]))
    return found


def made_by(role_dir: Path, own_kinds: set[str]) -> list[Resource]:
    """The kinds the role's files name, less the operator's own kinds, sorted."""
    found: set[Resource] = set()
    for sub in _SOURCES:
        for path in sorted((role_dir / sub).rglob("*")) if (role_dir / sub).is_dir() else []:
            if path.is_file():
                try:
                    found.update(in_text(path.read_text(encoding="utf-8")))
                except (OSError, UnicodeDecodeError):
                    continue
    return sorted((r for r in found if r.kind not in own_kinds), key=lambda r: (r.kind, r.version))
