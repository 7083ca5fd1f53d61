"""Extra vars: assembly order, snake_case, unsafe marking, object var names, the document."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from yaml.resolver import Resolver

from ansible_operator.core.extravars import (
    UnsafeText,
    build_extra_vars,
    extravars_document,
    mark_unsafe,
    object_var_name,
)
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


def u(s: str) -> UnsafeText:
    return UnsafeText(s)


def tags(value: Any) -> Any:
    """`value` with each string's mark made visible (UnsafeText equals its str), to compare."""
    if isinstance(value, UnsafeText):
        return ("!unsafe", str(value))
    if isinstance(value, dict):
        return {tags(key): tags(item) for key, item in value.items()}
    if isinstance(value, list):
        return [tags(item) for item in value]
    return value


class TagLoader(yaml.SafeLoader):
    """Reads `!unsafe` back as UnsafeText, as Ansible reads it as its unsafe text."""


TagLoader.add_constructor("!unsafe", lambda loader, node: u(loader.construct_scalar(node)))


def reads_as_str(text: str) -> bool:
    """Whether YAML reads `text` unquoted as a string (and not a number, bool, null, date...)."""
    return Resolver().resolve(yaml.ScalarNode, text, (True, False)) == "tag:yaml.org,2002:str"


def as_written(value: Any) -> Any:
    """`value` as the document holds it: a marked text that YAML would read unquoted as
    something else is written as a plain quoted string (it cannot hold a template)."""
    if isinstance(value, UnsafeText) and not reads_as_str(value):
        return str(value)
    if isinstance(value, dict):
        return {as_written(key): as_written(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_written(item) for item in value]
    return value


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
        ({"k": "v", "n": {"m": ["x", 1]}}, {u("k"): u("v"), u("n"): {u("m"): [u("x"), 1]}}),
        ({}, {}),
        ([], []),
    ],
)
def test_mark_unsafe(value: Any, marked: Any) -> None:
    assert tags(mark_unsafe(value)) == tags(marked)


def test_keys_are_marked_even_when_strings_are_not() -> None:
    marked = mark_unsafe({"{{ k }}": ["{{ v }}", {"x": "y"}]}, strings=False)
    assert tags(marked) == {("!unsafe", "{{ k }}"): ["{{ v }}", {("!unsafe", "x"): "y"}]}


def test_default_watch_marks_every_cr_string() -> None:
    obj = cr({"size": 3, "imageTag": "1.6", "nested": {"listOf": ["a", 1]}})
    result = build_extra_vars(obj, watch(), finalizing=False)
    assert tags(result) == tags(
        {
            u("size"): 3,
            u("image_tag"): u("1.6"),
            u("nested"): {u("list_of"): [u("a"), 1]},
            "ansible_operator_meta": {"name": "sample", "namespace": "default"},
            "_cache_example_com_memcached": mark_unsafe(obj),
            "_cache_example_com_memcached_spec": {
                u("size"): 3,
                u("imageTag"): u("1.6"),
                u("nested"): {u("listOf"): [u("a"), 1]},
            },
        }
    )
    # The object var really is the whole object, marked: metadata and status included.
    whole = tags(result["_cache_example_com_memcached"])
    assert whole[("!unsafe", "metadata")][("!unsafe", "name")] == ("!unsafe", "sample")
    assert whole[("!unsafe", "metadata")][("!unsafe", "generation")] == 2
    assert whole[("!unsafe", "status")][("!unsafe", "conditions")][0] == {
        ("!unsafe", "type"): ("!unsafe", "Running"),
        ("!unsafe", "status"): ("!unsafe", "True"),
    }


@pytest.mark.parametrize("mark_unsafe_setting", [None, True])
def test_marking_is_on_unless_explicitly_off(mark_unsafe_setting: bool | None) -> None:
    result = build_extra_vars(
        cr({"a": "x"}), watch(mark_unsafe=mark_unsafe_setting), finalizing=False
    )
    assert tags(result["a"]) == ("!unsafe", "x")
    assert tags(result["_cache_example_com_memcached_spec"]) == {("!unsafe", "a"): ("!unsafe", "x")}


def test_mark_unsafe_false_leaves_strings_plain_but_marks_keys() -> None:
    obj = cr({"someKey": "{{ 1 + 1 }}"})
    result = build_extra_vars(obj, watch(mark_unsafe=False), finalizing=False)
    assert result == {
        "some_key": "{{ 1 + 1 }}",
        "ansible_operator_meta": {"name": "sample", "namespace": "default"},
        "_cache_example_com_memcached": obj,
        "_cache_example_com_memcached_spec": {"someKey": "{{ 1 + 1 }}"},
    }
    assert tags(result["_cache_example_com_memcached_spec"]) == {
        ("!unsafe", "someKey"): "{{ 1 + 1 }}"
    }
    assert all(type(key) is UnsafeText for key in result["_cache_example_com_memcached"])


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


def test_the_document_reads_back_as_written_with_every_mark() -> None:
    obj = cr({"a": [1, 2.5, 1e20, None, True, "s", {"b": "c"}], "k": {"{{ x }}": "{{ y }}"}})
    w = watch(vars={"x": {"y": [1]}, "t": "{{ templated }}"}, finalizer=Finalizer(name="f"))
    result = build_extra_vars(obj, w, finalizing=True)
    text = extravars_document(result)
    assert tags(yaml.load(text, Loader=TagLoader)) == tags(as_written(result))
    assert '"t": "{{ templated }}"' in text  # the watch's own vars: plain, templated by Ansible


@pytest.mark.parametrize(
    "text",
    [
        "line\nbreak",
        'quote " and \\ backslash',
        "\x00\x07\x1b\x7f\x80\x85\x9f control",
        "\u2028\u2029 separators, \ufeff, \U0001f600",
        "--- !!python/object:os.system\n...",
        "&anchor *alias !tag %directive # comment",
        "yes",
        "0x1F",
        "1e3",
        "~",
        "",
        " leading and trailing ",
        "x" * 100_000,
    ],
)
def test_any_text_reads_back_exactly_as_a_key_and_a_value(text: str) -> None:
    marked = mark_unsafe({text: [text]})
    loaded = yaml.load(extravars_document(marked), Loader=TagLoader)
    assert tags(loaded) == tags(as_written(marked))
    assert loaded == {text: [text]}  # a string, whatever it looks like


@given(st.text())
def test_a_text_yaml_would_not_read_as_a_string_holds_no_template(text: str) -> None:
    """Why those texts may go unmarked: Jinja's delimiters never start a number, a bool, a null
    or a date, so a text that YAML reads unquoted as one of them holds none."""
    if not reads_as_str(text):
        assert not any(start in text for start in ("{{", "{%", "{#"))
    assert reads_as_str("{{" + text) and reads_as_str(text + "{% x %}")


@pytest.mark.parametrize("marker", ["__ansible_unsafe", "__ansible_vault", "__ansible_type"])
def test_the_document_is_never_json_so_no_marker_key_is_decoded(marker: str) -> None:
    text = extravars_document(mark_unsafe({marker: {"ansible_operator_meta": "forged"}}))
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)  # Ansible tries JSON first, with its markers; YAML has no such keys
    assert tags(yaml.load(text, Loader=TagLoader)) == {
        ("!unsafe", marker): {("!unsafe", "ansible_operator_meta"): ("!unsafe", "forged")}
    }
    assert extravars_document({}).startswith("#")  # even with nothing to mark
