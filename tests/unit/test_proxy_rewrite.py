"""Owner marks added to each kind of write body, and bodies left alone when they must be."""

from __future__ import annotations

import json

import pytest
import yaml

from ansible_operator.core.ownership import PRIMARY_RESOURCE, PRIMARY_RESOURCE_TYPE, Mode, Owner
from ansible_operator.proxy.rewrite import (
    BodyType,
    body_type,
    json_patch_ops,
    needs_current,
    rewrite,
)

OWNER = Owner("cache.example.com/v1alpha1", "Memcached", "mc", "shop", "uid-1")
REF = OWNER.reference()
OTHER = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "uid-9"}
MARKS = {PRIMARY_RESOURCE: "shop/mc", PRIMARY_RESOURCE_TYPE: "Memcached.cache.example.com"}


def dumps(value) -> bytes:
    return json.dumps(value).encode()


def meta_of(body: bytes | None) -> dict:
    assert body is not None
    return json.loads(body)["metadata"]


@pytest.mark.parametrize(
    ("verb", "content_type", "expected"),
    [
        ("create", "application/json", BodyType.OBJECT),
        ("create", "application/json; charset=utf-8", BodyType.OBJECT),
        ("update", "application/yaml", BodyType.OBJECT),
        ("create", "application/vnd.kubernetes.protobuf", None),
        ("patch", "application/apply-patch+yaml", BodyType.APPLY),
        ("patch", "application/strategic-merge-patch+json", BodyType.STRATEGIC),
        ("patch", "application/merge-patch+json", BodyType.MERGE),
        ("patch", "application/json-patch+json", BodyType.JSON_PATCH),
        ("patch", "application/apply-patch+cbor", None),
        ("patch", "application/json", None),
        ("delete", "application/json", None),
    ],
)
def test_body_type(verb, content_type, expected):
    assert body_type(verb, content_type) is expected


# -- whole objects: create, update, server-side apply, strategic merge ---------------------------

CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "c"},
    "data": {"a": "b"},
}


@pytest.mark.parametrize("kind", [BodyType.OBJECT, BodyType.APPLY, BodyType.STRATEGIC])
def test_a_reference_is_added(kind):
    body = rewrite(dumps(CONFIG_MAP), kind, OWNER, Mode.OWNER_REFERENCE)
    result = json.loads(body)
    assert result["metadata"] == {"name": "c", "ownerReferences": [REF]}
    assert result["data"] == {"a": "b"}


@pytest.mark.parametrize("kind", [BodyType.OBJECT, BodyType.APPLY, BodyType.STRATEGIC])
def test_a_reference_joins_the_others_once(kind):
    obj = {**CONFIG_MAP, "metadata": {"name": "c", "ownerReferences": [OTHER]}}
    assert meta_of(rewrite(dumps(obj), kind, OWNER, Mode.OWNER_REFERENCE))["ownerReferences"] == [
        OTHER,
        REF,
    ]
    obj = {**CONFIG_MAP, "metadata": {"name": "c", "ownerReferences": [OTHER, REF]}}
    assert rewrite(dumps(obj), kind, OWNER, Mode.OWNER_REFERENCE) is None


@pytest.mark.parametrize(
    "kind", [BodyType.OBJECT, BodyType.APPLY, BodyType.STRATEGIC, BodyType.MERGE]
)
def test_annotations_are_added_and_overwrite(kind):
    obj = {
        **CONFIG_MAP,
        "metadata": {"name": "c", "annotations": {"keep": "me", PRIMARY_RESOURCE: "x/y"}},
    }
    meta = meta_of(rewrite(dumps(obj), kind, OWNER, Mode.ANNOTATIONS))
    assert meta["annotations"] == {"keep": "me", **MARKS}
    assert "ownerReferences" not in meta
    marked = {**CONFIG_MAP, "metadata": {"name": "c", "annotations": MARKS}}
    assert rewrite(dumps(marked), kind, OWNER, Mode.ANNOTATIONS) is None


def test_server_side_apply_yaml_body():
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    body = rewrite(text.encode(), BodyType.APPLY, OWNER, Mode.OWNER_REFERENCE)
    assert yaml.safe_load(body)["metadata"]["ownerReferences"] == [REF]  # JSON is YAML


