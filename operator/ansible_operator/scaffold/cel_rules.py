"""An argument spec's option constraints as CEL rules, so the API server refuses a CR breaking them.

Ansible checks ``mutually_exclusive``, ``required_together``, ``required_one_of``,
``required_if`` and ``required_by`` only once a run has started; written as
``x-kubernetes-validations`` on the object that holds the options (``spec`` for the entry point's,
the dict or list element for nested ones) they are checked on every create and update, with a
message in the CR's own field names. A field counts as given when it is present (``has()``):
the API server prunes nulls and fills in defaults first, as Ansible does before these checks.
Pure: option specs in, rules out, or a ``CrdError`` naming the place and the key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

CONSTRAINTS = (
    "mutually_exclusive",
    "required_together",
    "required_one_of",
    "required_if",
    "required_by",
)

# Kubernetes' CEL escaping of property names that are not plain identifiers.
_CEL_RESERVED = frozenset(
    ("true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
     "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while")
)  # fmt: skip
_CEL_NAME = re.compile(r"^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*$")
_SCALAR_PYTHON: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "path": (str,),
    "sid": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
}


class ConstraintError(ValueError):
    """A constraint that cannot be checked as written; the message is the whole line's tail."""


def cel_field(name: str) -> str:
    """`self.<name>` as CEL spells a CR field (Kubernetes' escaping of `_`, `-`, `.`, `/`)."""
    if not _CEL_NAME.match(name):
        raise ConstraintError(f"field {name!r} cannot be named in a CEL rule")
    if name in _CEL_RESERVED:
        return f"__{name}__"
    escaped = name.replace("__", "__underscores__")
    for char, word in ((".", "dot"), ("-", "dash"), ("/", "slash")):
        escaped = escaped.replace(char, f"__{word}__")
    return escaped


def _words(names: Sequence[str], last: str = "and") -> str:
    """`a`, `a and b`, `a, b and c`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"


def _has(field: str) -> str:
    return f"has(self.{cel_field(field)})"


def _all_given(fields: Sequence[str]) -> str:
    return " && ".join(_has(f) for f in fields)


def _any_given(fields: Sequence[str]) -> str:
    return " || ".join(_has(f) for f in fields)


def _group(expression: str, count: int) -> str:
    return f"({expression})" if count > 1 else expression


class _Options:
    """The options of one object: their specs and the CR field each becomes."""

    def __init__(self, options: Mapping[str, Any], fields: Mapping[str, str]) -> None:
        self.options = options
        self.fields = fields

    def field(self, name: Any, key: str) -> str:
        if not isinstance(name, str) or name not in self.fields:
            raise ConstraintError(f"{key} names {name!r}, which is not an option here")
        return self.fields[name]

    def term(self, value: Any, key: str) -> list[str]:
        """A list of at least two option names, as CR fields."""
        if not isinstance(value, list) or len(value) < 2:
            raise ConstraintError(
                f"{key} must be a list of lists of two or more option names, such as "
                f"[[size, replicas]], got {value!r}"
            )
        return [self.field(name, key) for name in value]

    def always_given(self, name: str) -> str | None:
        """Why every CR has this option (required, or defaulted by the API server), or None."""
        spec = self.options.get(name)
        if not isinstance(spec, Mapping):
            return None
        if spec.get("required"):
            return "is required"
        if spec.get("default") is not None or spec.get("apply_defaults"):
            return "has a default the API server fills in"
        return None


def _terms(value: Any, key: str) -> list[Any]:
    if not isinstance(value, list) or not value or not all(isinstance(t, list) for t in value):
        raise ConstraintError(
            f"{key} must be a list of lists of option names, such as [[size, replicas]], "
            f"got {value!r}"
        )
    return value


def _mutually_exclusive(value: Any, options: _Options) -> list[dict[str, str]]:
    rules = []
    for names in _terms(value, "mutually_exclusive"):
        fields = options.term(names, "mutually_exclusive")
        for name, field in zip(names, fields, strict=True):
            why = options.always_given(name)
            if why:
                others = _words([f for f in fields if f != field], "or")
                raise ConstraintError(
                    f"mutually_exclusive {names!r}: {name} {why}, so no CR could set {others}"
                )
        if len(fields) == 2:
            rule = f"!({_all_given(fields)})"
        else:
            # A sum rather than a list comprehension: constant cost, even in nested lists.
            rule = " + ".join(f"({_has(f)} ? 1 : 0)" for f in fields) + " <= 1"
        rules.append({"rule": rule, "message": f"{_words(fields)} are mutually exclusive"})
    return rules


def _required_together(value: Any, options: _Options) -> list[dict[str, str]]:
    rules = []
    for names in _terms(value, "required_together"):
        fields = options.term(names, "required_together")
        rule = f"({_all_given(fields)}) || !({_any_given(fields)})"
        rules.append({"rule": rule, "message": f"{_words(fields)} must be set together"})
    return rules


def _required_one_of(value: Any, options: _Options) -> list[dict[str, str]]:
    rules = []
    for names in _terms(value, "required_one_of"):
        fields = options.term(names, "required_one_of")
        rule = _any_given(fields)
        rules.append({"rule": rule, "message": f"one of {_words(fields, 'or')} is required"})
    return rules


def _literal(value: Any, option: str, spec: Any) -> tuple[str, str]:
    """The CEL literal and the text of a required_if value, of the option's own type."""
    kind = spec.get("type", "str") if isinstance(spec, Mapping) else "str"
    accepted = _SCALAR_PYTHON.get(kind)
    if accepted is None:
        raise ConstraintError(
            f"required_if on {option}: only an option of type str, int, float or bool can be "
            f"compared, {option} is {kind}"
        )
    if not isinstance(value, accepted) or (isinstance(value, bool) and bool not in accepted):
        raise ConstraintError(
            f"required_if on {option}: {value!r} is not of type {kind}, "
            "so the rule could never apply"
        )
    if isinstance(value, bool):
        text = "true" if value else "false"
        return text, text
    if isinstance(value, str):
        return json.dumps(value), value
    if kind == "float" and isinstance(value, int | float):
        return repr(float(value)), str(value)
    return str(value), str(value)


