"""Owner marks: when a reference and when annotations, and reading owners back from dependents."""

from __future__ import annotations

import copy

import pytest

from ansible_operator.core.ownership import (
    PRIMARY_RESOURCE,
    PRIMARY_RESOURCE_TYPE,
    Mode,
    Owner,
    fingerprint,
    injection_mode,
    is_marked,
    is_owner_itself,
    owned_by_annotation,
    owned_by_reference,
    owner_keys,
)
from ansible_operator.core.predicates import dependent_view
from ansible_operator.core.watches import GVK

OWNER = Owner("cache.example.com/v1alpha1", "Memcached", "mc", "shop", "uid-1")
CLUSTER_OWNER = Owner("cache.example.com/v1alpha1", "Memcached", "mc", "", "uid-2")
CORE_OWNER = Owner("v1", "ConfigMap", "settings", "shop", "uid-3")
MC = GVK("cache.example.com", "v1alpha1", "Memcached")


def test_owner_from_a_cr():
    cr = {
        "apiVersion": "cache.example.com/v1alpha1",
        "kind": "Memcached",
        "metadata": {"name": "mc", "namespace": "shop", "uid": "uid-1", "generation": 3},
    }
    assert Owner.from_object(cr) == OWNER
    assert OWNER.key == ("shop", "mc")
    assert OWNER.gvk == MC


def test_reference_is_upstreams_four_fields():
    assert OWNER.reference() == {
        "apiVersion": "cache.example.com/v1alpha1",
        "kind": "Memcached",
        "name": "mc",
        "uid": "uid-1",
    }


@pytest.mark.parametrize(
    ("owner", "annotations"),
    [
        (
            OWNER,
            {PRIMARY_RESOURCE: "shop/mc", PRIMARY_RESOURCE_TYPE: "Memcached.cache.example.com"},
        ),
        (
            CLUSTER_OWNER,
            {PRIMARY_RESOURCE: "/mc", PRIMARY_RESOURCE_TYPE: "Memcached.cache.example.com"},
        ),
        (CORE_OWNER, {PRIMARY_RESOURCE: "shop/settings", PRIMARY_RESOURCE_TYPE: "ConfigMap"}),
    ],
)
def test_annotations(owner, annotations):
    assert owner.annotations() == annotations


@pytest.mark.parametrize(
    ("owner", "namespaced", "namespace", "mode"),
    [
        (OWNER, True, "shop", Mode.OWNER_REFERENCE),  # same namespace
        (OWNER, True, "other", Mode.ANNOTATIONS),  # another namespace
        (OWNER, False, "", Mode.ANNOTATIONS),  # a cluster-scoped dependent
        (CLUSTER_OWNER, True, "shop", Mode.OWNER_REFERENCE),  # a cluster-scoped owner: always
        (CLUSTER_OWNER, False, "", Mode.OWNER_REFERENCE),
    ],
)
def test_injection_mode(owner, namespaced, namespace, mode):
    assert (
        injection_mode(owner, dependent_namespaced=namespaced, dependent_namespace=namespace)
        is mode
    )


def dependent(refs=None, annotations=None, namespace="shop", name="web"):
    meta: dict = {"name": name, "namespace": namespace}
    if refs is not None:
        meta["ownerReferences"] = refs
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta}


def test_is_marked():
    assert is_marked(dependent([OWNER.reference()]), OWNER, Mode.OWNER_REFERENCE)
    assert not is_marked(dependent([CLUSTER_OWNER.reference()]), OWNER, Mode.OWNER_REFERENCE)
    assert not is_marked(dependent(), OWNER, Mode.OWNER_REFERENCE)
    assert is_marked(dependent(annotations=OWNER.annotations()), OWNER, Mode.ANNOTATIONS)
    half = {PRIMARY_RESOURCE: "shop/mc"}
    assert not is_marked(dependent(annotations=half), OWNER, Mode.ANNOTATIONS)


def test_is_owner_itself():
    cr = {
        "apiVersion": "cache.example.com/v1beta1",
        "kind": "Memcached",
        "metadata": {"name": "mc", "namespace": "shop"},
    }
    assert is_owner_itself(cr, OWNER)  # another version of the same object
    assert is_owner_itself({"metadata": {"uid": "uid-1"}}, OWNER)
    assert not is_owner_itself(dependent(), OWNER)
    assert not is_owner_itself({**cr, "metadata": {"name": "mc", "namespace": "x"}}, OWNER)


