"""core.conversion: declared conversions between a kind's versions, round trips without loss
(Hypothesis, over objects drawn from the versions' schemas), and what a declaration may not say."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_operator.core import argspec, conversion
from ansible_operator.core.conversion import ANNOTATION_PREFIX, ConversionError, Shape
from ansible_operator.scaffold import crds

ROOT = Path(__file__).resolve().parents[2]
GROUP = "example.com"

HUB_OPTIONS = {
    "size": {"type": "int"},
    "nested": {"type": "dict", "options": {"replicas": {"type": "int"}, "label": {"type": "str"}}},
    "ports": {
        "type": "list",
        "elements": "dict",
        "options": {
            "container_port": {"type": "int"},
            "name": {"type": "str"},
            "protocol": {"type": "str"},
        },
    },
    "only_hub": {"type": "str"},
    "tags": {"type": "list", "elements": "str"},
    "extra": {"type": "raw"},
}
# Every mechanism once: a rename, moves into an object, a scalar wrapped into a list's first
# element, a default on each side, fields only one side has, a free-form field copied.
DECLARATION = {
    "versions": [
        {
            "name": "v1alpha1",
            "options": {
                "count": {"type": "int"},
                "replicas": {"type": "int"},
                "label": {"type": "str"},
                "port": {"type": "int"},
                "only_spoke": {"type": "bool"},
                "tags": {"type": "list", "elements": "str"},
                "extra": {"type": "raw"},
            },
            "fields": [
                {"from": "count", "to": "size"},
                {"from": "replicas", "to": "nested.replicas"},
                {"from": "label", "to": "nested.label"},
                {"from": "port", "to": "ports[0].containerPort"},
                {"to": "ports[0].protocol", "default": "TCP"},
                {"from": "onlySpoke", "default": True},
            ],
        },
        {
            "name": "v1beta1",
            "options": {
                **{k: v for k, v in HUB_OPTIONS.items() if k != "size"},
                "scale": {"type": "int"},
            },
            "fields": [{"from": "scale", "to": "size"}],
        },
    ]
}
KIND = conversion.parse(
    DECLARATION, group=GROUP, kind="Thing", hub="v1", hub_options=HUB_OPTIONS, where="test"
)


def _values(shape: Shape) -> st.SearchStrategy[Any]:
    if shape.kind == "scalar":
        return {
            "int": st.integers(-5, 70000),
            "str": st.sampled_from(["", "TCP", "UDP", "a", "x.y"]),
            "bool": st.booleans(),
        }[shape.type]
    if shape.kind == "list":
        assert shape.item is not None
        return st.lists(_values(shape.item), max_size=3)
    if shape.kind == "object":
        return st.fixed_dictionaries({}, optional={k: _values(v) for k, v in shape.fields.items()})
    leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=3)
    return st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner, max_size=2)
        ),
    )


def _objects(version: str) -> st.SearchStrategy[dict[str, Any]]:
    shape = KIND.hub_shape if version == KIND.hub else KIND.spokes[version].shape
    metadata = st.fixed_dictionaries(
        {"name": st.just("thing")},
        optional={
            "annotations": st.dictionaries(
                st.sampled_from(["a", "b/c"]), st.text(max_size=2), min_size=1
            )
        },
    )
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just(f"{GROUP}/{version}"),
            "kind": st.just("Thing"),
            "metadata": metadata,
        },
        optional={"spec": _values(shape), "status": st.just({"phase": "Ready"})},
    )


@pytest.mark.parametrize("start", ["v1", "v1alpha1", "v1beta1"])
@pytest.mark.parametrize("through", ["v1", "v1alpha1", "v1beta1"])
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_a_round_trip_through_any_version_loses_nothing(
    start: str, through: str, data: Any
) -> None:
    obj = data.draw(_objects(start))
    before = copy.deepcopy(obj)
    there = conversion.convert(obj, through, KIND)
    assert there["apiVersion"] == f"{GROUP}/{through}"
    assert conversion.convert(there, start, KIND) == before
    assert obj == before  # the input is not changed


@settings(max_examples=100, deadline=None)
@given(obj=_objects("v1"))
def test_a_converted_object_has_only_fields_of_its_version(obj: dict[str, Any]) -> None:
    spoke = KIND.spokes["v1alpha1"]
    converted = conversion.convert(obj, "v1alpha1", KIND)
    assert set(converted.get("spec", {})) <= set(spoke.shape.fields)
    assert converted["metadata"]["name"] == obj["metadata"]["name"]
    assert converted.get("status") == obj.get("status")


def test_the_books_conversion_both_ways() -> None:
    """nginx's v1alpha1 `port` is v1alpha2's first port, TCP; what v1alpha1 cannot say is kept."""
    nginx = _nginx()
    old = {"apiVersion": "operator.example.com/v1alpha1", "kind": "NginxOperator",
           "metadata": {"name": "cluster"}, "spec": {"port": 8080, "replicas": 1}}  # fmt: skip
    new = conversion.convert(old, "v1alpha2", nginx)
    assert new["spec"] == {"replicas": 1, "ports": [{"containerPort": 8080, "protocol": "TCP"}]}
    assert "annotations" not in new["metadata"]
    assert conversion.convert(new, "v1alpha1", nginx) == old

    two = copy.deepcopy(new)
    two["spec"]["ports"] = [{"containerPort": 80, "name": "web", "protocol": "TCP"},
                            {"containerPort": 443, "protocol": "TCP"}]  # fmt: skip
    back = conversion.convert(two, "v1alpha1", nginx)
    assert back["spec"] == {"replicas": 1, "port": 80}
    kept = json.loads(back["metadata"]["annotations"][ANNOTATION_PREFIX + "v1alpha2"])
    assert kept == {"ports": [{"name": "web"}, {"containerPort": 443, "protocol": "TCP"}]}
    assert conversion.convert(back, "v1alpha2", nginx) == two

    # changed through v1alpha1: the new port number lands in the first port, the rest is kept
    back["spec"]["port"] = 8443
    again = conversion.convert(back, "v1alpha2", nginx)
    assert again["spec"]["ports"][0] == {"containerPort": 8443, "name": "web", "protocol": "TCP"}
    assert again["spec"]["ports"][1] == {"containerPort": 443, "protocol": "TCP"}


def _nginx() -> conversion.KindConversion:
    spec = yaml.safe_load((ROOT / "roles/nginx/meta/argument_specs.yml").read_text())
    return conversion.parse(
        yaml.safe_load((ROOT / "roles/nginx/meta/conversion.yml").read_text()),
        group="operator.example.com",
        kind="NginxOperator",
        hub="v1alpha2",
        hub_options=spec["argument_specs"]["main"]["options"],
        where="conversion.yml",
    )


def _refused(fields: list[Any], options: dict[str, Any] | None = None) -> str:
    spoke_options = options or DECLARATION["versions"][0]["options"]
    declaration = {"versions": [{"name": "v1alpha1", "options": spoke_options, "fields": fields}]}
    with pytest.raises(ConversionError) as err:
        conversion.parse(
            declaration, group=GROUP, kind="Thing", hub="v1", hub_options=HUB_OPTIONS, where="f.yml"
        )
    assert "\n" not in str(err.value)
    return str(err.value)


@pytest.mark.parametrize(
    ("fields", "options", "message"),
    [
        (
            [{"from": "portt", "to": "size"}],
            None,
            "f.yml: version v1alpha1: fields[1]: from: portt is not a field of v1alpha1's spec",
        ),
        (
            [{"from": "port", "to": "ports[0].number"}],
            None,
            "to: ports[0].number is not a field of v1's spec",
        ),
        (
            [{"from": "port", "to": "ports[1].containerPort"}],
            None,
            "only the first element of a list ([0]) can be mapped",
        ),
        (
            [{"from": "label", "to": "size"}],
            None,
            "not reversible: label is a str in v1alpha1 and size a int in v1",
        ),
        (
            [{"from": "count", "to": "size"}, {"from": "port", "to": "size"}],
            None,
            "not reversible: v1's size is mapped twice",
        ),
        (
            [{"from": "port", "to": "nested"}],
            None,
            "not reversible: port is a int in v1alpha1 and nested a object in v1",
        ),
        (
            [{"from": "count", "to": "nested"}, {"from": "port", "to": "nested.replicas"}],
            {
                "count": {
                    "type": "dict",
                    "options": {"replicas": {"type": "int"}, "label": {"type": "str"}},
                },
                "port": {"type": "int"},
            },
            "not reversible: v1's nested holds nested.replicas, mapped apart",
        ),
        (
            [{"from": "count", "to": "size", "default": 3}],
            None,
            "a default goes with a field only one version has",
        ),
        (
            [{"to": "ports[0].protocol", "default": 6}],
            None,
            "default 6 is not a str, as ports[0].protocol is",
        ),
        ([{"to": "onlyHub"}], None, "onlyHub alone says nothing"),
        ([{"from": "count", "too": "size"}], None, "unknown key 'too' (from, to, default)"),
        (
            [],
            {"size": {"type": "str"}},
            "not reversible: size is a str in v1alpha1 and a int in v1; map it",
        ),
    ],
)
def test_a_declaration_that_cannot_work_is_refused_in_one_line(
    fields: list[Any], options: dict[str, Any] | None, message: str
) -> None:
    assert message in _refused(fields, options)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"version": []}, "expected one key, versions"),
        ({"versions": [{"name": "v1"}]}, "version v1: the watch's own version"),
        (
            {"versions": [{"name": "v1alpha1"}, {"name": "v1alpha1"}]},
            "version v1alpha1: listed twice",
        ),
        ({"versions": [{"name": "1.0"}]}, "name must be a version such as v1alpha1"),
        ({"versions": [{"name": "v1alpha1", "schema": {}}]}, "unknown key 'schema'"),
    ],
)
def test_a_malformed_file_is_refused_in_one_line(data: Any, message: str) -> None:
    with pytest.raises(ConversionError, match=message):
        conversion.parse(data, group=GROUP, kind="Thing", hub="v1", hub_options={}, where="f.yml")


def test_an_unknown_version_is_a_value_error() -> None:
    obj = {"apiVersion": f"{GROUP}/v9", "kind": "Thing", "metadata": {"name": "a"}}
    with pytest.raises(ValueError, match=r"Thing\.example\.com has no version 'v9'"):
        conversion.convert(obj, "v1", KIND)


@pytest.mark.parametrize(
    ("annotation", "why"),
    [
        ("{not json", "it is not JSON"),
        ("[1, 2]", "it is not a JSON object"),
        ('{"ports[x]": 1}', "'ports[x]' is not a field path"),
        ('{"secretField": "x"}', "secretField is not a field of this version"),
        ('{"ports": [{"name": 5}]}', "ports is not a list of object"),
        ('{"ports": ' + "[" * 5000 + "]" * 5000 + "}", "it is not JSON"),
    ],
)
def test_an_annotation_the_version_cannot_hold_is_ignored_not_a_failed_conversion(
    annotation: str, why: str
) -> None:
    """Anyone who may edit the CR can write the annotation: it may not fail the conversion of
    every list of the kind, nor store what the schema forbids."""
    nginx = _nginx()
    annotations = {ANNOTATION_PREFIX + "v1alpha2": annotation}
    new = {"apiVersion": "operator.example.com/v1alpha2", "kind": "NginxOperator",
           "metadata": {"name": "a", "annotations": annotations},
           "spec": {"replicas": 1, "ports": [{"containerPort": 80, "protocol": "TCP"}]},
           }  # fmt: skip
    old = conversion.convert(new, "v1alpha1", nginx)
    ignored: list[str] = []
    back = conversion.convert(old, "v1alpha2", nginx, ignored)
    assert back["spec"] == {"replicas": 1, "ports": [{"containerPort": 80, "protocol": "TCP"}]}
    assert "annotations" not in back["metadata"]
    assert ignored == [f"the annotation {ANNOTATION_PREFIX}v1alpha2 is ignored: {why}"]


@pytest.mark.parametrize(
    "type_", [*argspec.SCALARS, *argspec.INT_OR_STRING, *argspec.FREE_FORM, "list", "dict"]
)
def test_a_type_means_one_thing_to_the_crd_and_to_conversion(type_: str) -> None:
    # The CRD's schema of an option and conversion's shape of it come from one model
    # (core.argspec): what the API server stores is what conversion reads.
    option = {"type": type_, "description": "x"}
    schema = crds.option_schema(option, camel=True, where="x")
    shape = conversion.shape_of_options({"x": option}, camel=True).fields["x"]
    if type_ in argspec.SCALARS:
        scalar = argspec.SCALARS[type_]
        assert (schema["type"], shape) == (argspec.JSON_TYPES[scalar], Shape("scalar", scalar))
    elif type_ in argspec.INT_OR_STRING:
        assert schema["x-kubernetes-int-or-string"] is True
        assert shape == Shape("scalar", "int-or-string")
    elif type_ in argspec.FREE_FORM or type_ == "dict":  # a dict without options is free-form
        assert schema[crds.PRESERVE] is True and shape == conversion.ANY
    else:
        assert schema["type"] == "array" and shape == Shape("list", item=conversion.ANY)
