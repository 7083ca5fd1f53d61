"""Label selectors from a watch's `selector`: parse, validate, match, and render as a query.

A `metav1.LabelSelector` (`matchLabels` plus `matchExpressions` with In, NotIn, Exists,
DoesNotExist) is validated once when watches.yaml is loaded, so a typo fails at startup rather than
silently matching nothing. Matching is done here in Python, set-based operators included, so they
work wherever upstream's cache rejected them; `to_query()` gives the API server's string form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_operator.gocompat import quote

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
EQUALS = "="  # the operator a matchLabels entry becomes
OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)

_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_NAME_CHARS_HELP = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)


def validate_label_key(key: str) -> None:
    """Raise ValueError unless `key` is a qualified name (`[prefix/]name`)."""
    parts = key.split("/")
    if len(parts) == 1:
        prefix, name = "", parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            raise ValueError(f"invalid label key {quote(key)}: prefix part must be non-empty")
        if len(prefix) > 253 or not _DNS_SUBDOMAIN_RE.match(prefix):
            raise ValueError(
                f"invalid label key {quote(key)}: prefix part must be a lowercase DNS subdomain"
            )
    else:
        raise ValueError(
            f"invalid label key {quote(key)}: a qualified name must have at most one '/'"
        )
    if not name:
        raise ValueError(f"invalid label key {quote(key)}: name part must be non-empty")
    if len(name) > 63:
        raise ValueError(
            f"invalid label key {quote(key)}: name part must be no more than 63 characters"
        )
    if not _NAME_RE.match(name):
        raise ValueError(f"invalid label key {quote(key)}: name part {_NAME_CHARS_HELP}")


def validate_label_value(value: str) -> None:
    """Raise ValueError unless `value` is a valid label value (may be empty)."""
    if len(value) > 63:
        raise ValueError(f"invalid label value {quote(value)}: must be no more than 63 characters")
    if not _VALUE_RE.match(value):
        raise ValueError(
            f"invalid label value {quote(value)}: a valid label must be an empty string or "
            + _NAME_CHARS_HELP
        )


@dataclass(frozen=True)
class LabelRequirement:
    """One term of a selector: `key <operator> values`."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == EXISTS:
            return present
        if self.operator == DOES_NOT_EXIST:
            return not present
        if self.operator in (EQUALS, IN):
            return present and labels[self.key] in self.values
        if self.operator == NOT_IN:
            return not present or labels[self.key] not in self.values
        raise ValueError(f"{quote(self.operator)} is not a valid label selector operator")

    def to_query(self) -> str:
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return "!" + self.key
        if self.operator == EQUALS:
            return f"{self.key}={self.values[0]}"
        word = "in" if self.operator == IN else "notin"
        return f"{self.key} {word} ({','.join(sorted(set(self.values)))})"


def _field(raw: Mapping[str, Any], name: str) -> Any:
    """Look a key up case-insensitively, as Go's encoding/json does (an exact match wins)."""
    if name in raw:
        return raw[name]
    found = None
    for key, value in raw.items():
        if isinstance(key, str) and key.lower() == name.lower():
            found = value
    return found


def _as_str(value: Any, what: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return ""
    raise ValueError(f"{what} must be a string, got {type(value).__name__}")


@dataclass(frozen=True)
class LabelSelector:
    """A parsed `metav1.LabelSelector`; the empty selector matches every object."""

    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[LabelRequirement, ...] = ()

    @classmethod
    def parse(cls, raw: Any) -> LabelSelector:
        """Build a selector from its YAML/JSON form; raise a one-line ValueError if invalid."""
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise ValueError(f"must be a mapping, got {type(raw).__name__}")

        labels: dict[str, str] = {}
        raw_labels = _field(raw, "matchLabels")
        if raw_labels is not None:
            if not isinstance(raw_labels, Mapping):
                raise ValueError("matchLabels must be a mapping")
            for key, value in raw_labels.items():
                key_s = _as_str(key, "matchLabels key")
                value_s = _as_str(value, f"matchLabels[{key_s}]")
                try:
                    validate_label_key(key_s)
                    validate_label_value(value_s)
                except ValueError as e:
                    raise ValueError(f"matchLabels: {e}") from None
                labels[key_s] = value_s

        expressions: list[LabelRequirement] = []
        raw_exprs = _field(raw, "matchExpressions")
        if raw_exprs is not None:
            if not isinstance(raw_exprs, list):
                raise ValueError("matchExpressions must be a list")
            for i, expr in enumerate(raw_exprs):
                try:
                    expressions.append(_parse_expression(expr))
                except ValueError as e:
                    raise ValueError(f"matchExpressions[{i}]: {e}") from None
        return cls(match_labels=labels, match_expressions=tuple(expressions))

    @property
    def is_empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def requirements(self) -> list[LabelRequirement]:
        """All terms, sorted by key (stable), as the API server orders them."""
        terms = [LabelRequirement(k, EQUALS, (v,)) for k, v in self.match_labels.items()]
        terms.extend(self.match_expressions)
        return sorted(terms, key=lambda r: r.key)

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """True when every term holds for `labels` (an object's `metadata.labels`)."""
        have = labels or {}
        return all(term.matches(have) for term in self.requirements())

    def to_query(self) -> str:
        """The `labelSelector` query string, e.g. `a=b,c in (x,y),!d`; "" for the empty selector."""
        return ",".join(term.to_query() for term in self.requirements())


def _parse_expression(expr: Any) -> LabelRequirement:
    if not isinstance(expr, Mapping):
        raise ValueError(f"must be a mapping, got {type(expr).__name__}")
    key = _as_str(_field(expr, "key"), "key")
    operator = _as_str(_field(expr, "operator"), "operator")
    raw_values = _field(expr, "values")
    values: Iterable[Any]
    if raw_values is None:
        values = ()
    elif isinstance(raw_values, list):
        values = raw_values
    else:
        raise ValueError("values must be a list")
    str_values = tuple(_as_str(v, "values") for v in values)

    if operator not in OPERATORS:
        raise ValueError(f"{quote(operator)} is not a valid label selector operator")
    validate_label_key(key)
    if operator in (IN, NOT_IN):
        if not str_values:
            raise ValueError("for 'in', 'notin' operators, values set can't be empty")
        for value in str_values:
            validate_label_value(value)
    elif str_values:
        raise ValueError("values set must be empty for exists and does not exist")
    return LabelRequirement(key=key, operator=operator, values=str_values)
