"""The alerts of config/prometheus and the queries of config/grafana, by Prometheus's own rule
engine: promtool, built from github.com/prometheus/prometheus (the module in promtool/) once
into the binaries' cache, as the bundle validator is.

- `promtool check rules` and `promtool test rules`: every alert fires on the series it is about
  and stays silent on others (prometheus/alerts_test.yaml);
- every panel query of the dashboard parses as PromQL;
- config/default with ../prometheus and ../grafana added renders the PrometheusRule and the
  dashboard's ConfigMap in the operator's namespace, named as its other objects, and the
  metrics Service whose name is the job the rules select;
- on the series a real operator serves after two reconciles (its /metrics twice, with the labels
  the Prometheus Operator adds to a target), every panel query has data but for those that may
  have none, and every series the alerts' tests feed is one the operator serves.

In the e2e layer because the last needs the local cluster, and `make e2e` runs on a machine that
builds Go programs; the first build of promtool takes about 4 minutes on 2 cores."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from ansible_operator.devcluster import binaries, deploy, gobuild

from .crds import GROUP, VERSION
from .resources import new_cr, wait_condition
from .tools import PROMTOOL

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
JOB = "ansible-operator-controller-manager-metrics-service"
# The labels a Prometheus Operator's scrape of the operator's Service adds to each series.
TARGET = {"job": JOB, "namespace": "ansible-operator-system", "pod": "manager-0"}
# What Grafana puts in place of the dashboard's variables, for one operator.
VARIABLES = {"$__rate_interval": "5m", "$job": JOB}
# Panels that may rightly have no data on a fresh operator, and why.
MAY_BE_EMPTY = {
    "Warm runner patches off": "every warm patch is on where its releases are tested",
    "Shards held": "served with --shards only, and this operator elects a leader",
}


@pytest.fixture(scope="module")
def promtool() -> Path:
    """The cached promtool; its first build (minutes) says so past pytest's capture."""

    def progress(message: str) -> None:
        print(f"[promtool] {message}", file=sys.__stderr__, flush=True)

    return gobuild.ensure(PROMTOOL, progress=progress)


def run(promtool: Path, *args: str, cwd: Path) -> tuple[int, str]:
    proc = subprocess.run(
        [str(promtool), *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    return proc.returncode, proc.stdout + proc.stderr


def write_alert_tests(directory: Path, rules_text: str) -> None:
    """The PrometheusRule's groups as the rule file the alerts' tests name, beside them."""
    rule = yaml.safe_load(rules_text)
    (directory / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    tests = (HERE / "prometheus/alerts_test.yaml").read_text()
    (directory / "alerts_test.yaml").write_text(tests)


def test_the_alerts_pass_promtools_checks_and_tests(promtool, tmp_path):
    write_alert_tests(tmp_path, (REPO / "config/prometheus/alerts.yaml").read_text())
    rc, out = run(
        promtool, "check", "rules", "--lint=all", "--lint-fatal", "rules.yaml", cwd=tmp_path
    )
    assert rc == 0, out
    rc, out = run(promtool, "test", "rules", "alerts_test.yaml", cwd=tmp_path)
    assert (rc, out.split()[-1]) == (0, "SUCCESS"), out


def test_a_changed_threshold_fails_the_alerts_tests(promtool, tmp_path):
    text = (REPO / "config/prometheus/alerts.yaml").read_text()
    assert text.count("> 1800") == 1
    write_alert_tests(tmp_path, text.replace("> 1800", "> 3600"))
    rc, out = run(promtool, "test", "rules", "alerts_test.yaml", cwd=tmp_path)
    assert rc == 1 and "alertname: AnsibleOperatorReconcileStuck, time: 35m" in out, out


def dashboard_queries() -> dict[str, str]:
    """Each panel query of the dashboard, named `<panel title> <refId>`, its variables set."""
    dashboard = json.loads((REPO / "config/grafana/operator-dashboard.json").read_text())
    queries = {}
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for variable, value in VARIABLES.items():
                expr = expr.replace(variable, value)
            assert "$" not in expr, f"{panel['title']}: a variable the test does not know"
            queries[f"{panel['title']} {target['refId']}"] = expr
    return queries


def test_every_dashboard_query_parses(promtool, tmp_path):
    rules = [
        {"record": f"dashboard:query_{n}", "expr": expr}
        for n, expr in enumerate(dashboard_queries().values())
    ]
    (tmp_path / "dashboard.yaml").write_text(
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]})
    )
    rc, out = run(promtool, "check", "rules", "--lint=none", "dashboard.yaml", cwd=tmp_path)
    assert rc == 0, out
    assert f"SUCCESS: {len(rules)} rules found" in out