def test_owners_by_reference_match_group_and_kind_in_any_version():
    refs = [
        {"apiVersion": "cache.example.com/v1beta1", "kind": "Memcached", "name": "a", "uid": "1"},
        {"apiVersion": "other.example.com/v1alpha1", "kind": "Memcached", "name": "b", "uid": "2"},
        {"apiVersion": "cache.example.com/v1alpha1", "kind": "Redis", "name": "c", "uid": "3"},
        {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "d", "uid": "4"},
    ]
    assert owned_by_reference(dependent(refs), MC) == ["a", "d"]
    assert owner_keys(dependent(refs), MC, owner_namespaced=True) == {("shop", "a"), ("shop", "d")}
    assert owner_keys(dependent(refs), MC, owner_namespaced=False) == {("", "a"), ("", "d")}
    assert owner_keys(dependent(refs), MC, owner_namespaced=True, by_reference=False) == set()


def test_owners_by_annotation():
    annotations = {
        PRIMARY_RESOURCE: "shop/mc",
        PRIMARY_RESOURCE_TYPE: "Memcached.cache.example.com",
    }
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "made", "annotations": annotations},
    }
    assert owned_by_annotation(ns, MC) == ("shop", "mc")
    assert owner_keys(ns, MC, owner_namespaced=True) == {("shop", "mc")}
    assert owner_keys(ns, MC, owner_namespaced=True, by_annotation=False) == set()
    cluster = {**annotations, PRIMARY_RESOURCE: "/mc"}
    assert owned_by_annotation(dependent(annotations=cluster), MC) == ("", "mc")
    bare_name = {**annotations, PRIMARY_RESOURCE: "mc"}
    assert owned_by_annotation(dependent(annotations=bare_name), MC) == ("", "mc")
    other_type = {**annotations, PRIMARY_RESOURCE_TYPE: "Redis.cache.example.com"}
    assert owned_by_annotation(dependent(annotations=other_type), MC) is None
    core = GVK("", "v1", "ConfigMap")
    core_annotations = {PRIMARY_RESOURCE: "shop/settings", PRIMARY_RESOURCE_TYPE: "ConfigMap"}
    assert owned_by_annotation(dependent(annotations=core_annotations), core) == (
        "shop",
        "settings",
    )


@pytest.mark.parametrize(
    "obj",
    [
        {},
        {"metadata": None},
        {"metadata": "text"},
        dependent(refs="not a list"),
        dependent(refs=[None, 3, "x", {"kind": "Memcached"}]),
        dependent(refs=[{"apiVersion": 7, "kind": "Memcached", "name": "x"}]),
        dependent(refs=[{"apiVersion": "cache.example.com/v1", "kind": "Memcached", "name": ""}]),
        dependent(annotations="not a map"),
        dependent(
            annotations={PRIMARY_RESOURCE: 5, PRIMARY_RESOURCE_TYPE: "Memcached.cache.example.com"}
        ),
        dependent(
            annotations={
                PRIMARY_RESOURCE: "shop/",
                PRIMARY_RESOURCE_TYPE: "Memcached.cache.example.com",
            }
        ),
    ],
)
def test_malformed_dependents_have_no_owner_and_never_raise(obj):
    assert owner_keys(obj, MC, owner_namespaced=True) == set()


BASE = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "web",
        "namespace": "shop",
        "resourceVersion": "1",
        "labels": {"app": "web"},
        "managedFields": [
            {"manager": "m", "time": "2024-01-01T00:00:00Z", "fieldsV1": {"f:a": {}}}
        ],
    },
    "spec": {"replicas": 1},
    "status": {"readyReplicas": 0},
}


def changed(path, value):
    obj = copy.deepcopy(BASE)
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return obj


@pytest.mark.parametrize(
    "new",
    [
        changed(["status", "readyReplicas"], 1),
        changed(["metadata", "resourceVersion"], "2"),
        changed(
            ["metadata", "managedFields"],
            [{"manager": "m", "time": "2025-01-01T00:00:00Z", "fieldsV1": {"f:a": {}}}],
        ),
        changed(["spec", "replicas"], 3),
        changed(["metadata", "labels"], {"app": "other"}),
        changed(["metadata", "annotations"], {"a": "b"}),
        changed(
            ["metadata", "managedFields"], [{"manager": "other", "time": "2024-01-01T00:00:00Z"}]
        ),
    ],
)
def test_equal_fingerprints_mean_the_dependent_predicate_drops_the_update(new):
    assert (fingerprint(BASE) != fingerprint(new)) == (dependent_view(BASE) != dependent_view(new))


def test_fingerprint_does_not_depend_on_key_order():
    reordered = {k: BASE[k] for k in reversed(list(BASE))}
    assert fingerprint(reordered) == fingerprint(BASE)
    assert len(fingerprint(BASE)) == 16
