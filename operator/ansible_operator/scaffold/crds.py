"""CRDs from roles: a role's argument spec becomes the structural OpenAPI schema of its kind's spec.

A role's ``meta/argument_specs.yml`` already says which variables it takes, their types,
defaults, choices and descriptions; those variables are the CR's spec fields as the operator
hands them over (camelCase in the CR, snake_case in the role). So the schema is derived, not
written twice, and the API server refuses a bad CR naming the field. Everything here is pure:
data in, CRD dict out. What an argument spec cannot say (names, scope, printer columns) is
taken from an existing CRD when there is one, so hand edits to those survive regeneration;
printer columns follow the spec, and those the author added are kept, marked as such.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ansible_operator.core import argspec, reserved_vars, to_camel, version_priority
from ansible_operator.gocompat import pluralize, to_snake
from ansible_operator.scaffold import cel_rules, crd_columns

CRD_API_VERSION = "apiextensions.k8s.io/v1"
PRESERVE = argspec.PRESERVE

_TRUE = ("yes", "on", "1", "true", "y", "t")
_FALSE = ("no", "off", "0", "false", "n", "f")
_MARKUP = re.compile(r"\b(RV|[IBCMUVOEPLR])\(([^()]*)\)")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

# Keys of an option, and of an entry point: what becomes schema, what only documents the role,
# and what a CRD cannot express (with why, for the warning). Any other key is refused: a typo
# such as `require: true` would otherwise leave a field silently optional.
_OPTION_KEYS = frozenset(
    ("type", "elements", "default", "required", "choices", "description", "options",
     "apply_defaults", *cel_rules.CONSTRAINTS)
)  # fmt: skip
_OPTION_DOC_KEYS = frozenset(("version_added", "version_added_collection", "context"))
_ENTRY_KEYS = frozenset(("options", "short_description", "description", *cel_rules.CONSTRAINTS))
_ENTRY_DOC_KEYS = frozenset(
    ("author", "version_added", "seealso", "notes", "requirements", "examples", "attributes")
)
UNEXPRESSED = {
    "aliases": "a CR field has only the option's own name",
    "deprecated_aliases": "a CR field has only the option's own name",
    "no_log": "a CR's spec is readable by whoever may read the CR",
    "fallback": "a CR field has no fallback",
    "removed_in_version": "a CRD marks no field as deprecated",
    "removed_at_date": "a CRD marks no field as deprecated",
    "removed_from_collection": "a CRD marks no field as deprecated",
}


class CrdError(Exception):
    """An argument spec that cannot become a schema; the message names role and option."""


# What a CRD cannot express, as (key, where) pairs, for one warning per argument spec file.
Unexpressed = list[tuple[str, str]]


@dataclass(frozen=True)
class VersionSource:
    """One served version of a kind and the role entry point that defines its spec."""

    version: str
    role_name: str
    spec_path: str  # for messages and the header, as the user would write it
    entry: Mapping[str, Any]  # the `main` entry point of the argument spec
    camel_case: bool = True  # the watch's snakeCaseParameters
    manage_status: bool = True
    allow_reserved_vars: tuple[str, ...] = ()  # the watch's allowReservedVars


@dataclass
class Names:
    """The CRD's names and scope; defaults derived from the kind, or kept from a CRD on disk."""

    kind: str
    plural: str
    singular: str
    scope: str = "Namespaced"
    short_names: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)

    @classmethod
    def for_kind(cls, kind: str, plural: str | None = None) -> Names:
        return cls(kind=kind, plural=plural or default_plural(kind), singular=kind.lower())


def default_plural(kind: str) -> str:
    """The English plural of the lowercase kind, as kubebuilder makes it (`Policy` → `policies`)."""
    return pluralize(kind)


# --- names: snake_case options, camelCase fields ------------------------------------------------