def test_strategic_merge_keeps_set_element_order_complete():
    patch = {
        "metadata": {
            "ownerReferences": [OTHER],
            "$setElementOrder/ownerReferences": [{"uid": "uid-9"}],
        }
    }
    meta = meta_of(rewrite(dumps(patch), BodyType.STRATEGIC, OWNER, Mode.OWNER_REFERENCE))
    assert meta["$setElementOrder/ownerReferences"] == [{"uid": "uid-9"}, {"uid": "uid-1"}]


def test_a_strategic_patch_without_metadata_gets_one():
    meta = meta_of(
        rewrite(dumps({"spec": {"replicas": 2}}), BodyType.STRATEGIC, OWNER, Mode.OWNER_REFERENCE)
    )
    assert meta == {"ownerReferences": [REF]}


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"",
        b"[1, 2]",
        b'"a string"',
        dumps({"metadata": None}),
        dumps({"metadata": "text"}),
        dumps({"metadata": {"ownerReferences": "not a list"}}),
        dumps({"metadata": {"ownerReferences": None}}),  # a patch deleting them: theirs
        dumps({"metadata": {"$patch": "replace"}}),
        "\xff\xfe".encode("latin-1"),
    ],
)
@pytest.mark.parametrize("kind", [BodyType.OBJECT, BodyType.APPLY, BodyType.STRATEGIC])
def test_unreadable_or_unusual_bodies_are_forwarded_untouched(body, kind):
    assert rewrite(body, kind, OWNER, Mode.OWNER_REFERENCE) is None


def test_unusual_annotations_are_left_alone():
    for value in (None, "text", ["a"]):
        obj = {"metadata": {"annotations": value}}
        assert rewrite(dumps(obj), BodyType.MERGE, OWNER, Mode.ANNOTATIONS) is None


# -- JSON merge patch: the list is replaced whole ------------------------------------------------


def test_merge_patch_reference_needs_the_current_object():
    patch = dumps({"data": {"a": "c"}})
    assert needs_current(patch, BodyType.MERGE, Mode.OWNER_REFERENCE)
    assert not needs_current(patch, BodyType.MERGE, Mode.ANNOTATIONS)
    assert not needs_current(patch, BodyType.STRATEGIC, Mode.OWNER_REFERENCE)
    own_list = dumps({"metadata": {"ownerReferences": [OTHER]}})
    assert not needs_current(own_list, BodyType.MERGE, Mode.OWNER_REFERENCE)
    assert needs_current(patch, BodyType.JSON_PATCH, Mode.ANNOTATIONS)


def test_merge_patch_keeps_the_current_references():
    current = {"metadata": {"name": "c", "ownerReferences": [OTHER]}}
    body = rewrite(
        dumps({"data": {"a": "c"}}), BodyType.MERGE, OWNER, Mode.OWNER_REFERENCE, current=current
    )
    assert json.loads(body) == {"data": {"a": "c"}, "metadata": {"ownerReferences": [OTHER, REF]}}


def test_merge_patch_on_an_object_without_references():
    current = {"metadata": {"name": "c"}}
    body = rewrite(
        dumps({"data": {}}), BodyType.MERGE, OWNER, Mode.OWNER_REFERENCE, current=current
    )
    assert meta_of(body) == {"ownerReferences": [REF]}


def test_merge_patch_of_an_owned_object_or_an_unknown_one_is_untouched():
    owned = {"metadata": {"ownerReferences": [REF]}}
    assert (
        rewrite(dumps({"data": {}}), BodyType.MERGE, OWNER, Mode.OWNER_REFERENCE, current=owned)
        is None
    )
    assert (
        rewrite(dumps({"data": {}}), BodyType.MERGE, OWNER, Mode.OWNER_REFERENCE, current=None)
        is None
    )


def test_merge_patch_that_sets_the_list_itself_gets_ours_appended():
    body = rewrite(
        dumps({"metadata": {"ownerReferences": [OTHER]}}),
        BodyType.MERGE,
        OWNER,
        Mode.OWNER_REFERENCE,
    )
    assert meta_of(body)["ownerReferences"] == [OTHER, REF]
    deleting = dumps({"metadata": {"ownerReferences": None}})
    assert (
        rewrite(deleting, BodyType.MERGE, OWNER, Mode.OWNER_REFERENCE, current={"metadata": {}})
        is None
    )