def _required_if(value: Any, options: _Options) -> list[dict[str, str]]:
    rules = []
    for entry in _terms(value, "required_if"):
        if len(entry) not in (3, 4) or not isinstance(entry[2], list) or not entry[2]:
            raise ConstraintError(
                "required_if entries are [option, value, [options...]] or [option, value, "
                f"[options...], true], got {entry!r}"
            )
        option, expected, required = entry[0], entry[1], entry[2]
        any_of = entry[3] if len(entry) == 4 else False
        if not isinstance(any_of, bool):
            raise ConstraintError(f"required_if {entry!r}: the fourth item must be true or false")
        key_field = options.field(option, "required_if")
        literal, shown = _literal(expected, option, options.options.get(option))
        fields = [options.field(name, "required_if") for name in required]
        condition = f"{_has(key_field)} && self.{cel_field(key_field)} == {literal}"
        if any_of and len(fields) > 1:
            then, what = _any_given(fields), f"one of {_words(fields, 'or')} is"
        else:
            then = _all_given(fields)
            what = f"{_words(fields)} {'is' if len(fields) == 1 else 'are'}"
        rules.append(
            {
                "rule": f"!({condition}) || {_group(then, len(fields))}",
                "message": f"{what} required when {key_field} is {shown}",
            }
        )
    return rules


def _required_by(value: Any, options: _Options) -> list[dict[str, str]]:
    if not isinstance(value, Mapping) or not value:
        raise ConstraintError(
            f"required_by must map an option to the options it needs, such as "
            f"{{tls: [cert, key]}}, got {value!r}"
        )
    rules = []
    for option, needs in value.items():
        key_field = options.field(option, "required_by")
        names = [needs] if isinstance(needs, str) else needs
        if not isinstance(names, list) or not names:
            raise ConstraintError(f"required_by {option}: must name an option or a list of them")
        fields = [options.field(name, "required_by") for name in names]
        verb = "is" if len(fields) == 1 else "are"
        rules.append(
            {
                "rule": f"!{_has(key_field)} || {_group(_all_given(fields), len(fields))}",
                "message": f"{_words(fields)} {verb} required when {key_field} is set",
            }
        )
    return rules


_BUILDERS: dict[str, Callable[[Any, _Options], list[dict[str, str]]]] = {
    "mutually_exclusive": _mutually_exclusive,
    "required_together": _required_together,
    "required_one_of": _required_one_of,
    "required_if": _required_if,
    "required_by": _required_by,
}


def validation_rules(
    holder: Mapping[str, Any], options: Mapping[str, Any], fields: Mapping[str, str]
) -> list[dict[str, str]]:
    """The `x-kubernetes-validations` for the constraints `holder` (an entry point or a dict
    option) declares over its `options`, whose CR field names are `fields`."""
    known = _Options(options, fields)
    rules: list[dict[str, str]] = []
    for key in CONSTRAINTS:
        if holder.get(key) is not None:
            rules += _BUILDERS[key](holder[key], known)
    return rules
