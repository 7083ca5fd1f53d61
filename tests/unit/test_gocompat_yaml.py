"""go-yaml v2's scalars and sigs.k8s.io/yaml's JSON values, as upstream reads watches.yaml."""

from __future__ import annotations

import math
from typing import Any

import pytest

from ansible_operator.gocompat.yaml import (
    YAMLSyntaxError,
    format_float32,
    load,
    scalar_string,
    to_json,
    type_name,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("12:30", "12:30"),  # no base-60 numbers
        ("2001-12-14", "2001-12-14"),  # no timestamps
        ("1e6", 1e6),  # a float without a dot
        ("0x1F", 31),
        ("0o17", "0o17"),  # YAML 1.2's octal is a string in go-yaml v2
        ("017", 15),
        ("0b101", 5),
        (".inf", math.inf),
        ("yes", True),  # YAML 1.1 booleans
        ("~", None),
    ],
)
def test_plain_scalars_are_typed_as_go_yaml_types_them(text: str, value: Any) -> None:
    assert load(f"key: {text}\n")[0] == {"key": value}


def test_load_gives_the_line_of_each_top_level_item() -> None:
    assert load("# a comment\n- a: 1\n\n- b: 2\n") == ([{"a": 1}, {"b": 2}], [2, 4])
    assert load("a: 1\n") == ({"a": 1}, [])
    assert load("") == (None, [])


def test_a_syntax_error_says_where() -> None:
    with pytest.raises(YAMLSyntaxError) as excinfo:
        load("- a: 1\n- b: [\n")
    assert excinfo.value.problem.startswith("invalid YAML: ")
    assert (excinfo.value.line, excinfo.value.column) == (3, 1)


def test_control_characters_are_refused_without_a_place() -> None:
    with pytest.raises(YAMLSyntaxError) as excinfo:
        load("a: \x07\n")
    assert excinfo.value.line is None
    assert "\n" not in str(excinfo.value)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e6, "1e+06"),
        (123456.0, "123456"),
        (0.1, "0.1"),
        (1.0, "1"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (3.14159265358979, "3.1415927"),  # float32's shortest round trip
        (-2.5, "-2.5"),
        (-0.0, "-0"),
        (math.inf, "+Inf"),
        (1e39, "+Inf"),  # beyond float32
        (math.nan, "NaN"),
    ],
)
def test_format_float32(value: float, text: str) -> None:
    assert format_float32(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, ""), ("x", "x"), (True, "true"), (False, "false"), (42, "42"), (1.5, "1.5")],
)
def test_scalar_string(value: Any, text: str) -> None:
    assert scalar_string(value, "role") == text


def test_scalar_string_refuses_collections() -> None:
    with pytest.raises(ValueError, match=r"^role must be a string, got list$"):
        scalar_string(["a"], "role")


def test_to_json_makes_keys_strings_and_refuses_what_json_cannot_hold() -> None:
    assert to_json({1: {True: [1.5, None]}, "d": "x"}, "vars") == {
        "1": {"true": [1.5, None]},
        "d": "x",
    }
    with pytest.raises(ValueError, match=r"^vars\.a\[0\]: inf cannot be represented in JSON$"):
        to_json({"a": [math.inf]}, "vars")
    with pytest.raises(ValueError, match=r"^vars: unsupported mapping key \(1, 2\)$"):
        to_json({(1, 2): "x"}, "vars")


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (None, "null"),
        (True, "boolean"),
        (1, "number"),
        (1.0, "number"),
        ("", "string"),
        ([], "list"),
        ({}, "mapping"),
    ],
)
def test_type_name(value: Any, name: str) -> None:
    assert type_name(value) == name
