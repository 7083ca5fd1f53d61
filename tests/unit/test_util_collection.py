"""operator_sdk.util: the pure parts of k8s_status and osdk_metric, and the modules' interfaces."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

COLLECTION = Path(__file__).resolve().parents[2] / "operator/ansible_collections/operator_sdk/util"
NOW = "2026-01-02T03:04:05Z"
EARLIER = "2025-12-31T00:00:00Z"


def load(relative: str) -> ModuleType:
    """A module_utils file, imported by path (no Ansible collection loader needed)."""
    path = COLLECTION / relative
    name = "osdk_util_" + path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


status = load("plugins/module_utils/status.py")
metric = load("plugins/module_utils/metric.py")


# --- merge patch ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        ({"a": 1}, {"b": 2}, {"a": 1, "b": 2}),
        ({"a": {"x": 1, "y": 2}}, {"a": {"y": 3}}, {"a": {"x": 1, "y": 3}}),
        ({"a": [1, 2]}, {"a": [3]}, {"a": [3]}),
        ({"a": 1, "b": 2}, {"a": None}, {"b": 2}),
        ({"a": "s"}, {"a": {"x": 1}}, {"a": {"x": 1}}),
        ({}, {"a": {"b": None}}, {"a": {}}),
    ],
)
def test_merge_patch_follows_rfc_7386(target, patch, expected):
    assert status.merge_patch(target, patch) == expected


# --- conditions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("conditions", "message"),
    [
        ("Ready", "must be a list"),
        (["Ready"], r"conditions\[0\] must be an object"),
        ([{"type": "Ready"}], "`status` must be set"),
        ([{"status": "True"}], "`type` must be set"),
        ([{"type": "Ready", "status": "yes"}], "must be one of"),
        ([{"type": "Ready", "status": "True", "reason": "two words"}], "CamelCase"),
        ([{"type": "Ready", "status": "True", "colour": "red"}], "unknown field.*colour"),
        ([{"type": "R", "status": "True", "lastTransitionTime": "yesterday"}], "RFC3339"),
        ([{"type": "R", "status": "True", "observedGeneration": "1"}], "integer"),
        ([{"type": "R", "status": "True"}, {"type": "R", "status": "False"}], "given twice"),
    ],
)
def test_bad_conditions_are_refused_naming_the_problem(conditions, message):
    with pytest.raises(status.StatusError, match=message):
        status.validate_conditions(conditions)


def test_boolean_condition_status_is_coerced():
    [condition] = status.validate_conditions([{"type": "Ready", "status": False}])
    assert condition["status"] == "False"


def test_conditions_merge_by_type_and_keep_others():
    current = [
        {
            "type": "Running",
            "status": "True",
            "reason": "Successful",
            "lastTransitionTime": EARLIER,
        },
        {"type": "Ready", "status": "False", "lastTransitionTime": EARLIER},
    ]
    given = [{"type": "Ready", "status": "True", "reason": "Up"}, {"type": "New", "status": "True"}]
    merged = status.merge_conditions(current, given, NOW)
    assert [c["type"] for c in merged] == ["Running", "Ready", "New"]
    assert merged[0] == current[0]
    assert merged[1] == {
        "type": "Ready",
        "status": "True",
        "reason": "Up",
        "lastTransitionTime": NOW,
    }
    assert merged[2]["lastTransitionTime"] == NOW


def test_a_condition_keeps_its_transition_time_while_its_status_stays():
    current = [{"type": "Ready", "status": "True", "message": "old", "lastTransitionTime": EARLIER}]
    merged = status.merge_conditions(current, [{"type": "Ready", "status": "True"}], NOW)
    assert merged == [{"type": "Ready", "status": "True", "lastTransitionTime": EARLIER}]


def test_a_given_transition_time_wins():
    given = [{"type": "Ready", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}]
    merged = status.merge_conditions([], given, NOW)
    assert merged[0]["lastTransitionTime"] == "2020-01-01T00:00:00Z"


# --- the status patch -------------------------------------------------------------------------


def test_status_keys_merge_into_the_current_status():
    current = {"conditions": [{"type": "Running", "status": "True"}], "mine": 1, "deep": {"a": 1}}
    patch, new = status.status_patch(current, {"deep": {"b": 2}, "test": "x"}, None, now=NOW)
    assert patch == {"deep": {"b": 2}, "test": "x"}
    assert new == {
        "conditions": [{"type": "Running", "status": "True"}],
        "mine": 1,
        "deep": {"a": 1, "b": 2},
        "test": "x",
    }


def test_the_same_request_twice_changes_nothing_the_second_time():
    request = ({"test": "hello world"}, [{"type": "Ready", "status": True, "reason": "Up"}])
    _, first = status.status_patch({}, *request, now=EARLIER)
    _, second = status.status_patch(first, *request, now=NOW)
    assert second == first


def test_conditions_inside_status_are_merged_too():
    current = {"conditions": [{"type": "A", "status": "True", "lastTransitionTime": EARLIER}]}
    _, new = status.status_patch(
        current, {"conditions": [{"type": "B", "status": "False"}]}, None, now=NOW
    )
    assert [c["type"] for c in new["conditions"]] == ["A", "B"]


def test_conditions_in_both_places_are_refused():
    with pytest.raises(status.StatusError, match="both"):
        status.status_patch(
            {},
            {"conditions": [{"type": "A", "status": "True"}]},
            [{"type": "B", "status": "True"}],
            now=NOW,
        )


def test_replace_keeps_only_what_was_given():
    current = {"mine": 1, "conditions": [{"type": "A", "status": "True"}]}
    patch, new = status.status_patch(
        current, {"other": 2}, [{"type": "B", "status": "True"}], now=NOW, replace=True
    )
    assert (
        patch
        == new
        == {
            "other": 2,
            "conditions": [{"type": "B", "status": "True", "lastTransitionTime": NOW}],
        }
    )


def test_null_removes_a_key():
    _, new = status.status_patch({"a": 1, "b": 2}, {"a": None}, None, now=NOW)
    assert new == {"b": 2}


# --- osdk_metric's request --------------------------------------------------------------------


def test_metric_body_carries_one_type_with_only_the_fields_given():
    params = {
        "name": "m",
        "description": "d",
        "address": None,
        "counter": None,
        "gauge": {"set": 5.0, "increment": None, "add": None},
        "histogram": None,
        "summary": None,
    }
    assert metric.request_body(params) == {"name": "m", "description": "d", "gauge": {"set": 5.0}}


def test_an_empty_type_registers_the_metric():
    params = {"name": "m", "description": "d", "counter": {"increment": None, "add": None}}
    assert metric.request_body(params)["counter"] == {}


def test_metric_address_prefers_the_argument_then_the_operators_url():
    url = "http://127.0.0.1:41234/metrics"
    assert metric.address({"address": "http://x/metrics"}, {metric.URL_ENV: url}) == (
        "http://x/metrics"
    )
    assert metric.address({"address": None}, {metric.URL_ENV: url}) == url
    assert metric.address({"address": None}, {}) == "http://localhost:5050/metrics"


def test_the_metric_url_variable_is_the_one_the_operator_publishes():
    from ansible_operator.runtime.observe import user_metrics

    assert metric.URL_ENV == user_metrics.URL_ENV


def test_metric_post_to_nowhere_says_so():
    with pytest.raises(metric.MetricPostError, match="cannot reach"):
        metric.post("http://127.0.0.1:1/metrics", {"name": "m"})


# --- the modules' documented interfaces match their argument specs -----------------------------


def module_docs(name: str) -> dict:
    tree = ast.parse((COLLECTION / "plugins/modules" / f"{name}.py").read_text())
    docs = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in ("DOCUMENTATION", "RETURN"):
                    docs[target.id] = yaml.safe_load(node.value.value)
                if isinstance(target, ast.Name) and target.id == "EXAMPLES":
                    docs[target.id] = yaml.safe_load(node.value.value)
    return docs


@pytest.mark.parametrize("name", ["k8s_status", "k8s_event", "osdk_metric", "requeue_after"])
def test_every_module_documents_options_examples_and_returns(name):
    docs = module_docs(name)
    assert docs["DOCUMENTATION"]["module"] == name
    assert docs["DOCUMENTATION"]["options"]
    assert isinstance(docs["EXAMPLES"], list) and docs["EXAMPLES"]
    assert docs["RETURN"]
    for example in docs["EXAMPLES"]:
        assert any(key.endswith(name) for key in example), example


def test_osdk_metric_documents_exactly_its_argument_spec():
    options = module_docs("osdk_metric")["DOCUMENTATION"]["options"]
    assert set(options) == set(metric.ARGUMENT_SPEC)
    for kind in metric.TYPES:
        assert set(options[kind]["suboptions"]) == set(metric.ARGUMENT_SPEC[kind]["options"])


ARGSPEC_SCRIPT = """
import json, sys
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
_AnsibleCollectionFinder(paths=[sys.argv[1]])._install()
import importlib
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
out = {"auth": sorted(AUTH_ARG_SPEC)}
for name in sys.argv[2:]:
    package = "ansible_collections.operator_sdk.util.plugins.modules."
    module = importlib.import_module(package + name)
    out[name] = module.argument_spec()
print(json.dumps(out))
"""


def test_the_kubernetes_modules_document_exactly_their_argument_specs():
    import json
    import subprocess

    collections = str(COLLECTION.parents[2])
    names = ["k8s_status", "k8s_event"]
    out = subprocess.run(
        [sys.executable, "-c", ARGSPEC_SCRIPT, collections, *names],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    specs = json.loads(out)
    for name in names:
        spec = {k: v for k, v in specs[name].items() if k not in specs["auth"]}
        documented = module_docs(name)["DOCUMENTATION"]["options"]
        assert set(spec) == set(documented), name
        for option, arg in spec.items():
            doc = documented[option]
            where = f"{name}.{option}"
            assert doc.get("type", "str") == arg.get("type", "str"), where
            assert doc.get("default") == arg.get("default"), where
            assert bool(doc.get("required")) == bool(arg.get("required")), where
            assert doc.get("choices") == arg.get("choices"), where
            assert doc.get("aliases") == arg.get("aliases"), where
            assert doc.get("elements") == arg.get("elements"), where
            assert set(doc.get("suboptions", {})) == set(arg.get("options", {})), where
