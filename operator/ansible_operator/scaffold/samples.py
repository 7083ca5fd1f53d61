"""Sample CRs kept in step with their CRDs: fields of options that no longer exist are removed,
fields a CR must set are added, and what the API server would still refuse is said.

A sample under ``config/samples/`` is edited by hand (values, comments), so it is never
re-rendered: the lines of a stale field (and the comment lines right above it) are cut from the
text, found through the YAML node positions, and everything else stays byte for byte. A field is
stale when the spec schema has properties and none by that name; free-form parts are not looked
into. A field a CR must set (a required option, or one a constraint's rule needs) is added with
a placeholder (its default, its first choice, or an example of its type) and a comment saying
so. Then the sample is checked as the API server would: defaults, types, choices, required
fields and the CEL rules (``cel``). Pure: text and schemas in, text and findings out.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from ansible_operator.scaffold import cel

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


# --- valid samples: placeholders for what a CR must set, then the schema's verdict -------------

PLACEHOLDER_COMMENT = "# placeholder from the argument spec"
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}
_EXAMPLES: dict[str, Any] = {"string": "example", "integer": 1, "number": 1.0, "boolean": False}
_MAX_FILLS = 200  # each adds a field; a guard, never reached by a real schema


def placeholder(schema: Mapping[str, Any]) -> Any:
    """A value the schema accepts, from the argument spec: its default, its first choice, or
    an example of its type (an object with its required fields)."""
    if "default" in schema:
        return copy.deepcopy(schema["default"])
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "array":
        return []
    if kind == "object" or schema.get(PRESERVE):
        properties = schema.get("properties") or {}
        return {
            name: placeholder(properties[name])
            for name in schema.get("required") or []
            if name in properties
        }
    if schema.get("x-kubernetes-int-or-string"):
        return 1
    return _EXAMPLES.get(str(kind), "example")


def defaulted(value: Any, schema: Mapping[str, Any]) -> Any:
    """`value` as the API server stores it: nulls dropped, defaults filled in, at every level."""
    properties = schema.get("properties")
    if isinstance(value, dict) and isinstance(properties, Mapping):
        out = {k: v for k, v in value.items() if v is not None}
        for name, sub in properties.items():
            if name not in out and "default" in sub:
                out[name] = copy.deepcopy(sub["default"])
        return {k: defaulted(v, properties[k]) if k in properties else v for k, v in out.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [defaulted(item, schema["items"]) for item in value]
    return value


def _type_problem(value: Any, schema: Mapping[str, Any]) -> str | None:
    if schema.get("x-kubernetes-int-or-string"):
        ok = isinstance(value, int | str) and not isinstance(value, bool)
        return None if ok else f"must be an integer or a string, got {json.dumps(value)}"
    kind = schema.get("type")
    accepted = _TYPES.get(str(kind))
    if accepted is None:
        return None
    if (isinstance(value, bool) and bool not in accepted) or not isinstance(value, accepted):
        return f"must be of type {kind}, got {json.dumps(value)}"
    if schema.get("enum") and value not in schema["enum"]:
        choices = ", ".join(json.dumps(c) for c in schema["enum"])
        return f"must be one of {choices}, got {json.dumps(value)}"
    return None


def problems(value: Any, schema: Mapping[str, Any], path: str = "spec") -> list[str]:
    """What the API server would refuse in `value` (already defaulted) under `schema`: each
    `path: why`, a broken rule with its message and its CEL."""
    found = []
    problem = _type_problem(value, schema)
    if problem:
        return [f"{path}: {problem}"]
    properties = schema.get("properties")
    if isinstance(value, dict) and isinstance(properties, Mapping):
        for name in schema.get("required") or []:
            if name not in value:
                found.append(f"{path}.{name}: required")
        for name, item in value.items():
            if name in properties:
                found += problems(item, properties[name], f"{path}.{name}")
        for rule in schema.get("x-kubernetes-validations") or []:
            try:
                holds = cel.holds(rule["rule"], value)
            except cel.CelError as err:
                found.append(f"{path}: rule {rule['rule']!r} cannot be checked here: {err}")
                continue
            if not holds:
                found.append(f"{path}: {rule.get('message', 'invalid')} (rule: {rule['rule']})")
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            found += problems(item, schema["items"], f"{path}[{i}]")
    return found


Path_ = list[str | int]


def _next_fill(value: Any, schema: Mapping[str, Any], path: Path_) -> tuple[Path_, str] | None:
    """The next field a placeholder makes valid (its path and why), or None: a required field,
    else a field a broken rule wants (the first of those that, added in turn, make it hold)."""
    properties = schema.get("properties")
    if isinstance(value, dict) and isinstance(properties, Mapping):
        for name in schema.get("required") or []:
            if name not in value and name in properties:
                return [*path, name], "required"
        for rule in schema.get("x-kubernetes-validations") or []:
            wanted = _wanted_by(rule, value, properties)
            if wanted is not None:
                return [*path, wanted], str(rule.get("message") or rule["rule"])
        for name, item in value.items():
            if name in properties:
                found = _next_fill(item, properties[name], [*path, name])
                if found:
                    return found
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            found = _next_fill(item, schema["items"], [*path, i])
            if found:
                return found
    return None


def _wanted_by(
    rule: Mapping[str, Any], value: dict[str, Any], properties: Mapping[str, Any]
) -> str | None:
    """The first field to add for a broken `rule` to hold, or None (it holds, or adding fields
    cannot make it hold, as with fields that exclude each other)."""
    try:
        if cel.holds(rule["rule"], value):
            return None
        trial, added = dict(value), []
        for name in cel.fields_tested(rule["rule"]):
            if name in trial or name not in properties:
                continue
            trial[name] = defaulted(placeholder(properties[name]), properties[name])
            added.append(name)
            if cel.holds(rule["rule"], trial):
                return added[0]
    except cel.CelError:
        return None
    return None


def _node_at(
    doc: yaml.MappingNode, path: Path_
) -> tuple[yaml.Node | None, yaml.Node | None, Path_]:
    """The deepest node of `path` (under `spec`) the text has, its key node, and the rest of
    the path that the text lacks."""
    key: yaml.Node | None = next((k for k, _ in doc.value if _scalar(k) == "spec"), None)
    node: yaml.Node | None = _get(doc, "spec")
    if node is None:
        return None, None, path
    for i, step in enumerate(path):
        if isinstance(step, int) and isinstance(node, yaml.SequenceNode):
            key, node = node.value[step], node.value[step]
        elif isinstance(node, yaml.MappingNode) and _get(node, str(step)) is not None:
            key = next(k for k, _ in node.value if _scalar(k) == step)
            node = _get(node, str(step))
        else:
            return node, key, path[i:]
    return node, key, []


def _block(value: Mapping[Any, Any], indent: int, why: str) -> list[str]:
    text = yaml.safe_dump(dict(value), default_flow_style=False, sort_keys=False, width=2**16)
    lines = [" " * indent + line for line in text.splitlines()]
    lines[0] += f"  {PLACEHOLDER_COMMENT} ({why})"
    return [line + "\n" for line in lines]


def _insert(text: str, doc_index: int, path: Path_, value: Any, why: str, where: str) -> str:
    """`value` written at `path` (under `spec`) of the document, the rest of the text kept."""
    doc = list(yaml.compose_all(text))[doc_index]
    assert isinstance(doc, yaml.MappingNode)
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    node, key, rest = _node_at(doc, path)
    nested: Any = value
    for step in reversed(rest[1:]):
        nested = {step: nested}
    if node is None:  # no spec at all: after the document's last line
        indent = doc.value[0][0].start_mark.column
        block = [" " * indent + "spec:\n", *_block({rest[0]: nested}, indent + 2, why)]
        at = _last_line(doc) + 1
        return "".join(lines[:at] + block + lines[at:])
    entry = {rest[0]: nested} if rest else {}
    if isinstance(node, yaml.MappingNode) and node.value and not node.flow_style:
        indent = node.value[0][0].start_mark.column
        at = _last_line(node) + 1
        return "".join(lines[:at] + _block(entry, indent, why) + lines[at:])
    empty = (isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null")) or (
        isinstance(node, yaml.MappingNode) and not node.value
    )
    if not empty or key is None or key.start_mark.line != node.start_mark.line or not rest:
        shown = ".".join(str(p) for p in ["spec", *path])
        raise SampleError(
            f"{where}: {shown} needs a value but cannot be added here; add it by hand"
        )
    line = key.start_mark.line
    indent = key.start_mark.column
    head = lines[line][: key.end_mark.column] + ":\n"
    return "".join([*lines[:line], head, *_block(entry, indent + 2, why), *lines[line + 1 :]])


def _documents(text: str, schemas: Schemas) -> list[tuple[int, str, Any, Mapping[str, Any]]]:
    """(index, `Kind/name`, spec data, spec schema) of each document a schema describes."""
    found = []
    for i, doc in enumerate(yaml.safe_load_all(text)):
        if not isinstance(doc, dict):
            continue
        schema = schemas.get((str(doc.get("apiVersion")), str(doc.get("kind"))))
        if schema is None:
            continue
        name = (
            (doc.get("metadata") or {}).get("name")
            if isinstance(doc.get("metadata"), dict)
            else None
        )
        spec = doc.get("spec")
        found.append((i, f"{doc.get('kind')}/{name or '?'}", {} if spec is None else spec, schema))
    return found


def fill(text: str, schemas: Schemas, *, where: str) -> tuple[str, list[str]]:
    """The sample's text with a placeholder, marked by a comment, for each field a CR must set
    (required options, and those one of the kind's rules needs), and those fields
    (`kind/name: spec.x (why)`)."""
    added: list[str] = []
    for _ in range(_MAX_FILLS):
        try:
            documents = _documents(text, schemas)
        except yaml.YAMLError as err:
            raise SampleError(f"{where}: cannot read: {' '.join(str(err).split())}") from None
        for index, shown, spec, schema in documents:
            found = _next_fill(defaulted(spec, schema), schema, [])
            if found is None:
                continue
            path, why = found
            field_schema: Mapping[str, Any] = schema
            for step in path:
                field_schema = (
                    field_schema["items"]
                    if isinstance(step, int)
                    else field_schema["properties"][step]
                )
            text = _insert(text, index, path, placeholder(field_schema), why, where)
            added.append(f"{shown}: {'.'.join(str(p) for p in ['spec', *path])} ({why})")
            break
        else:
            return text, added
    raise SampleError(f"{where}: more than {_MAX_FILLS} placeholders needed; fill it by hand")


def invalid(text: str, schemas: Schemas) -> list[str]:
    """What the API server would refuse in each document of the sample (`kind/name: spec.x:
    why`), its defaults applied first as the server does."""
    return [
        f"{shown}: {problem}"
        for _, shown, spec, schema in _documents(text, schemas)
        for problem in problems(defaulted(spec, schema), schema)
    ]