def field_name(option: str, *, camel: bool, where: str) -> str:
    """The CR field for a role option; fails when the operator would not hand it back as is."""
    if not isinstance(option, str) or not option:
        raise CrdError(f"{where}: option names must be non-empty strings, got {option!r}")
    if not camel:
        return option
    name = to_camel(option)
    back = to_snake(name)
    if back != option:
        raise CrdError(
            f"{where}: option {option!r} cannot be a CR field: its camelCase form {name!r} "
            f"reaches the role as {back!r}; rename the option to {back!r} "
            "(or set snakeCaseParameters: false on the watch)"
        )
    return name


def _camel_keys(value: Any, *, camel: bool, where: str) -> Any:
    """A free-form default as the CR carries it: every mapping key in camelCase."""
    if isinstance(value, dict):
        return {
            field_name(str(k), camel=camel, where=where): _camel_keys(v, camel=camel, where=where)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_camel_keys(v, camel=camel, where=where) for v in value]
    return value


# --- descriptions ---------------------------------------------------------------------------------


def _describe(value: Any, *, camel: bool) -> str:
    """An Ansible description (a string or a list of paragraphs) as plain text for kubectl."""
    if value is None:
        return ""
    parts = value if isinstance(value, list) else [value]
    text = " ".join(" ".join(str(p).split()) for p in parts if p is not None)

    def plain(match: re.Match[str]) -> str:
        code, inner = match.group(1), match.group(2)
        if code in ("L", "R"):
            text_part, _, target = inner.partition(",")
            return f"{text_part.strip()} ({target.strip()})" if code == "L" else text_part.strip()
        if code == "O" and camel:
            name, eq, val = inner.partition("=")
            path = ".".join(to_camel(p) if p.islower() else p for p in name.split("."))
            inner = path + eq + val
        if code in ("I", "B", "U"):
            return inner
        return f"`{inner}`"

    return _MARKUP.sub(plain, text)


# --- options → schema -----------------------------------------------------------------------------


def _coerce(value: Any, kind: str, where: str) -> Any:
    """A default or choice converted the way Ansible converts it, or a clear error."""
    try:
        scalar = argspec.SCALARS.get(kind)
        if scalar == "str":
            if isinstance(value, dict | list):
                raise ValueError
            return value if isinstance(value, str) else str(value)
        if scalar == "int":
            if isinstance(value, bool):
                raise ValueError
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value)
        if scalar == "float":
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if scalar == "bool":
            if isinstance(value, bool):
                return value
            lowered = str(value).lower()
            if lowered in _TRUE:
                return True
            if lowered in _FALSE:
                return False
            raise ValueError
    except (TypeError, ValueError):
        raise CrdError(f"{where}: {value!r} is not a valid {kind}") from None
    return value


def _check_keys(
    spec: Mapping[str, Any],
    known: frozenset[str],
    documentation: frozenset[str],
    *,
    where: str,
    unexpressed: Unexpressed | None,
) -> None:
    """Refuse a key Ansible would not know; note the keys a CRD cannot express."""
    for key in spec:
        if key in known or key in documentation:
            continue
        if key in UNEXPRESSED:
            if unexpressed is not None:
                unexpressed.append((str(key), where))
            continue
        raise CrdError(f"{where}: unknown key {key!r}")


def _check_placement(option: Mapping[str, Any], kind: str, *, where: str) -> None:
    """`elements` only on lists; `options` and constraints only where there are sub-options."""
    if "elements" in option and kind != "list":
        raise CrdError(f"{where}: key 'elements' is only for type: list, not type: {kind}")
    this = f"type: {kind}"
    if kind == "list":
        elements = option.get("elements")
        this += f" with elements: {elements}" if elements else " without elements"
    holds_options = kind == "dict" or (kind == "list" and option.get("elements") == "dict")
    for key in ("options", *cel_rules.CONSTRAINTS):
        if key in option and not holds_options:
            raise CrdError(
                f"{where}: key {key!r} is only for type: dict or type: list with elements: dict, "
                f"not {this}"
            )
    if "apply_defaults" in option and kind != "dict":
        raise CrdError(f"{where}: key 'apply_defaults' is only for type: dict, not {this}")
    for key in ("apply_defaults", *cel_rules.CONSTRAINTS):
        if key in option and option.get("options") is None:
            raise CrdError(f"{where}: key {key!r} needs the sub-options it refers to in 'options'")


