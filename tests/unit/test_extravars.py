"""Extra vars: assembly order, snake_case, unsafe marking, object var names."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from ansible_operator.core.extravars import build_extra_vars, mark_unsafe, object_var_name
from ansible_operator.core.watches import GVK, Finalizer, Watch

MEMCACHED = GVK("cache.example.com", "v1alpha1", "Memcached")


def cr(
    spec: Any = None, *, name: str = "sample", namespace: str | None = "default"
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": MEMCACHED.api_version,
        "kind": MEMCACHED.kind,
        "metadata": {"name": name, "uid": "u-1", "generation": 2},
        "status": {"conditions": [{"type": "Running", "status": "True"}]},
    }
    if namespace is not None:
        obj["metadata"]["namespace"] = namespace
    if spec is not None:
        obj["spec"] = spec
    return obj


def watch(**kwargs: Any) -> Watch:
    return Watch(gvk=kwargs.pop("gvk", MEMCACHED), role="/roles/memcached", **kwargs)


def u(s: str) -> dict[str, str]:
    return {"__ansible_unsafe": s}


@pytest.mark.parametrize(
    ("gvk", "name"),
    [
        (MEMCACHED, "_cache_example_com_memcached"),
        (GVK("", "v1", "Secret"), "__secret"),
        (GVK("cert-manager.k8s.io", "v1", "Certificate"), "_cert_manager_k8s_io_certificate"),
        (GVK("apps", "v1", "Deployment"), "_apps_deployment"),
        (GVK("x.io", "v1", "My-Kind"), "_x_io_my_kind"),
    ],
)
def test_object_var_name(gvk: GVK, name: str) -> None:
    assert object_var_name(gvk) == name


@pytest.mark.parametrize(
    ("value", "marked"),
    [
        ("s", u("s")),
        ("", u("")),
        ("{{ lookup('env', 'HOME') }}", u("{{ lookup('env', 'HOME') }}")),
        (3, 3),
        (2.5, 2.5),
        (True, True),
        (None, None),
        ([1, "a", [None, "b"]], [1, u("a"), [None, u("b")]]),
        ({"k": "v", "n": {"m": ["x", 1]}}, {"k": u("v"), "n": {"m": [u("x"), 1]}}),
        ({}, {}),
        ([], []),
    ],
)
def test_mark_unsafe(value: Any, marked: Any) -> None:
    assert mark_unsafe(value) == marked


def test_default_watch_marks_every_cr_string() -> None:
    obj = cr({"size": 3, "imageTag": "1.6", "nested": {"listOf": ["a", 1]}})
    result = build_extra_vars(obj, watch(), finalizing=False)
    assert result == {
        "size": 3,
        "image_tag": u("1.6"),
        "nested": {"list_of": [u("a"), 1]},
        "ansible_operator_meta": {"name": "sample", "namespace": "default"},
        "_cache_example_com_memcached": mark_unsafe(obj),
        "_cache_example_com_memcached_spec": {
            "size": 3,
            "imageTag": u("1.6"),
            "nested": {"listOf": [u("a"), 1]},
        },
    }
    # The object var really is the whole object, marked: metadata and status included.
    whole = result["_cache_example_com_memcached"]
    assert whole["metadata"]["name"] == u("sample")
    assert whole["metadata"]["generation"] == 2
    assert whole["status"]["conditions"][0]["type"] == u("Running")


@pytest.mark.parametrize("mark_unsafe_setting", [None, True])
def test_marking_is_on_unless_explicitly_off(mark_unsafe_setting: bool | None) -> None:
    result = build_extra_vars(
        cr({"a": "x"}), watch(mark_unsafe=mark_unsafe_setting), finalizing=False
    )
    assert result["a"] == u("x")
    assert result["_cache_example_com_memcached_spec"] == {"a": u("x")}


def test_mark_unsafe_false_leaves_strings_plain() -> None:
    obj = cr({"someKey": "{{ 1 + 1 }}"})
    result = build_extra_vars(obj, watch(mark_unsafe=False), finalizing=False)
    assert result == {
        "some_key": "{{ 1 + 1 }}",
        "ansible_operator_meta": {"name": "sample", "namespace": "default"},
        "_cache_example_com_memcached": obj,
        "_cache_example_com_memcached_spec": {"someKey": "{{ 1 + 1 }}"},
    }


def test_snake_case_off_is_a_shallow_copy_with_original_keys() -> None:
    obj = cr({"someKey": {"innerKey": 1}})
    result = build_extra_vars(
        obj, watch(snake_case_parameters=False, mark_unsafe=False), finalizing=False
    )
    assert result["someKey"] == {"innerKey": 1}
    assert "some_key" not in result


@pytest.mark.parametrize(
    ("spec", "params"),
    [
        (None, {}),  # no spec at all
        ("not a mapping", {}),
        (["a"], {}),
        ({}, {}),
    ],
)
def test_missing_or_bad_spec_is_empty(spec: Any, params: dict[str, Any]) -> None:
    obj = cr(spec)
    result = build_extra_vars(obj, watch(mark_unsafe=False), finalizing=False)
    assert result["_cache_example_com_memcached_spec"] == params
    # The object var is the object as it is (so it may lack `spec`).
    assert result["_cache_example_com_memcached"] == obj
    assert set(result) == {
        "ansible_operator_meta",
        "_cache_example_com_memcached",
        "_cache_example_com_memcached_spec",
    }


def test_cluster_scoped_namespace_is_empty_string() -> None:
    result = build_extra_vars(cr({}, namespace=None), watch(), finalizing=False)
    assert result["ansible_operator_meta"] == {"name": "sample", "namespace": ""}


def test_core_group_key() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"}}
    result = build_extra_vars(
        secret, watch(gvk=GVK("", "v1", "Secret"), mark_unsafe=False), finalizing=False
    )
    assert result["__secret"] == secret
    assert result["__secret_spec"] == {}


def test_assembly_order_later_steps_win() -> None:
    obj = cr(
        {
            "ansibleOperatorMeta": "from spec",  # snake-cased onto the meta var, then overwritten
            "fromVars": "spec value",
            "fromFinalizer": "spec value",
        }
    )
    w = watch(
        mark_unsafe=False,
        vars={
            "from_vars": "watch var",
            "meta": "{{ ansible_operator_meta }}",
            "from_finalizer": "watch",
        },
        finalizer=Finalizer(name="f", vars={"from_finalizer": "finalizer var", "state": "absent"}),
    )
    normal = build_extra_vars(obj, w, finalizing=False)
    assert normal["ansible_operator_meta"] == {"name": "sample", "namespace": "default"}
    assert normal["from_vars"] == "watch var"
    assert normal["meta"] == "{{ ansible_operator_meta }}"
    assert normal["from_finalizer"] == "watch"
    assert "state" not in normal

    finalizing = build_extra_vars(obj, w, finalizing=True)
    assert finalizing["from_finalizer"] == "finalizer var"
    assert finalizing["state"] == "absent"
    assert finalizing["from_vars"] == "watch var"


def test_watch_vars_are_not_marked_even_when_marking() -> None:
    w = watch(vars={"meta": "{{ ansible_operator_meta }}"})
    result = build_extra_vars(cr({}), w, finalizing=False)
    assert result["meta"] == "{{ ansible_operator_meta }}"


def test_finalizing_without_finalizer_adds_nothing() -> None:
    result = build_extra_vars(cr({"a": 1}), watch(mark_unsafe=False), finalizing=True)
    assert result["a"] == 1


def test_watch_vars_can_overwrite_object_vars() -> None:
    w = watch(vars={"_cache_example_com_memcached": "replaced"})
    assert (
        build_extra_vars(cr({}), w, finalizing=False)["_cache_example_com_memcached"] == "replaced"
    )


@pytest.mark.parametrize("mark", [None, False])
def test_result_shares_nothing_with_inputs(mark: bool | None) -> None:
    obj = cr({"list": [{"a": 1}], "map": {"b": [2]}})
    original = copy.deepcopy(obj)
    w = watch(mark_unsafe=mark, snake_case_parameters=False, vars={"v": {"x": [1]}})
    result = build_extra_vars(obj, w, finalizing=False)
    result["list"].append("new")
    result["map"]["b"].append(3)
    result["v"]["x"].append(2)
    result["_cache_example_com_memcached"]["metadata"]["name"] = "changed"
    result["_cache_example_com_memcached_spec"]["map"]["b"].append(4)
    assert obj == original
    assert w.vars == {"v": {"x": [1]}}


def test_json_serialisable() -> None:
    obj = cr({"a": [1, 2.5, None, True, "s", {"b": "c"}]})
    w = watch(vars={"x": {"y": [1]}}, finalizer=Finalizer(name="f", vars={"z": None}))
    result = build_extra_vars(obj, w, finalizing=True)
    assert json.loads(json.dumps(result)) == result
