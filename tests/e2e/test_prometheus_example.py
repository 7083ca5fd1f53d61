"""The prometheus role's rendered scrape configuration is one Prometheus loads: the role's
template (roles/prometheus/templates/prometheus.yml.j2), rendered by Ansible as a run renders it,
checked by Prometheus's own `promtool check config`: test_prometheus_rules.py's promtool, built
once into the binaries' cache. Its build leaves the discovery plugins out, but promtool imports
the Kubernetes discovery itself, so `kubernetes_sd_configs` are checked (an unknown role is
refused).

On the local cluster kwok runs no container, so the molecule scenario checks what the role
wrote, not that Prometheus reads it; this is where that is checked. The monitors are as the API
server hands them to the role (camelCase, defaults filled in)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_operator.devcluster import gobuild

from .tools import PROMTOOL

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "roles/prometheus/templates/prometheus.yml.j2"
# Every selector form and endpoint field the ServiceMonitor kind has.
MONITORS = [
    {
        "metadata": {"name": "api"},
        "spec": {
            "selector": {
                "matchLabels": {"app.kubernetes.io/name": "api-server", "team": "web"},
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["backend", "batch.jobs"]},
                    {"key": "example.com/stage", "operator": "NotIn", "values": ["dev"]},
                    {"key": "metrics", "operator": "Exists"},
                    {"key": "canary", "operator": "DoesNotExist"},
                ],
            },
            "endpoints": [
                {"port": "metrics", "path": "/metrics", "scheme": "http"},
                {
                    "port": "admin-https",
                    "path": "/internal/metrics",
                    "scheme": "https",
                    "intervalSeconds": 10,
                    "scrapeTimeoutSeconds": 10,
                },
            ],
        },
    },
    {
        "metadata": {"name": "every-service"},
        "spec": {"selector": {}, "endpoints": [{"port": "web", "path": "/", "scheme": "http"}]},
    },
]


@pytest.fixture(scope="module")
def promtool() -> Path:
    """The cached promtool; its first build (minutes) says so past pytest's capture."""

    def progress(message: str) -> None:
        print(f"[promtool] {message}", file=sys.__stderr__, flush=True)

    return gobuild.ensure(PROMTOOL, progress=progress)


def render(tmp_path: Path, monitors: list[dict[str, Any]]) -> str:
    """prometheus.yml as the role renders it for prometheus-sample in namespace monitoring."""
    variables = {
        "template": str(TEMPLATE),
        "out": str(tmp_path / "prometheus.yml"),
        "ansible_operator_meta": {"name": "prometheus-sample", "namespace": "monitoring"},
        "scrape_interval_seconds": 30,
        "prometheus_monitors": monitors,
    }
    (tmp_path / "vars.json").write_text(json.dumps(variables))
    playbook = [
        {
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Render",
                    "ansible.builtin.copy": {
                        "content": "{{ lookup('ansible.builtin.template', template) }}",
                        "dest": "{{ out }}",
                        "mode": "0644",
                    },
                }
            ],
        }
    ]
    (tmp_path / "render.yml").write_text(yaml.safe_dump(playbook))
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "render.yml", "-e", "@vars.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return (tmp_path / "prometheus.yml").read_text()


def check_config(promtool: Path, directory: Path) -> tuple[int, str]:
    proc = subprocess.run(
        [str(promtool), "check", "config", "prometheus.yml"],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_prometheus_loads_the_configuration_of_every_selector_form(promtool, tmp_path):
    config = yaml.safe_load(render(tmp_path, MONITORS))
    assert [job["job_name"] for job in config["scrape_configs"]] == [
        "serviceMonitor/monitoring/api/0",
        "serviceMonitor/monitoring/api/1",
        "serviceMonitor/monitoring/every-service/0",
    ]
    rc, out = check_config(promtool, tmp_path)
    assert rc == 0 and "SUCCESS" in out, out


def test_prometheus_loads_the_configuration_of_no_monitor(promtool, tmp_path):
    assert yaml.safe_load(render(tmp_path, []))["scrape_configs"] == []
    rc, out = check_config(promtool, tmp_path)
    assert rc == 0 and "SUCCESS" in out, out


def test_a_monitor_the_role_leaves_out_would_fail_the_whole_configuration(promtool, tmp_path):
    """Why the role judges monitors before rendering: one timeout above its interval, rendered,
    and Prometheus refuses everything."""
    slow = {
        "metadata": {"name": "slow"},
        "spec": {
            "selector": {},
            "endpoints": [
                {"port": "metrics", "intervalSeconds": 10, "scrapeTimeoutSeconds": 20},
            ],
        },
    }
    render(tmp_path, [*MONITORS, slow])
    rc, out = check_config(promtool, tmp_path)
    assert rc == 1 and "scrape timeout greater than scrape interval" in out, out
