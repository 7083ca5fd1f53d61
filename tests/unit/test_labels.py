"""Label selectors: parsing and validation, matching, and the query-string form."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_operator.core.selectors import (
    LabelSelector,
    validate_label_key,
    validate_label_value,
)


@pytest.mark.parametrize(
    ("raw", "query"),
    [
        (None, ""),
        ({}, ""),
        ({"matchLabels": {"a": "b"}}, "a=b"),
        ({"matchLabels": {"b": "2", "a": "1"}}, "a=1,b=2"),
        ({"matchLabels": {"a": ""}}, "a="),
        (
            {
                "matchLabels": {"a": "b"},
                "matchExpressions": [
                    {"key": "d", "operator": "DoesNotExist"},
                    {"key": "c", "operator": "In", "values": ["y", "x"]},
                ],
            },
            "a=b,c in (x,y),!d",
        ),
        (
            {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]},
            "env notin (prod)",
        ),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, "tier"),
        (
            {"matchExpressions": [{"key": "k", "operator": "In", "values": ["b", "a", "b"]}]},
            "k in (a,b)",
        ),
        (
            {"matchExpressions": [{"key": "example.com/role", "operator": "Exists"}]},
            "example.com/role",
        ),
        # Keys are matched case-insensitively, like Go's encoding/json.
        (
            {"MatchLabels": {"a": "b"}, "matchexpressions": [{"KEY": "c", "Operator": "Exists"}]},
            "a=b,c",
        ),
        # Scalars are coerced to strings.
        ({"matchLabels": {"version": 2, "enabled": True}}, "enabled=true,version=2"),
        ({"matchExpressions": [{"key": "n", "operator": "In", "values": [1, 2]}]}, "n in (1,2)"),
    ],
)
def test_to_query(raw: Any, query: str) -> None:
    assert LabelSelector.parse(raw).to_query() == query


@pytest.mark.parametrize(
    ("raw", "labels", "matches"),
    [
        (None, {}, True),
        ({}, {"any": "thing"}, True),
        ({"matchLabels": {"a": "b"}}, {"a": "b", "x": "y"}, True),
        ({"matchLabels": {"a": "b"}}, {"a": "c"}, False),
        ({"matchLabels": {"a": "b"}}, {}, False),
        ({"matchLabels": {"a": "b"}}, None, False),
        ({"matchLabels": {"a": "b", "c": "d"}}, {"a": "b"}, False),
        (
            _in := {"matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]},
            {"k": "y"},
            True,
        ),
        (_in, {"k": "z"}, False),
        (_in, {}, False),
        (
            _notin := {"matchExpressions": [{"key": "k", "operator": "NotIn", "values": ["x"]}]},
            {"k": "y"},
            True,
        ),
        (_notin, {"k": "x"}, False),
        (_notin, {}, True),
        (_exists := {"matchExpressions": [{"key": "k", "operator": "Exists"}]}, {"k": ""}, True),
        (_exists, {"j": "v"}, False),
        (_dne := {"matchExpressions": [{"key": "k", "operator": "DoesNotExist"}]}, {}, True),
        (_dne, {"k": "v"}, False),
        (
            {
                "matchLabels": {"app": "memcached"},
                "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}],
            },
            {"app": "memcached", "env": "dev"},
            True,
        ),
        (
            {
                "matchLabels": {"app": "memcached"},
                "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}],
            },
            {"app": "memcached", "env": "prod"},
            False,
        ),
    ],
)
def test_matches(raw: Any, labels: dict[str, str] | None, matches: bool) -> None:
    assert LabelSelector.parse(raw).matches(labels) is matches


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("app=x", "must be a mapping, got str"),
        ({"matchLabels": ["a"]}, "matchLabels must be a mapping"),
        ({"matchExpressions": {"key": "a"}}, "matchExpressions must be a list"),
        ({"matchExpressions": ["a"]}, "matchExpressions[0]: must be a mapping, got str"),
        (
            {
                "matchExpressions": [
                    {"key": "a", "operator": "Exists"},
                    {"key": "a", "operator": "Equals"},
                ]
            },
            'matchExpressions[1]: "Equals" is not a valid label selector operator',
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "in", "values": ["x"]}]},
            'matchExpressions[0]: "in" is not a valid label selector operator',
        ),
        (
            {"matchExpressions": [{"key": "a"}]},
            'matchExpressions[0]: "" is not a valid label selector operator',
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In"}]},
            "matchExpressions[0]: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": []}]},
            "matchExpressions[0]: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            "matchExpressions[0]: values set must be empty for exists and does not exist",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "DoesNotExist", "values": ["x"]}]},
            "matchExpressions[0]: values set must be empty for exists and does not exist",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]},
            "matchExpressions[0]: values must be a list",
        ),
        (
            {"matchExpressions": [{"key": "bad key", "operator": "Exists"}]},
            'matchExpressions[0]: invalid label key "bad key": name part must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character",
        ),
        (
            {"matchLabels": {"a": "-bad"}},
            'matchLabels: invalid label value "-bad": a valid label must be an empty string or '
            "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character",
        ),
        (
            {"matchLabels": {"a/b/c": "x"}},
            "matchLabels: invalid label key \"a/b/c\": a qualified name must have at most one '/'",
        ),
        ({"matchLabels": {"a": ["x"]}}, "matchLabels[a] must be a string, got list"),
    ],
)
def test_parse_errors(raw: Any, message: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        LabelSelector.parse(raw)
    assert str(excinfo.value) == message


@pytest.mark.parametrize(
    "key",
    ["a", "A1", "a.b-c_d", "example.com/name", "x" * 63, "k8s.io/" + "n" * 63, "a" * 253 + "/b"],
)
def test_valid_keys(key: str) -> None:
    validate_label_key(key)


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("", "name part must be non-empty"),
        ("/name", "prefix part must be non-empty"),
        ("example.com/", "name part must be non-empty"),
        ("x" * 64, "name part must be no more than 63 characters"),
        ("Example.com/name", "prefix part must be a lowercase DNS subdomain"),
        ("a" * 254 + "/b", "prefix part must be a lowercase DNS subdomain"),
        ("-a", "name part must consist of"),
        ("a_", "name part must consist of"),
    ],
)
def test_invalid_keys(key: str, problem: str) -> None:
    with pytest.raises(ValueError, match="invalid label key") as excinfo:
        validate_label_key(key)
    assert problem in str(excinfo.value)


@pytest.mark.parametrize("value", ["", "a", "a-b.c_d", "x" * 63, "123"])
def test_valid_values(value: str) -> None:
    validate_label_value(value)


@pytest.mark.parametrize("value", ["x" * 64, "-a", "a-", "a b", "a/b"])
def test_invalid_values(value: str) -> None:
    with pytest.raises(ValueError, match="invalid label value"):
        validate_label_value(value)


def test_is_empty() -> None:
    assert LabelSelector.parse(None).is_empty
    assert LabelSelector.parse({"matchLabels": {}}).is_empty
    assert not LabelSelector.parse({"matchLabels": {"a": "b"}}).is_empty
