"""The operator's HTTP endpoints: health probes and Prometheus metrics."""

from __future__ import annotations

import datetime
import urllib.request
from importlib.metadata import version

import pytest

from ansible_operator.core import ansible_cores
from ansible_operator.devcluster.processes import free_ports

from .crds import GROUP, VERSION
from .resources import new_cr, wait_condition
from .waiting import wait_until

pytestmark = pytest.mark.e2e


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except OSError:
        return None, ""


@pytest.mark.ansible_core  # the end-of-life line: on 2.18 since November 2026, not on 2.21
def test_probes_and_metrics_are_served(operator, crs, namespace):
    metrics_port, probe_port = free_ports(2)
    operator.write_watches([{"kind": "Greeting", "role": "greeting"}])
    operator.start(
        f"--metrics-bind-address=127.0.0.1:{metrics_port}",
        f"--health-probe-bind-address=127.0.0.1:{probe_port}",
    )
    wait_until(
        lambda: get(f"http://127.0.0.1:{probe_port}/healthz")[0] == 200, what="/healthz to answer"
    )
    assert get(f"http://127.0.0.1:{probe_port}/readyz") == (200, "ok")

    crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "greetings", new_cr("Greeting", "m", {"who": "metrics"})
    )
    wait_condition(crs, namespace, "Greeting", "m", "Successful")
    status, body = get(f"http://127.0.0.1:{metrics_port}/metrics")
    assert status == 200
    gvk = f"{GROUP}/{VERSION}, Kind=Greeting"
    assert f'ansible_operator_reconcile_result{{GVK="{gvk}",result="succeeded"}} 1.0' in body
    assert f'ansible_operator_reconciles_count{{GVK="{gvk}"}} 1.0' in body
    # A core past its end of life is said once at start, in the log and the metric's label.
    core = version("ansible-core")
    major, minor = (int(number) for number in core.split(".")[:2])
    supported = ansible_cores.find((major, minor))
    assert supported is not None
    ended = supported.past_end_of_life(datetime.datetime.now(datetime.UTC).date())
    assert (
        f'ansible_operator_build_info{{ansible_core_end_of_life="'
        f'{supported.end_of_life_month if ended else ""}",ansible_core_version="{core}",'
        f'ansible_runner_version="{version("ansible-runner")}",commit="unknown"'
    ) in body
    said = [line for line in operator.log().splitlines() if "reached its end of life" in line]
    assert len(said) == (1 if ended else 0), said
