"""The operator's alerts, their runbook and its dashboard, as files: every alert has a severity, a
summary, a description and a runbook section that exists, selects the project's job, and has
promtool tests that see it fire and stay silent; the dashboard is a Grafana dashboard whose
every panel queries the operator's metrics; `init` writes all of it for the project it makes.
promtool runs the rules and parses the queries in tests/e2e/test_prometheus_rules.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from ansible_operator.scaffold import init

REPO = Path(__file__).resolve().parents[2]
RULE = yaml.safe_load((REPO / "config/prometheus/alerts.yaml").read_text())
ALERTS = [rule for group in RULE["spec"]["groups"] for rule in group["rules"]]
RUNBOOK = (REPO / "docs/alerts.md").read_text()
PROMTOOL_TESTS = yaml.safe_load((REPO / "tests/e2e/prometheus/alerts_test.yaml").read_text())
DASHBOARD = json.loads((REPO / "config/grafana/operator-dashboard.json").read_text())
JOB = 'job="ansible-operator-controller-manager-metrics-service"'


def anchor(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading (GitHub's: lower case, spaces to '-',
    punctuation dropped)."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_a_prometheus_rule_in_the_kustomization():
    assert (RULE["apiVersion"], RULE["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    kustomization = yaml.safe_load((REPO / "config/prometheus/kustomization.yaml").read_text())
    assert kustomization["resources"] == ["monitor.yaml", "alerts.yaml"]


@pytest.mark.parametrize("rule", ALERTS, ids=lambda rule: rule["alert"])
def test_each_alert_is_complete(rule):
    assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}
    assert rule["labels"]["severity"] in ("critical", "warning", "info")
    annotations = rule["annotations"]
    assert set(annotations) == {"summary", "description", "runbook_url"}
    assert annotations["runbook_url"] == f"docs/alerts.md#{rule['alert'].lower()}"
    assert JOB in rule["expr"], "every expression selects the operator's job"


def test_every_alert_and_only_they_have_a_runbook_section():
    sections = [line[3:] for line in RUNBOOK.splitlines() if line.startswith("## ")]
    alerts = [rule["alert"] for rule in ALERTS]
    assert [s for s in sections if s.startswith("AnsibleOperator")] == alerts
    assert {anchor(s) for s in sections} >= {rule["alert"].lower() for rule in ALERTS}


def test_every_alert_has_promtool_tests_that_see_it_fire_and_stay_silent():
    firing: set[str] = set()
    silent: set[str] = set()
    for case in PROMTOOL_TESTS["tests"]:
        for check in case["alert_rule_test"]:
            (firing if check["exp_alerts"] else silent).add(check["alertname"])
    alerts = {rule["alert"] for rule in ALERTS}
    assert (firing, silent) == (alerts, alerts)


def panels(dashboard: dict) -> list[dict]:
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def test_the_dashboard_is_one_of_grafana():
    assert DASHBOARD["uid"] and DASHBOARD["title"] and DASHBOARD["schemaVersion"] >= 36
    variables = {v["name"]: v for v in DASHBOARD["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"
    assert "ansible_operator_build_info" in variables["job"]["query"]["query"]
    ids = [p["id"] for p in DASHBOARD["panels"]]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    for panel in DASHBOARD["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and grid["h"] > 0, panel["title"]
    for panel in panels(DASHBOARD):
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["title"] and panel["description"], panel["id"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert 'job=~"$job"' in target["expr"], (panel["title"], target["refId"])
        ref_ids = [t["refId"] for t in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids)), panel["title"]


def test_the_panels_do_not_overlap():
    cells: dict[tuple[int, int], str] = {}
    for panel in DASHBOARD["panels"]:
        grid = panel["gridPos"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, (panel["title"], cells.get((x, y)))
                cells[(x, y)] = panel["title"]


def test_the_dashboard_shows_what_an_operator_is_watched_by():
    exprs = " ".join(t["expr"] for p in panels(DASHBOARD) for t in p["targets"])
    for family in [
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "ansible_operator_reconcile_result",
        "ansible_operator_reconciles_bucket",
        "workqueue_depth",
        "workqueue_queue_duration_seconds_bucket",
        "workqueue_longest_running_processor_seconds",
        "controller_runtime_active_workers",
        'ansible_operator_warm_patch_off{job=~"$job", patch="*"}',
        "leader_election_master_status",
        "rest_client_requests_total",
    ]:
        assert family in exprs, family


def test_the_grafana_kustomization_makes_the_sidecars_config_map():
    kustomization = yaml.safe_load((REPO / "config/grafana/kustomization.yaml").read_text())
    (generator,) = kustomization["configMapGenerator"]
    assert generator["files"] == ["operator-dashboard.json"]
    assert generator["options"]["labels"] == {"grafana_dashboard": "1"}


def test_init_writes_the_alerts_for_its_own_job_the_dashboard_and_the_runbook():
    files = init.files("mc-operator", "example.com")
    rule = yaml.safe_load(files["config/prometheus/alerts.yaml"])
    exprs = [r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]]
    assert len(exprs) == len(ALERTS)
    for expr in exprs:
        assert 'job="mc-operator-controller-manager-metrics-service"' in expr
        assert "ansible-operator-controller" not in expr
    assert json.loads(files["config/grafana/operator-dashboard.json"]) == DASHBOARD
    runbook = files["docs/alerts.md"]
    assert "kubectl -n mc-operator-system logs deploy/mc-operator-controller-manager" in runbook
