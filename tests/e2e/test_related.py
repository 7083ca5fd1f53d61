"""Cross-kind watches (watches.yaml's relatedResources) against the real cluster: an object of
another kind created after the CR reconciles it at once, mapped by the CR's label selector, by
the object's reference to the CR, or as every CR of its namespace; an object that concerns no
CR reconciles nothing, which ansible_operator_related_events_total and the watch event counter
tell (never a wait for nothing to happen)."""

from __future__ import annotations

import urllib.request

import pytest
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from .crds import GROUP, VERSION
from .operators import STRUCTURED_LOG, Operator, records_of
from .resources import new_cr
from .waiting import wait_until

pytestmark = pytest.mark.e2e

KIND = "Greeting"  # the watched kind (a test CRD), run by roles/related, which writes nothing
GVK = f"{GROUP}/{VERSION}, Kind={KIND}"
CONFIG_MAP = "/v1, Kind=ConfigMap"
ECHO = f"{GROUP}/{VERSION}, Kind=Echo"
SECRET = "/v1, Kind=Secret"


def metric(op: Operator, name: str, **labels: str) -> float:
    """A sample of the operator's /metrics (0 when absent)."""
    assert op.launched is not None and op.launched.metrics_url is not None
    with urllib.request.urlopen(op.launched.metrics_url, timeout=30) as resp:
        text = resp.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def triggered(op: Operator, related: str) -> float:
    return metric(op, "ansible_operator_related_events_total", GVK=GVK, related=related)


def runs(op: Operator, namespace: str, name: str) -> int:
    """The finished reconciles of a CR, from the operator's log."""
    return len(records_of(op.records(), "reconciled", key=f"{namespace}/{name}"))


def wait_runs(op: Operator, namespace: str, name: str, count: int) -> None:
    wait_until(
        lambda: runs(op, namespace, name) >= count,
        what=f"{KIND} {namespace}/{name} reconciled {count} times",
        timeout=60,
    )


def test_related_objects_reconcile_the_crs_they_concern(operator, namespace, crs, core):
    operator.write_watches(
        [
            {
                "kind": KIND,
                "role": "related",
                "relatedResources": [
                    {
                        "version": "v1",
                        "kind": "ConfigMap",
                        "selector": {"matchLabels": {"example": "yes"}},
                        "mapBy": {"crSelector": "spec.configMapSelector"},
                    },
                    {
                        "group": GROUP,
                        "version": VERSION,
                        "kind": "Echo",
                        "mapBy": {"objectRef": "spec.greeting"},
                    },
                    {
                        "version": "v1",
                        "kind": "Secret",
                        "selector": {"matchLabels": {"all": "yes"}},
                        "mapBy": {"allInNamespace": True},
                    },
                ],
            }
        ]
    )
    # Ready means every informer, the related ones too, has listed its kind: what is created
    # from here on is a change. The period is far beyond the test: it explains no run.
    operator.start("--reconcile-period=10h", *STRUCTURED_LOG)
    plural = KIND.lower() + "s"
    team_a = {"configMapSelector": {"matchLabels": {"team": "a"}}}
    crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, plural, new_cr(KIND, "a", team_a)
    )
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, plural, new_cr(KIND, "b", {}))
    wait_runs(operator, namespace, "a", 1)
    wait_runs(operator, namespace, "b", 1)

    # crSelector: a ConfigMap of team b (seen: it has example=yes) concerns no CR; then one of
    # team a reconciles CR a, and only it.
    def config_map(name: str, labels: dict[str, str]) -> client.V1ConfigMap:
        return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels))

    core.create_namespaced_config_map(namespace, config_map("b", {"example": "yes", "team": "b"}))
    core.create_namespaced_config_map(namespace, config_map("a", {"example": "yes", "team": "a"}))
    wait_runs(operator, namespace, "a", 2)
    # Both came through the same watch, in order: the first was seen and mapped to nothing.
    assert metric(operator, "ansible_operator_watch_events_total", GVK=CONFIG_MAP) == 2
    assert triggered(operator, CONFIG_MAP) == 1
    [record] = records_of(
        operator.records(), "Related object changed, reconciling", related="ConfigMap"
    )
    assert (record["object"], record["key"], record["event"]) == (
        f"{namespace}/a",
        f"{namespace}/a",
        "ADDED",
    )
    assert runs(operator, namespace, "b") == 1

    # objectRef: an Echo naming no CR of its namespace, then one naming CR b.
    for name, greeting in (("nobody", "c"), ("to-b", "b")):
        body = new_cr("Echo", name, {"greeting": greeting, "message": "hi"})
        crs.create_namespaced_custom_object(GROUP, VERSION, namespace, "echos", body)
    wait_runs(operator, namespace, "b", 2)
    assert metric(operator, "ansible_operator_watch_events_total", GVK=ECHO) == 2
    assert triggered(operator, ECHO) == 1
    assert runs(operator, namespace, "a") == 2

    # allInNamespace: a Secret without the label (not even sent by the API server), then one
    # with it, which reconciles both CRs, once each.
    for name, labels in (("plain", {}), ("all", {"all": "yes"})):
        secret = client.V1Secret(metadata=client.V1ObjectMeta(name=name, labels=labels))
        core.create_namespaced_secret(namespace, secret)
    wait_runs(operator, namespace, "a", 3)
    wait_runs(operator, namespace, "b", 3)
    assert triggered(operator, SECRET) == 2

    # A delete reconciles the CRs the object concerned.
    core.delete_namespaced_config_map("a", namespace)
    wait_runs(operator, namespace, "a", 4)
    assert triggered(operator, CONFIG_MAP) == 2
