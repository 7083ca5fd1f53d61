"""JSON from the API server decoded whatever its depth (kube/jsontext.py)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from ansible_operator.kube import jsontext


def nested(depth: int) -> bytes:
    return b'{"a":' * depth + b'"leaf"' + b"}" * depth


def depth_of(value: object) -> int:
    depth, stack = 0, [(value, 0)]
    while stack:
        current, level = stack.pop()
        if isinstance(current, dict | list):
            level += 1
            depth = max(depth, level)
            stack += [
                (v, level) for v in (current.values() if isinstance(current, dict) else current)
            ]
    return depth


def test_a_text_too_deep_for_pythons_decoder_is_read_with_its_deepest_parts_cut():
    raw = b'{"metadata":{"name":"x","resourceVersion":"7"},"spec":' + nested(20000) + b"}"
    try:
        json.loads(raw)
    except RecursionError:
        pass
    else:  # the premise: Python's own decoder cannot
        raise AssertionError("json.loads read 20,000 levels")
    obj = jsontext.loads(raw)
    assert obj["metadata"] == {"name": "x", "resourceVersion": "7"}
    assert depth_of(obj) == jsontext.CUT_DEPTH
    inner = obj["spec"]
    while isinstance(inner, dict):
        inner = inner["a"]
    assert inner == jsontext.CUT


def test_brackets_and_escaped_quotes_in_strings_do_not_count():
    raw = b'{"a":{"b":["x]}{\\"[", {"c":1}]},"d":"}}}{{{"}'
    assert json.loads(jsontext.cut_deeper_than(raw, 2)) == {"a": {"b": jsontext.CUT}, "d": "}}}{{{"}
    assert json.loads(jsontext.cut_deeper_than(raw, 3)) == {
        "a": {"b": ['x]}{"[', jsontext.CUT]},
        "d": "}}}{{{",
    }


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='{}[]"\\ab:,'),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=20,
)


@given(JSON)
def test_a_text_within_the_limit_reads_as_it_is(value):
    raw = json.dumps(value).encode()
    assert jsontext.cut_deeper_than(raw, 64) == raw
    assert jsontext.loads(raw) == value


@given(JSON, st.integers(min_value=1, max_value=4))
def test_a_cut_text_is_json_no_deeper_than_the_limit(value, limit):
    cut = json.loads(jsontext.cut_deeper_than(json.dumps(value).encode(), limit))
    assert depth_of(cut) <= limit
    if depth_of(value) <= limit:
        assert cut == value
