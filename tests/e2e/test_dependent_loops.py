"""A CR whose runs trigger themselves through a dependent, against the real cluster: the role
``looper`` writes a new timestamp into a ConfigMap it owns on every run, so each write wakes the
next run; the operator reports it once, as a Warning Event on the CR and a log line naming the
ConfigMap and ``data.timestamp``, and counts it. A CR whose role writes the same value every time
settles and gets no report. docs/runs.md, "Runs that trigger themselves"."""

from __future__ import annotations

import json
import urllib.request

import pytest
from kubernetes import client

from ansible_operator.core import loops

from .crds import GROUP, VERSION, install_crds, kind_crd
from .operators import STRUCTURED_LOG, Operator, records_of
from .resources import events_of, new_cr
from .test_dependents import dependent_changes, reconciles
from .waiting import wait_until

pytestmark = pytest.mark.e2e

KIND = "Looper"
GVK = f"{GROUP}/{VERSION}, Kind={KIND}"


@pytest.fixture(scope="module")
def loopers(cluster) -> None:
    with cluster.api_client() as api_client:
        install_crds(api_client, [kind_crd(KIND)])


def loop_events(core: client.CoreV1Api, namespace: str, name: str) -> list:
    return events_of(core, namespace, name, "DependentLoop")


def loops_counted(operator: Operator) -> float:
    assert operator.launched is not None and operator.launched.metrics_url is not None
    with urllib.request.urlopen(operator.launched.metrics_url, timeout=30) as resp:
        text = resp.read().decode()
    prefix = f'ansible_operator_dependent_loops_total{{GVK="{GVK}"}} '
    return sum(float(line[len(prefix) :]) for line in text.splitlines() if line.startswith(prefix))


def run_records(operator: Operator, namespace: str, name: str) -> list[dict]:
    assert operator.launched is not None and operator.launched.metrics_url is not None
    base = operator.launched.metrics_url.removesuffix("/metrics")
    path = f"/runs/{GROUP}/{VERSION}/{KIND}/{namespace}/{name}"
    with urllib.request.urlopen(base + path, timeout=30) as resp:
        return json.loads(resp.read())["runs"]


def test_a_dependent_loop_is_reported_once_and_an_idempotent_role_is_not(
    operator, crs, core, namespace, loopers
):
    operator.write_watches([{"kind": KIND, "role": "looper"}])
    operator.start(*STRUCTURED_LOG)
    plural = KIND.lower() + "s"
    for name, stamp in (("loop", True), ("calm", False)):
        crs.create_namespaced_custom_object(
            GROUP, VERSION, namespace, plural, new_cr(KIND, name, {"stamp": stamp})
        )
    wait_until(
        lambda: (
            reconciles(operator.records(), namespace, "loop")
            and reconciles(operator.records(), namespace, "calm")
        ),
        what="the first runs",
    )
    wait_until(
        lambda: records_of(operator.records(), "Watching dependent resource"),
        what="the ConfigMaps watched",
    )

    # The first run created the ConfigMaps (a create wakes no one). A spec change runs both
    # again, and from then on the stamping role's every write wakes it; repeated until the
    # watch, started by the first run, has seen one of those writes.
    kicks = iter(range(1, 1000))

    def looping() -> list[dict]:
        looped = [r for r in dependent_changes(operator.records()) if r["owner"].endswith("/loop")]
        if not looped:
            kick = next(kicks)
            for name in ("loop", "calm"):
                crs.patch_namespaced_custom_object(
                    GROUP, VERSION, namespace, plural, name, {"spec": {"kick": kick}}
                )
        return looped

    [first, *_] = wait_until(looping, what="a run of loop woken by its ConfigMap", every=5)
    assert first["object"] == f"{namespace}/loop-state" and first["fields"] == ["data.timestamp"]

    [event] = wait_until(
        lambda: loop_events(core, namespace, "loop"), what="the DependentLoop Event"
    )
    assert event.type == "Warning"
    assert f"ConfigMap {namespace}/loop-state (data.timestamp)" in event.message
    assert 'blacklist: [{group: "", version: v1, kind: ConfigMap}]' in event.message
    [line] = [r for r in operator.records() if str(r.get("msg", "")).startswith("Dependent loop:")]
    assert line["level"] == "warning" and event.message in line["msg"]
    assert line["dependents"] == [f"ConfigMap {namespace}/loop-state"]
    assert line["fields"] == ["data.timestamp"] and line["runs"] == loops.THRESHOLD

    # The loop goes on, reported once: the calm CR's runs stay as they were meanwhile, and the
    # run records say what woke each of loop's runs.
    reported_at = len(reconciles(operator.records(), namespace, "loop"))
    calm_runs = len(reconciles(operator.records(), namespace, "calm"))
    wait_until(
        lambda: (
            len(reconciles(operator.records(), namespace, "loop")) >= reported_at + loops.THRESHOLD
        ),
        what="more runs of loop",
    )
    assert len(reconciles(operator.records(), namespace, "calm")) == calm_runs
    assert loops_counted(operator) == 1
    assert len(loop_events(core, namespace, "loop")) == 1
    assert loop_events(core, namespace, "calm") == []
    last = run_records(operator, namespace, "loop")[0]["trigger"]
    assert (last["reason"], last["fields"]) == ("DependentChanged", ["data.timestamp"])
    assert last["object"]["name"] == "loop-state"
