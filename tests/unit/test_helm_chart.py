"""`generate helm-chart`'s pure parts: values.yaml kept through regeneration, text that is not
Helm's own left as written, input it cannot use refused in one line. Helm itself checks the
chart in tests/e2e/test_helm_chart.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_operator.scaffold import helm_chart

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "op-controller-manager", "namespace": "op-system"},
    "spec": {
        "replicas": 1,
        "template": {
            "spec": {
                "containers": [
                    {"name": "manager", "image": "registry:5000/op", "args": ["--leader-elect"]}
                ]
            }
        },
    },
}


def test_values_set_before_stay_and_keys_no_template_reads_are_kept_and_named():
    known = helm_chart.values(DEPLOYMENT, {"manager"})
    old = "manager:\n  replicas: 4\n  image: {tag: v2}\nmine: {a: 1}\n"
    text, unknown = helm_chart.values_yaml(known, old)
    values = yaml.safe_load(text)
    assert values["manager"]["replicas"] == 4
    assert values["manager"]["image"] == {
        "repository": "registry:5000/op",
        "tag": "v2",
        "pullPolicy": "",
    }
    assert values["manager"]["leaderElect"] is True
    assert values["mine"] == {"a": 1} and unknown == ["mine.a"]
    assert "# Replicas of the operator" in text  # each value documented


def test_a_values_file_that_is_not_yaml_is_one_line():
    with pytest.raises(helm_chart.ChartError, match=r"values\.yaml is not YAML"):
        helm_chart.values_yaml(helm_chart.values(DEPLOYMENT, set()), "a: [")


def test_helms_delimiters_in_an_object_are_printed_as_they_are():
    rule = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x", "namespace": "op-system"},
        "data": {"summary": "{{ $labels.kind }} in op-system", "at": "x.op-system.svc:443"},
    }
    text = helm_chart.template(rule, "other", "op-system", set())
    assert 'summary: \'{{ "{{" }} $labels.kind {{ "}}" }} in op-system\'' in text
    assert "at: x.{{ .Release.Namespace }}.svc:443" in text
    assert "namespace: '{{ .Release.Namespace }}'" in text


def test_manifests_without_the_managers_deployment_are_refused(tmp_path: Path):
    with pytest.raises(helm_chart.ChartError, match="no Deployment of config/manager"):
        helm_chart.chart(
            [{"kind": "Namespace", "metadata": {"name": "op-system"}}],
            tmp_path,
            name="op",
            version="0.1.0",
            old_values=None,
        )
