"""The variables a role sees: a CR and its watch turned into the `env/extravars` document.

Names and assembly order are upstream's (spec keys, `ansible_operator_meta`, `_<group>_<kind>`,
`_<group>_<kind>_spec`, watch vars, finalizer vars; later steps overwrite earlier ones), so
existing roles run unchanged. The deliberate differences are for safety (docs/security.md):

- the spec is data by construction: every mapping key that comes from the CR, and every string
  unless the watch says `markUnsafe: false`, is an `UnsafeText`, which `extravars_document`
  writes tagged `!unsafe`, so Ansible never templates it, whichever idiom the role uses
  (`dict2items`, `keys()`, `set_fact`, `combine`...). The document is YAML, not JSON:
  ansible-core's JSON decoder gives a meaning to objects with certain keys (`__ansible_unsafe`,
  `__ansible_vault`) that a CR could write, and JSON has no way to mark a key; in the YAML each
  string's meaning is the tag this module gives it, never the text;
- a spec key that would set one of Ansible's own `ansible_*` variables is refused
  (`core.reserved_vars`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import yaml

from ansible_operator.core import conditions, objects, reserved_vars
from ansible_operator.core.objects import too_deep
from ansible_operator.core.reserved_vars import META_VAR
from ansible_operator.core.watches import GVK, Watch
from ansible_operator.gocompat import map_to_snake

# Deeper specs are refused rather than handed to Ansible, whose templating (like Python's copy
# and JSON encoding here) recurses once per level: a Failure naming the field, not a crash.
MAX_SPEC_DEPTH = 100
# What one CR may cost a run (docs/security.md): Ansible holds each key and list item of each of
# the three copies of the spec in the extra vars as objects of its own, about 1 KiB apiece, so
# their number bounds a run's memory (10,000: about 30 MiB more than an empty spec's run), the
# bytes bound its strings, and the document's size is checked as it is written.
MAX_SPEC_NODES = 10_000
MAX_SPEC_BYTES = 1024 * 1024  # as compact JSON; the API server stores objects up to about 1.5 MiB
MAX_EXTRAVARS_BYTES = 8 * 1024 * 1024


# ansible-core's serialization gives an object with a key of this prefix a meaning of its own
# (`__ansible_unsafe`, `__ansible_vault`, and `__ansible_type` from 2.19): the extra vars document
# is never read that way (`extravars_document`), but a role's `to_json | from_json` of the spec is,
# on 2.19 and later, so a CR holding one is refused, at any depth, naming the field.
MARKER_PREFIX = "__ansible_"


class SpecError(ValueError):
    """A CR that cannot be turned into variables; the message names the field. No run starts
    until the CR changes: its Failure condition has `reason`."""

    reason = conditions.REASON_SPEC_REFUSED


class ReservedVariableError(SpecError):
    """A spec key that would set one of Ansible's own variables (see `core.reserved_vars`)."""

    reason = conditions.REASON_RESERVED_VARIABLE