def test_merge_patch_deleting_all_annotations_is_not_turned_into_a_merge():
    assert (
        rewrite(dumps({"metadata": {"annotations": None}}), BodyType.MERGE, OWNER, Mode.ANNOTATIONS)
        is None
    )


# -- JSON patch: operations appended, guarded ---------------------------------------------------

USER_OPS = [{"op": "replace", "path": "/data/a", "value": "c"}]


def test_json_patch_creates_the_list_when_absent_with_a_test():
    body = rewrite(
        dumps(USER_OPS), BodyType.JSON_PATCH, OWNER, Mode.OWNER_REFERENCE, current={"metadata": {}}
    )
    assert json.loads(body) == [
        *USER_OPS,
        {"op": "test", "path": "/metadata/ownerReferences", "value": None},
        {"op": "add", "path": "/metadata/ownerReferences", "value": [REF]},
    ]


def test_json_patch_appends_to_an_existing_list():
    current = {"metadata": {"ownerReferences": [OTHER]}}
    assert json_patch_ops(USER_OPS, OWNER, Mode.OWNER_REFERENCE, current) == [
        {"op": "add", "path": "/metadata/ownerReferences/-", "value": REF}
    ]
    owned = {"metadata": {"ownerReferences": [OTHER, REF]}}
    assert json_patch_ops(USER_OPS, OWNER, Mode.OWNER_REFERENCE, owned) == []


def test_json_patch_annotations():
    assert json_patch_ops(USER_OPS, OWNER, Mode.ANNOTATIONS, {"metadata": {}}) == [
        {"op": "test", "path": "/metadata/annotations", "value": None},
        {"op": "add", "path": "/metadata/annotations", "value": MARKS},
    ]
    current = {"metadata": {"annotations": {"keep": "me", PRIMARY_RESOURCE: "shop/mc"}}}
    assert json_patch_ops(USER_OPS, OWNER, Mode.ANNOTATIONS, current) == [
        {
            "op": "add",
            "path": "/metadata/annotations/operator-sdk~1primary-resource-type",
            "value": "Memcached.cache.example.com",
        }
    ]


@pytest.mark.parametrize(
    ("ops", "mode"),
    [
        ([{"op": "remove", "path": "/metadata/ownerReferences/0"}], Mode.OWNER_REFERENCE),
        ([{"op": "add", "path": "/metadata/ownerReferences", "value": []}], Mode.OWNER_REFERENCE),
        ([{"op": "replace", "path": "/metadata", "value": {}}], Mode.OWNER_REFERENCE),
        ([{"op": "replace", "path": "", "value": {}}], Mode.OWNER_REFERENCE),
        ([{"op": "move", "from": "/metadata/ownerReferences", "path": "/x"}], Mode.OWNER_REFERENCE),
        ([{"op": "remove", "path": "/metadata/annotations"}], Mode.ANNOTATIONS),
        (
            [
                {
                    "op": "add",
                    "path": "/metadata/annotations/operator-sdk~1primary-resource",
                    "value": "a/b",
                }
            ],
            Mode.ANNOTATIONS,
        ),
    ],
)
def test_json_patch_working_on_the_marks_itself_is_left_to_the_user(ops, mode):
    current = {"metadata": {"ownerReferences": [OTHER], "annotations": {}}}
    assert json_patch_ops(ops, OWNER, mode, current) == []


def test_json_patch_other_annotations_do_not_stop_ours():
    ops = [{"op": "add", "path": "/metadata/annotations/other", "value": "x"}]
    assert len(json_patch_ops(ops, OWNER, Mode.ANNOTATIONS, {"metadata": {"annotations": {}}})) == 2


@pytest.mark.parametrize(
    "body", [b"{bad", dumps({"op": "add"}), dumps([1, 2]), dumps([{"op": "add"}, "x"])]
)
def test_json_patch_unreadable_is_untouched(body):
    assert (
        rewrite(body, BodyType.JSON_PATCH, OWNER, Mode.OWNER_REFERENCE, current={"metadata": {}})
        is None
    )


def test_json_patch_without_a_current_object_is_untouched():
    assert (
        rewrite(dumps(USER_OPS), BodyType.JSON_PATCH, OWNER, Mode.OWNER_REFERENCE, current=None)
        is None
    )
