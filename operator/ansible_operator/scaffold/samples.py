"""Sample CRs kept in step with their CRDs: fields of options that no longer exist are removed.

A sample under ``config/samples/`` is edited by hand (values, comments), so it is never
re-rendered: the lines of a stale field (and the comment lines right above it) are cut from the
text, found through the YAML node positions, and everything else stays byte for byte. A field is
stale when the spec schema has properties and none by that name; free-form parts are not looked
into. Pure: text and schemas in, text out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

PRESERVE = "x-kubernetes-preserve-unknown-fields"

# (apiVersion, kind) → the schema of that version's spec
Schemas = Mapping[tuple[str, str], Mapping[str, Any]]


class SampleError(Exception):
    """A sample that cannot be read or edited; one line."""


@dataclass(frozen=True)
class _Stale:
    path: str  # as the user reads it: spec.backend.oldName
    key: yaml.Node
    value: yaml.Node
    flow: bool  # inside a flow-style mapping ({a: 1, b: 2}): no lines of its own


def _scalar(node: yaml.Node | None) -> Any:
    return node.value if isinstance(node, yaml.ScalarNode) else None


def _get(node: yaml.MappingNode, key: str) -> yaml.Node | None:
    return next((v for k, v in node.value if _scalar(k) == key), None)


def _stale(node: yaml.Node, schema: Mapping[str, Any], path: str) -> list[_Stale]:
    """Fields under `node` that `schema` no longer has."""
    if schema.get(PRESERVE):
        return []
    if isinstance(node, yaml.SequenceNode) and isinstance(schema.get("items"), Mapping):
        found = []
        for i, item in enumerate(node.value):
            found += _stale(item, schema["items"], f"{path}[{i}]")
        return found
    properties = schema.get("properties")
    if not isinstance(node, yaml.MappingNode) or not isinstance(properties, Mapping):
        return []
    found = []
    for key, value in node.value:
        name = _scalar(key)
        if name not in properties:
            found.append(_Stale(f"{path}.{name}", key, value, bool(node.flow_style)))
        else:
            found += _stale(value, properties[name], f"{path}.{name}")
    return found


def _last_line(node: yaml.Node) -> int:
    """The last line a node's text occupies (block collections end where their last child does)."""
    if isinstance(node, yaml.MappingNode) and node.value and not node.flow_style:
        return _last_line(node.value[-1][1])
    if isinstance(node, yaml.SequenceNode) and node.value and not node.flow_style:
        return _last_line(node.value[-1])
    end = node.end_mark
    return end.line - 1 if end.column == 0 and end.line > node.start_mark.line else end.line


def prune(text: str, schemas: Schemas, *, where: str) -> tuple[str, list[str]]:
    """The sample's text without the fields its kinds' spec schemas no longer have, and those
    fields' paths (`kind/name: spec.x`)."""
    try:
        documents = list(yaml.compose_all(text))
    except yaml.YAMLError as err:
        raise SampleError(f"{where}: cannot read: {' '.join(str(err).split())}") from None
    lines = text.splitlines(keepends=True)
    cut: set[int] = set()
    removed: list[str] = []
    for doc in documents:
        if not isinstance(doc, yaml.MappingNode):
            continue
        api_version, kind = _scalar(_get(doc, "apiVersion")), _scalar(_get(doc, "kind"))
        schema = schemas.get((api_version, kind))
        spec = _get(doc, "spec")
        if schema is None or spec is None:
            continue
        metadata = _get(doc, "metadata")
        name = _scalar(_get(metadata, "name")) if isinstance(metadata, yaml.MappingNode) else None
        for stale in _stale(spec, schema, "spec"):
            shown = f"{kind}/{name or '?'}: {stale.path}"
            first, last = stale.key.start_mark.line, _last_line(stale.value)
            indent = stale.key.start_mark.column
            if stale.flow or lines[first][:indent].strip():
                raise SampleError(
                    f"{where}: {shown} is no longer an option but shares its line with other "
                    "fields; remove it by hand"
                )
            while first > 0 and lines[first - 1].strip().startswith("#"):
                if len(lines[first - 1]) - len(lines[first - 1].lstrip()) != indent:
                    break
                first -= 1
            cut.update(range(first, last + 1))
            removed.append(shown)
    return "".join(line for i, line in enumerate(lines) if i not in cut), removed
