"""Reading metadata from objects of any shape: missing or malformed parts read as empty."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_operator.core import objects

WHOLE = {
    "metadata": {
        "namespace": "shop",
        "name": "cache",
        "annotations": {"a": "1"},
        "labels": {"app": "cache"},
    }
}


def test_a_whole_object() -> None:
    assert objects.metadata(WHOLE) is WHOLE["metadata"]
    assert objects.key(WHOLE) == ("shop", "cache")
    assert objects.annotations(WHOLE) == {"a": "1"}
    assert objects.labels(WHOLE) == {"app": "cache"}


def test_a_cluster_scoped_object_has_an_empty_namespace() -> None:
    assert objects.key({"metadata": {"name": "node-1", "namespace": None}}) == ("", "node-1")


@pytest.mark.parametrize(
    "obj",
    [
        None,
        {},
        {"metadata": None},
        {"metadata": "text"},
        {"metadata": {"annotations": None, "labels": ["a"]}},
        {"metadata": {"annotations": "a=1", "labels": 3}},
    ],
)
def test_malformed_parts_read_as_empty(obj: Any) -> None:
    assert objects.annotations(obj) == {}
    assert objects.labels(obj) == {}
    assert objects.key(obj) == ("", "")
