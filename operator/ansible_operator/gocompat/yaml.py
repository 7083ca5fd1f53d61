"""YAML as upstream's Go reads it: go-yaml v2's plain scalars, then sigs.k8s.io/yaml's JSON values.

Upstream unmarshals watches.yaml with go-yaml v2 (YAML 1.1 without timestamps or base-60, `1e6`
a float) and converts it to JSON, so a number or boolean in a string field becomes its Go text
(floats through `strconv.FormatFloat(v, 'g', -1, 32)`) and mapping keys become strings. `load`
parses a document the first way; `scalar_string` and `to_json` convert values the second way.
Each raises ValueError with a one-line message.
"""

from __future__ import annotations

import math
import re
import struct
from datetime import date, datetime
from typing import Any

import yaml


class YAMLSyntaxError(ValueError):
    """A document that does not parse: the problem, and where (1-based) when known."""

    def __init__(self, problem: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line
        self.column = column


class _Loader(yaml.SafeLoader):
    """PyYAML's YAML 1.1, with plain scalars typed the way go-yaml v2 types them.

    Timestamps stay strings, `12:30` is not a base-60 number, and `1e6` is a float.
    """


_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_GO_YAML_INT = re.compile(r"^[-+]?(?:0b[01_]+|0[0-7_]+|(?:0|[1-9][0-9_]*)|0x[0-9a-fA-F_]+)$")
_GO_YAML_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_Loader.yaml_implicit_resolvers = {
    first: [
        (tag, rx)
        for tag, rx in resolvers
        if tag not in ("tag:yaml.org,2002:timestamp", _INT_TAG, _FLOAT_TAG)
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _first in "-+0123456789.":
    _Loader.yaml_implicit_resolvers.setdefault(_first, [])[:0] = [
        (_INT_TAG, _GO_YAML_INT),
        (_FLOAT_TAG, _GO_YAML_FLOAT),
    ]


def load(text: str) -> tuple[Any, list[int]]:
    """The document and, for a top-level list, the 1-based line of each item."""
    try:
        loader = _Loader(text)  # the reader refuses control characters already here
    except yaml.YAMLError as e:
        raise YAMLSyntaxError(f"invalid YAML: {' '.join(str(e).split())}") from None
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = e.problem or e.context or "syntax error"
        raise YAMLSyntaxError(
            f"invalid YAML: {problem}",
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
        ) from None
    except yaml.YAMLError as e:
        raise YAMLSyntaxError(f"invalid YAML: {' '.join(str(e).split())}") from None
    finally:
        loader.dispose()
    lines: list[int] = []
    if isinstance(node, yaml.SequenceNode):
        lines = [item.start_mark.line + 1 for item in node.value]
    return data, lines


def format_float32(value: float) -> str:
    """Go's strconv.FormatFloat(v, 'g', -1, 32), which sigs.k8s.io/yaml uses for string fields."""
    if math.isnan(value):
        return "NaN"
    try:
        f32 = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        f32 = math.inf if value > 0 else -math.inf
    if math.isinf(f32):
        return "+Inf" if f32 > 0 else "-Inf"
    if f32 == 0:
        return "-0" if math.copysign(1.0, f32) < 0 else "0"
    # Shortest decimal that round-trips through float32.
    for precision in range(1, 10):
        text = f"{f32:.{precision - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == f32:
            break
    mantissa, exp_text = text.split("e")
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    exp = int(exp_text)
    if exp < -4 or exp >= 6:  # %e form; shortest formatting uses an exponent threshold of 6
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    point = exp + 1  # digits before the decimal point
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


def type_name(value: Any) -> str:
    """What a YAML value is, in a message's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


def _scalar_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float32(value)
    return None


def scalar_string(value: Any, name: str) -> str:
    """A string field: numbers and booleans become their Go text, null becomes ""."""
    if value is None:
        return ""
    text = _scalar_text(value)
    if text is None:
        raise ValueError(f"{name} must be a string, got {type_name(value)}")
    return text


def to_json(value: Any, where: str) -> Any:
    """Deep-copy a YAML value into JSON types (string keys), as sigs.k8s.io/yaml converts it."""
    if isinstance(value, dict):
        copied = {}
        for key, item in value.items():
            text = _scalar_text(key)
            if text is None:
                raise ValueError(f"{where}: unsupported mapping key {key!r}")
            copied[text] = to_json(item, f"{where}.{text}")
        return copied
    if isinstance(value, list):
        return [to_json(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where}: {value!r} cannot be represented in JSON")
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise ValueError(f"{where}: unsupported YAML value of type {type(value).__name__}")
