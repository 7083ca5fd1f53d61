"""Event predicates for primary CRs and for dependent objects."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ansible_operator.core.annotations import HOLD_ANNOTATION
from ansible_operator.core.predicates import (
    dependent_view,
    event_kind,
    primary_event_passes,
)
from ansible_operator.core.selectors import LabelSelector
from ansible_operator.core.watches import GVK, Watch

GVK_ = GVK("cache.example.com", "v1alpha1", "Memcached")
PLAIN = Watch(gvk=GVK_, role="/r")
ANNOTATIONS = Watch(gvk=GVK_, role="/r", watch_annotations_changes=True)
SELECTING = Watch(gvk=GVK_, role="/r", selector=LabelSelector.parse({"matchLabels": {"app": "m"}}))


def obj(
    *,
    generation: int | None = 1,
    spec: Any = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    status: Any = None,
    rv: str = "1",
    managed: list[dict[str, Any]] | None = None,
    data: Any = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "x", "namespace": "ns", "resourceVersion": rv}
    if generation is not None:
        meta["generation"] = generation
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    if managed is not None:
        meta["managedFields"] = managed
    result: dict[str, Any] = {
        "apiVersion": "cache.example.com/v1alpha1",
        "kind": "Memcached",
        "metadata": meta,
    }
    if spec is not None:
        result["spec"] = spec
    if status is not None:
        result["status"] = status
    if data is not None:
        result["data"] = data
    return result


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("ADDED", "create"),
        ("MODIFIED", "update"),
        ("DELETED", "delete"),
        ("create", "create"),
        ("Update", "update"),
        ("delete", "delete"),
    ],
)
def test_event_kind(raw: str, kind: str) -> None:
    assert event_kind(raw) == kind


def test_unknown_event_kind() -> None:
    with pytest.raises(ValueError, match="unknown event type 'BOOKMARK'"):
        event_kind("BOOKMARK")


@pytest.mark.parametrize(
    ("name", "event", "old", "new", "watch", "passes"),
    [
        ("create passes", "ADDED", None, obj(), PLAIN, True),
        ("delete passes", "DELETED", obj(), None, PLAIN, True),
        ("delete given as new passes", "DELETED", None, obj(), PLAIN, True),
        ("event without object", "ADDED", None, None, PLAIN, False),
        (
            "generation change",
            "MODIFIED",
            obj(generation=1),
            obj(generation=2, rv="2"),
            PLAIN,
            True,
        ),
        (
            "generation goes down",
            "MODIFIED",
            obj(generation=3),
            obj(generation=2, rv="2"),
            PLAIN,
            True,
        ),
        (
            "status-only change",
            "MODIFIED",
            obj(status={"a": 1}),
            obj(status={"a": 2}, rv="2"),
            PLAIN,
            False,
        ),
        (
            "label-only change",
            "MODIFIED",
            obj(labels={"a": "1"}),
            obj(labels={"a": "2"}, rv="2"),
            PLAIN,
            False,
        ),
        (
            "annotation change not watched",
            "MODIFIED",
            obj(annotations={"a": "1"}),
            obj(annotations={"a": "2"}, rv="2"),
            PLAIN,
            False,
        ),
        (
            "annotation change watched",
            "MODIFIED",
            obj(annotations={"a": "1"}),
            obj(annotations={"a": "2"}, rv="2"),
            ANNOTATIONS,
            True,
        ),
        (
            "annotation added, watched",
            "MODIFIED",
            obj(),
            obj(annotations={"a": "1"}, rv="2"),
            ANNOTATIONS,
            True,
        ),
        (
            "annotations {} vs absent",
            "MODIFIED",
            obj(annotations={}),
            obj(rv="2"),
            ANNOTATIONS,
            False,
        ),
        ("resync (identical)", "MODIFIED", obj(), obj(), PLAIN, False),
        ("update without old", "MODIFIED", None, obj(), PLAIN, False),
        # Kinds without a generation (Secrets, ConfigMaps): real changes pass, no-ops do not.
        (
            "no generation, data change",
            "MODIFIED",
            obj(generation=None, data={"k": "1"}),
            obj(generation=None, data={"k": "2"}, rv="2"),
            PLAIN,
            True,
        ),
        (
            "generation 0, data change",
            "MODIFIED",
            obj(generation=0, data={"k": "1"}),
            obj(generation=0, data={"k": "2"}, rv="2"),
            PLAIN,
            True,
        ),
        (
            "no generation, label change",
            "MODIFIED",
            obj(generation=None, labels={"a": "1"}),
            obj(generation=None, labels={"a": "2"}, rv="2"),
            PLAIN,
            True,
        ),
        (
            "no generation, only resourceVersion/managedFields/status",
            "MODIFIED",
            obj(generation=None, managed=[{"manager": "a", "time": "t1"}], status={"x": 1}),
            obj(generation=None, rv="9", managed=[{"manager": "b", "time": "t2"}], status={"x": 2}),
            PLAIN,
            False,
        ),
        (
            "no generation, resync",
            "MODIFIED",
            obj(generation=None),
            obj(generation=None),
            PLAIN,
            False,
        ),
        # The selector applies to every event, and to the new object on updates.
        ("selector: create matching", "ADDED", None, obj(labels={"app": "m"}), SELECTING, True),
        (
            "selector: create not matching",
            "ADDED",
            None,
            obj(labels={"app": "x"}),
            SELECTING,
            False,
        ),
        ("selector: create without labels", "ADDED", None, obj(), SELECTING, False),
        (
            "selector: delete not matching",
            "DELETED",
            obj(labels={"app": "x"}),
            None,
            SELECTING,
            False,
        ),
        ("selector: delete matching", "DELETED", obj(labels={"app": "m"}), None, SELECTING, True),
        (
            "selector: update, new matches",
            "MODIFIED",
            obj(labels={"app": "x"}),
            obj(labels={"app": "m"}, generation=2),
            SELECTING,
            True,
        ),
        (
            "selector: update, new does not match",
            "MODIFIED",
            obj(labels={"app": "m"}),
            obj(labels={"app": "x"}, generation=2),
            SELECTING,
            False,
        ),
    ],
)
def test_primary_event_passes(
    name: str,
    event: str,
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    watch: Watch,
    passes: bool,
) -> None:
    assert primary_event_passes(event, old, new, watch) is passes, name


def test_primary_does_not_modify_its_inputs() -> None:
    old = obj(generation=None, status={"a": 1}, managed=[{"manager": "m", "time": "t"}])
    new = obj(generation=None, status={"a": 2}, rv="2")
    before = (copy.deepcopy(old), copy.deepcopy(new))
    primary_event_passes("MODIFIED", old, new, PLAIN)
    assert (old, new) == before


@pytest.mark.parametrize(
    ("name", "old", "new", "passes"),
    [
        ("identical", obj(), obj(), False),
        ("only resourceVersion", obj(rv="1"), obj(rv="2"), False),
        ("only status", obj(status={"ready": 1}), obj(status={"ready": 2}), False),
        ("status added", obj(), obj(status={"ready": 1}), False),
        (
            "only managedFields time",
            obj(
                managed=[{"manager": "kcm", "operation": "Update", "time": "2024-01-01T00:00:00Z"}]
            ),
            obj(
                managed=[{"manager": "kcm", "operation": "Update", "time": "2024-01-02T00:00:00Z"}]
            ),
            False,
        ),
        (
            "managedFields entry changes",
            obj(managed=[{"manager": "kcm", "fieldsV1": {"f:spec": {}}}]),
            obj(managed=[{"manager": "kcm", "fieldsV1": {"f:status": {}}}]),
            True,
        ),
        ("managedFields [] vs absent", obj(managed=[]), obj(), False),
        ("spec change", obj(spec={"replicas": 1}), obj(spec={"replicas": 2}), True),
        ("label change", obj(labels={"a": "1"}), obj(labels={"a": "2"}), True),
        ("annotation change", obj(annotations={"a": "1"}), obj(), True),
        ("generation change", obj(generation=1), obj(generation=2), True),
        ("data change", obj(data={"k": "a"}), obj(data={"k": "b"}), True),
    ],
)
def test_dependent_view_changes_only_with_what_the_dependent_predicate_compares(
    name: str, old: dict[str, Any], new: dict[str, Any], passes: bool
) -> None:
    assert (dependent_view(old) != dependent_view(new)) is passes, name


def test_a_change_of_the_hold_annotation_passes_without_watch_annotations_changes():
    old = {"metadata": {"generation": 1, "annotations": {"a": "1"}}}
    held = {"metadata": {"generation": 1, "annotations": {"a": "1", HOLD_ANNOTATION: "true"}}}
    other = {"metadata": {"generation": 1, "annotations": {"a": "2", HOLD_ANNOTATION: "true"}}}
    assert primary_event_passes("MODIFIED", old, held, PLAIN)
    assert primary_event_passes("MODIFIED", held, old, PLAIN)  # released
    assert not primary_event_passes("MODIFIED", held, other, PLAIN)