def test_config_default_renders_the_alerts_and_the_dashboard(tmp_path):
    shutil.copytree(REPO / "config", tmp_path / "config")
    default = tmp_path / "config/default/kustomization.yaml"
    kustomization = yaml.safe_load(default.read_text())
    kustomization["resources"] += ["../prometheus", "../grafana"]
    default.write_text(yaml.safe_dump(kustomization))
    rendered = deploy.render(binaries.kubectl(), tmp_path, "quay.io/example/op:0.1.0")
    objects = {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(rendered)}
    assert ("Service", JOB) in objects, "the job the rules select is the metrics Service's name"
    rule = objects[("PrometheusRule", "ansible-operator-controller-manager-alerts")]
    assert rule["metadata"]["namespace"] == "ansible-operator-system"
    assert (
        rule["spec"] == yaml.safe_load((REPO / "config/prometheus/alerts.yaml").read_text())["spec"]
    )
    dashboard = objects[("ConfigMap", "ansible-operator-grafana-dashboard")]
    assert dashboard["metadata"]["namespace"] == "ansible-operator-system"
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["data"]["operator-dashboard.json"] == (
        (REPO / "config/grafana/operator-dashboard.json").read_text()
    )


# The series a family of each type has, by their suffix.
SERIES_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}


def scrape(url: str) -> tuple[dict[str, float], set[str]]:
    """Every sample of /metrics, as a series selector with the target's labels (a label of the
    operator's own that a target label would hide is kept as exported_<label>, as Prometheus
    keeps it) -> value; and the name of every series its families have or will have (a family
    with labels shows no series before its first child)."""
    with urllib.request.urlopen(url, timeout=10) as resp:
        text = resp.read().decode()
    samples = {}
    names = set()
    for family in text_string_to_metric_families(text):
        names |= {family.name + suffix for suffix in SERIES_SUFFIXES.get(family.type, ("",))}
        for sample in family.samples:
            labels = {(f"exported_{k}" if k in TARGET else k): v for k, v in sample.labels.items()}
            labels.update(TARGET)
            inner = ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(labels.items()))
            samples[f"{sample.name}{{{inner}}}"] = sample.value
            names.add(sample.name)
    return samples, names


def promql_value(value: float | None) -> str:
    if value is None:
        return "_"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Inf" if value > 0 else "-Inf"
    return repr(value)


def test_the_dashboard_and_the_alerts_read_what_a_real_operator_serves(
    operator, crs, namespace, promtool, tmp_path
):
    operator.write_watches([{"kind": "Greeting", "role": "greeting"}])
    operator.start(
        "--leader-elect",
        "--leader-election-id=alerts-e2e",
        f"--leader-election-namespace={namespace}",
    )
    url = operator.launched.metrics_url
    scrapes = []
    served = {"up"}
    for name in ("first", "second"):
        crs.create_namespaced_custom_object(
            GROUP, VERSION, namespace, "greetings", new_cr("Greeting", name, {"who": name})
        )
        wait_condition(crs, namespace, "Greeting", name, "Successful")
        samples, names = scrape(url)
        scrapes.append(samples)
        served |= names
    up = "up{" + ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(TARGET.items())) + "}"
    scrapes[0][up] = scrapes[1][up] = 1.0
    series = [
        {"series": s, "values": " ".join(promql_value(scrape.get(s)) for scrape in scrapes)}
        for s in sorted(scrapes[1])
    ]
    queries = dashboard_queries()
    checks = [
        # absent(q) is empty exactly when q has data
        {"expr": f"absent({expr})", "eval_time": "1m", "exp_samples": []}
        for name, expr in queries.items()
        if name.rsplit(" ", 1)[0] not in MAY_BE_EMPTY
    ]
    tests = {"tests": [{"interval": "1m", "input_series": series, "promql_expr_test": checks}]}
    (tmp_path / "dashboard_test.yaml").write_text(yaml.safe_dump(tests, width=1000))
    rc, out = run(promtool, "test", "rules", "dashboard_test.yaml", cwd=tmp_path)
    assert rc == 0, out

    alert_tests = yaml.safe_load((HERE / "prometheus/alerts_test.yaml").read_text())
    fed = {
        s["series"].split("{", 1)[0] for case in alert_tests["tests"] for s in case["input_series"]
    }
    assert fed - served == set(), "the alerts' tests feed series the operator does not serve"