def option_schema(
    option: Mapping[str, Any],
    *,
    camel: bool,
    where: str,
    unexpressed: Unexpressed | None = None,
) -> dict[str, Any]:
    """The OpenAPI schema of one option (recursing into `options` of dicts and list elements)."""
    if not isinstance(option, Mapping):
        raise CrdError(f"{where}: must be a mapping with type, description, ...")
    kind = option.get("type", "str")
    if not isinstance(kind, str):
        raise CrdError(f"{where}: type must be a name such as str or int, got {kind!r}")
    _check_keys(option, _OPTION_KEYS, _OPTION_DOC_KEYS, where=where, unexpressed=unexpressed)
    return _schema_of(option, kind, camel=camel, where=where, unexpressed=unexpressed)


def _schema_of(
    option: Mapping[str, Any],
    kind: str,
    *,
    camel: bool,
    where: str,
    unexpressed: Unexpressed | None,
) -> dict[str, Any]:
    _check_placement(option, kind, where=where)
    schema: dict[str, Any] = {}
    description = _describe(option.get("description"), camel=camel)
    if description:
        schema["description"] = description
    choices = option.get("choices")

    if kind in argspec.SCALARS:
        schema["type"] = argspec.JSON_TYPES[argspec.SCALARS[kind]]
        if choices is not None:
            where_choices = f"{where}.choices"
            schema["enum"] = [_coerce(c, kind, where_choices) for c in _as_list(choices, where)]
    elif kind in argspec.INT_OR_STRING:
        schema["x-kubernetes-int-or-string"] = True
    elif kind in argspec.FREE_FORM:
        schema[PRESERVE] = True
    elif kind == "dict":
        schema.update(_object_schema(option, camel=camel, where=where, unexpressed=unexpressed))
    elif kind == "list":
        schema["type"] = "array"
        elements = option.get("elements")
        item: dict[str, Any]
        if elements is None:
            item = {PRESERVE: True}
        elif not isinstance(elements, str):
            raise CrdError(f"{where}: elements must be a type name such as str or dict")
        else:
            # Each element is an option of its own: sub-options and constraints apply to it.
            element = {k: v for k, v in option.items() if k in ("options", "choices")}
            element.update((k, option[k]) for k in cel_rules.CONSTRAINTS if k in option)
            item = _schema_of(
                element, elements, camel=camel, where=f"{where}.elements", unexpressed=unexpressed
            )
        schema["items"] = item
    else:
        raise CrdError(
            f"{where}: type {kind!r} has no OpenAPI equivalent (use {argspec.TYPE_NAMES})"
        )

    if "default" in option and option["default"] is not None:
        schema["default"] = _default(option["default"], option, camel=camel, where=where)
    elif option.get("apply_defaults") and kind == "dict":
        # An absent dict becomes {} and the API server fills in its sub-options' defaults.
        options = option["options"]
        required = [n for n, o in options.items() if isinstance(o, Mapping) and o.get("required")]
        if required:
            raise CrdError(
                f"{where}: apply_defaults with the required sub-option {required[0]!r} would "
                "refuse every CR that leaves this option out; make the option required instead"
            )
        schema["default"] = {}
    return schema


def _as_list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise CrdError(f"{where}: choices must be a list")
    return value


def _default(value: Any, option: Mapping[str, Any], *, camel: bool, where: str) -> Any:
    kind = option.get("type", "str")
    at = f"{where}.default"
    if kind in argspec.SCALARS:
        coerced = _coerce(value, kind, at)
        choices = option.get("choices")
        if choices is not None and coerced not in [_coerce(c, kind, at) for c in choices]:
            raise CrdError(f"{at}: {value!r} is not one of the choices {choices!r}")
        return coerced
    if kind == "list":
        if not isinstance(value, list):
            raise CrdError(f"{at}: {value!r} is not a list")
        elements = option.get("elements")
        if elements in argspec.SCALARS:
            return [_coerce(v, elements, at) for v in value]
        return _with_fields(value, option.get("options"), camel=camel, where=at)
    if kind == "dict":
        if not isinstance(value, dict):
            raise CrdError(f"{at}: {value!r} is not a dict")
        return _with_fields(value, option.get("options"), camel=camel, where=at)
    return _camel_keys(value, camel=camel, where=at)