def check_spec(obj: Mapping[str, Any], watch: Watch) -> list[reserved_vars.SpecVariable]:
    """Refuse, with a SpecError naming the field, a CR that Ansible could not take as data: a spec
    nested too deep, a key of ansible-core's serialization markers anywhere in the object, a
    spec key that would set one of Ansible's own variables, a spec past what one run may cost
    (MAX_SPEC_NODES, MAX_SPEC_BYTES). Returns the variables the spec's top-level keys become."""
    raw_spec = obj.get("spec")
    deep = too_deep(raw_spec, MAX_SPEC_DEPTH)
    if deep is not None:
        field = deep.split(".")[1] if "." in deep else deep
        raise SpecError(
            f"spec.{field.split('[')[0]} is nested more than {MAX_SPEC_DEPTH} levels deep "
            f"(at {deep[:200]}): it cannot be turned into role variables"
        )
    if count_nodes(raw_spec, MAX_SPEC_NODES) > MAX_SPEC_NODES:
        raise SpecError(
            f"spec has more than {MAX_SPEC_NODES:,} keys and list items, the most one run takes "
            "(each costs the run's Ansible about 3 KiB of memory)"
        )
    size = len(json.dumps(raw_spec, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_SPEC_BYTES:
        raise SpecError(
            f"spec is {size / 2**20:.1f} MiB as JSON, more than the "
            f"{MAX_SPEC_BYTES // 2**20} MiB one run takes"
        )
    marker = marker_key(obj)
    if marker is not None:
        raise SpecError(
            f"{marker[:200]}: a key starting with {MARKER_PREFIX} is one of ansible-core's "
            "serialization markers, which a role's from_json would decode: rename it"
        )
    return check_reserved(raw_spec, watch)


def count_nodes(value: Any, stop_past: int) -> int:
    """The number of mapping entries and list items in `value` at every depth, counted until it
    passes `stop_past`."""
    count, stack = 0, [value]
    while stack and count <= stop_past:
        current = stack.pop()
        if isinstance(current, Mapping):
            count += len(current)
            stack += current.values()
        elif isinstance(current, list):
            count += len(current)
            stack += current
    return count


def marker_key(value: Any, path: str = "") -> str | None:
    """The path of the first mapping key in `value` that starts with MARKER_PREFIX, or None."""
    stack = [(value, path)]
    while stack:  # iterative, as objects.too_deep: called before the depth is known to be bounded
        current, where = stack.pop()
        if isinstance(current, Mapping):
            for key, item in current.items():
                inner = f"{where}.{key}" if where else str(key)
                if isinstance(key, str) and key.startswith(MARKER_PREFIX):
                    return inner
                stack.append((item, inner))
        elif isinstance(current, list):
            stack += [(item, f"{where}[{i}]") for i, item in enumerate(current)]
    return None


def check_reserved(spec: Any, watch: Watch) -> list[reserved_vars.SpecVariable]:
    """The variables the top-level keys of `spec` become; ReservedVariableError when one is an
    `ansible_*` variable that `watch` does not allow by name."""
    variables = reserved_vars.spec_variables(spec, snake_case=watch.snake_case_parameters)
    refused = reserved_vars.refused(variables, watch.allow_reserved_vars)
    if refused:
        raise ReservedVariableError(reserved_vars.refusal_message(refused))
    return variables


class UnsafeText(str):
    """Text a CR author wrote: `extravars_document` tags it `!unsafe`: never a template."""

    __slots__ = ()


def mark_unsafe(value: Any, *, strings: bool = True) -> Any:
    """A copy of `value` whose every mapping key, and every string when `strings`, is an
    `UnsafeText`; numbers, booleans and null pass through."""
    if isinstance(value, str):
        return UnsafeText(value) if strings else str(value)
    if isinstance(value, Mapping):
        return {UnsafeText(key): mark_unsafe(item, strings=strings) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [mark_unsafe(item, strings=strings) for item in value]
    return value


# Collections nested deeper than this are written in flow style, on one line: in block style
# each line is indented by its depth, which made a deep spec's document many times its size.
BLOCK_DEPTH = 3


class _Writer(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    depth = 0

    def ignore_aliases(self, data: Any) -> bool:
        return True  # every value written out where it is, never as an anchor and alias

    def represent_data(self, data: Any) -> yaml.Node:
        level = self.depth = self.depth + 1  # the document's own mapping is level 1
        try:
            node = super().represent_data(data)
        finally:
            self.depth = level - 1
        if level > BLOCK_DEPTH and isinstance(node, yaml.CollectionNode):
            node.flow_style = True
        return node


_STR = "tag:yaml.org,2002:str"


def _unsafe_text(writer: _Writer, text: UnsafeText) -> yaml.ScalarNode:
    """`!unsafe "text"`, unless YAML would read the text unquoted as something else than a
    string ("123", "true", "", "2001-01-01"...): ansible-core 2.19 and later read an `!unsafe`
    scalar as if unquoted, so those are written as plain quoted strings, which no core templates
    either: no such text holds Jinja's `{{`, `{%` or `{#`."""
    plain = str(text)  # libyaml's emitter takes a plain str only
    as_unquoted = writer.resolve(yaml.ScalarNode, plain, (True, False))
    tag = "!unsafe" if as_unquoted == _STR else _STR
    return writer.represent_scalar(tag, plain, style='"')


_Writer.add_representer(UnsafeText, _unsafe_text)
_Writer.add_representer(str, lambda writer, text: writer.represent_scalar(_STR, text, style='"'))
# A comment first: the text is never taken for JSON, which Ansible would decode with its markers.
DOCUMENT_HEADER = "# ansible-operator: extra vars, every string a CR wrote tagged !unsafe\n"


def extravars_document(params: Mapping[str, Any]) -> str:
    """The `env/extravars` text of `params`: YAML, each `UnsafeText` tagged `!unsafe`, every other
    string a plain double-quoted string, and nothing else that Ansible would read as code;
    collections past BLOCK_DEPTH on one line. SpecError when it is longer than
    MAX_EXTRAVARS_BYTES."""
    body = yaml.dump(
        dict(params),
        Dumper=_Writer,
        allow_unicode=True,
        sort_keys=False,
        default_flow_style=False,
        width=2**31 - 1,  # one line per string: the quoted form, however long
    )
    size = len(body.encode())
    if size > MAX_EXTRAVARS_BYTES:
        raise SpecError(
            f"the run's extra vars would be {size / 2**20:.1f} MiB, more than the "
            f"{MAX_EXTRAVARS_BYTES // 2**20} MiB one run takes: the CR is too large"
        )
    return DOCUMENT_HEADER + body


def object_var_name(gvk: GVK) -> str:
    """`_<group>_<kind lower>` with `.` and `-` turned into `_` (`_cache_example_com_memcached`).

    The core group gives a double underscore: `__secret`.
    """
    name = f"_{gvk.group}_{gvk.kind.lower()}"
    return name.replace(".", "_").replace("-", "_")


def build_extra_vars(obj: Mapping[str, Any], watch: Watch, *, finalizing: bool) -> dict[str, Any]:
    """Assemble the extra vars for one run on `obj` (the CR as read from the API server).

    `finalizing` is true for the run that handles deletion of a CR carrying the watch's
    finalizer; it adds the finalizer's vars last. The result shares nothing with `obj` or `watch`
    and contains only JSON types when they do.
    """
    check_spec(obj, watch)
    raw_spec = obj.get("spec")
    spec: dict[str, Any] = dict(raw_spec) if isinstance(raw_spec, Mapping) else {}  # copied below
    unsafe = watch.marks_spec_unsafe

    params: dict[str, Any] = mark_unsafe(
        map_to_snake(spec) if watch.snake_case_parameters else spec, strings=unsafe
    )

    meta = objects.metadata(obj)
    params[META_VAR] = {
        "name": str(meta.get("name") or ""),
        "namespace": str(meta.get("namespace") or ""),
    }

    obj_key = object_var_name(watch.gvk)
    params[obj_key] = mark_unsafe(obj, strings=unsafe)
    params[f"{obj_key}_spec"] = mark_unsafe(spec, strings=unsafe)

    params.update(copy.deepcopy(watch.vars))
    if finalizing and watch.finalizer is not None:
        params.update(copy.deepcopy(watch.finalizer.vars))
    return params