def _with_fields(value: Any, options: Any, *, camel: bool, where: str) -> Any:
    """A dict (or list of dicts) default with option names turned into CR field names."""
    if isinstance(value, list):
        return [_with_fields(v, options, camel=camel, where=where) for v in value]
    if not isinstance(value, dict) or not isinstance(options, Mapping):
        return _camel_keys(value, camel=camel, where=where)
    result = {}
    for key, sub in value.items():
        spec = options.get(key)
        name = field_name(str(key), camel=camel, where=where)
        if isinstance(spec, Mapping):
            result[name] = _default(sub, spec, camel=camel, where=f"{where}.{key}")
        else:
            result[name] = _camel_keys(sub, camel=camel, where=where)
    return result


def _object_schema(
    holder: Mapping[str, Any],
    *,
    camel: bool,
    where: str,
    unexpressed: Unexpressed | None,
) -> dict[str, Any]:
    """`type: object` with one property per option of `holder` (an entry point or a dict option),
    its constraints as validation rules; free-form when no options are declared."""
    options = holder.get("options")
    if options is None:
        return {"type": "object", PRESERVE: True}
    if not isinstance(options, Mapping):
        raise CrdError(f"{where}: options must be a mapping of option names")
    properties: dict[str, Any] = {}
    fields: dict[str, str] = {}
    required: list[str] = []
    for option, spec in options.items():
        name = field_name(option, camel=camel, where=where)
        if name in properties:
            raise CrdError(f"{where}: options {option!r} and another both become field {name!r}")
        properties[name] = option_schema(
            spec, camel=camel, where=f"{where}.options.{option}", unexpressed=unexpressed
        )
        fields[option] = name
        if isinstance(spec, Mapping) and spec.get("required"):
            required.append(name)
    try:
        rules = cel_rules.validation_rules(holder, options, fields)
    except cel_rules.ConstraintError as err:
        raise CrdError(f"{where}: {err}") from None
    schema: dict[str, Any] = {"type": "object"}
    if required:
        schema["required"] = required
    schema["properties"] = properties
    if rules:
        schema["x-kubernetes-validations"] = rules
    return schema


def spec_schema(
    entry: Mapping[str, Any],
    *,
    camel: bool,
    where: str,
    unexpressed: Unexpressed | None = None,
    allow_reserved_vars: Sequence[str] = (),
) -> dict[str, Any]:
    """The schema of `spec` from an argument spec entry point (`main`). An option the runtime
    would refuse as a CR field (one of Ansible's own variables) is refused here, so that the
    schema never invites it."""
    if not isinstance(entry, Mapping):
        raise CrdError(f"{where}: the entry point must be a mapping with options")
    options = entry.get("options")
    for option in options if isinstance(options, Mapping) else ():
        if reserved_vars.is_reserved(str(option)) and option not in allow_reserved_vars:
            raise CrdError(
                f"{where}.options.{option}: a CR may not set the Ansible variable {option} "
                f"(the operator refuses it at run time): rename the option, or allow it with "
                f"{reserved_vars.WATCH_KEY} on the watch"
            )
    _check_keys(entry, _ENTRY_KEYS, _ENTRY_DOC_KEYS, where=where, unexpressed=unexpressed)
    schema: dict[str, Any] = {}
    description = _describe(entry.get("short_description") or entry.get("description"), camel=camel)
    if description:
        schema["description"] = description
    holder = {**entry, "options": entry.get("options") or {}}
    schema.update(_object_schema(holder, camel=camel, where=where, unexpressed=unexpressed))
    return schema


# --- the CRD --------------------------------------------------------------------------------------


def build_crd(
    group: str,
    names: Names,
    sources: Sequence[VersionSource],
    *,
    existing: Mapping[str, Any] | None = None,
    unexpressed: dict[str, Unexpressed] | None = None,
    storage: str | None = None,
    conversion: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The CRD of one kind with a version per source; `existing` contributes what is hand-owned
    (names, scope, the printer columns the author added) when it describes the same group and
    kind. What the CRD cannot express is added to `unexpressed` by spec file. The storage
    version is `storage`, else the highest; `conversion` is the CRD's `spec.conversion`."""
    if not sources:
        raise CrdError(f"{names.kind}.{group}: no version to generate")
    kept_columns = crd_columns.existing(existing)
    if storage is None:
        storage = max(sources, key=lambda s: version_priority(s.version)).version
    versions = []
    for source in sorted(sources, key=lambda s: version_priority(s.version), reverse=True):
        where = f"{source.spec_path}: argument_specs.main"
        notes = None if unexpressed is None else unexpressed.setdefault(source.spec_path, [])
        spec = spec_schema(
            source.entry,
            camel=source.camel_case,
            where=where,
            unexpressed=notes,
            allow_reserved_vars=source.allow_reserved_vars,
        )
        root: dict[str, Any] = {
            "description": f"{names.kind} is reconciled by the role {source.role_name}.",
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": spec,
                "status": {"type": "object", PRESERVE: True},
            },
        }
        if spec.get("required"):
            root["required"] = ["spec"]
        columns = crd_columns.printer_columns(
            spec, source.manage_status, kept_columns.get(source.version)
        )
        versions.append(
            {
                "name": source.version,
                "served": True,
                "storage": source.version == storage,
                "subresources": {"status": {}},
                "additionalPrinterColumns": columns,
                "schema": {"openAPIV3Schema": root},
            }
        )
    crd_names: dict[str, Any] = {
        "kind": names.kind,
        "listKind": f"{names.kind}List",
        "plural": names.plural,
        "singular": names.singular,
    }
    if names.short_names:
        crd_names["shortNames"] = list(names.short_names)
    if names.categories:
        crd_names["categories"] = list(names.categories)
    crd_spec: dict[str, Any] = {
        "group": group,
        "names": crd_names,
        "scope": names.scope,
        "versions": versions,
    }
    if conversion is not None:
        crd_spec["conversion"] = dict(conversion)
    return {
        "apiVersion": CRD_API_VERSION,
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{names.plural}.{group}"},
        "spec": crd_spec,
    }


def names_from(existing: Mapping[str, Any] | None, kind: str) -> Names:
    """Names kept from an existing CRD of this kind, else derived from the kind."""
    names = Names.for_kind(kind)
    if not existing:
        return names
    spec = existing.get("spec") or {}
    given = spec.get("names") or {}
    names.plural = str(given.get("plural") or names.plural)
    names.singular = str(given.get("singular") or names.singular)
    names.short_names = [str(s) for s in given.get("shortNames") or []]
    names.categories = [str(c) for c in given.get("categories") or []]
    if spec.get("scope") in ("Namespaced", "Cluster"):
        names.scope = spec["scope"]
    return names


def describes(crd: Any, group: str, kind: str) -> bool:
    """Whether a loaded YAML document is the CRD of group/kind."""
    if not isinstance(crd, dict) or crd.get("kind") != "CustomResourceDefinition":
        return False
    spec = crd.get("spec") or {}
    return spec.get("group") == group and (spec.get("names") or {}).get("kind") == kind


def validate_group(group: str) -> str | None:
    """Why `group` cannot be a CRD's group, or None."""
    if not group:
        return "the core group holds only built-in kinds"
    if "." not in group:
        return "a CRD's group must contain a dot (for example cache.example.com)"
    if len(group) > 253 or not all(_DNS_LABEL.match(p) for p in group.split(".")):
        return "not a lowercase DNS subdomain"
    return None


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """The path of the first place where two YAML values differ, or None when equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            if key not in a or key not in b:
                return f"{path}.{key}".lstrip(".")
            found = first_difference(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None if len(a) == len(b) else f"{path}[{min(len(a), len(b))}]".lstrip(".")
    return None if a == b else (path.lstrip(".") or "(the whole document)")
