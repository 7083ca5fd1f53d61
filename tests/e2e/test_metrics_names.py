"""Dashboards and alerts written for upstream read ours: after one reconcile, every metric family
upstream's ansible-operator v1.42.3 served (tests/data/upstream_metrics_v1.42.3.txt, scraped
from it in the same setup: roles/memcached, one Memcached, leader election) is served here with
the same type and label names, except the deliberate absences below (docs/metrics.md)."""

from __future__ import annotations

import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes.client.rest import ApiException
from prometheus_client.parser import text_string_to_metric_families

from ansible_operator.devcluster.processes import free_ports
from ansible_operator.runtime.observe.metrics_tls import self_signed_pair

from .crds import install_crds
from .operators import Operator
from .waiting import wait_until

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = REPO / "tests" / "data" / "upstream_metrics_v1.42.3.txt"
CRD = REPO / "config" / "crd" / "bases" / "cache.example.com_memcacheds.yaml"

# Families of upstream's scrape not served here, on purpose (docs/metrics.md says why).
ABSENT_PREFIXES = ("go_",)  # Go's runtime: there is no Go runtime here
ABSENT = {
    # Upstream's operator registers no webhook, so its counter of webhook panics stays 0; ours
    # is served with a conversion webhook only, which this test's operator has not.
    "controller_runtime_webhook_panics",
}
# User counters whose names do not end in _total: served untyped under their own name here
# (prometheus_client writes a counter's sample as <name>_total), so a query finds the same series.
UNTYPED_USER_COUNTERS = {"sanity_counter", "counter_inc_test", "counter_add_test"}
# Labels ours has beyond upstream's (a query by upstream's labels still matches).
EXTRA_LABELS = {
    "ansible_operator_build_info": {
        "ansible_core_version",
        "ansible_runner_version",
        "ansible_core_end_of_life",
    },
}
NOT_LABELS = {"le", "quantile"}  # a histogram's bucket, a summary's quantile


def families(text: str) -> dict[str, tuple[str, frozenset[str]]]:
    """Each family's type and label names (prometheus_client's names: no ``_total``)."""
    found = {}
    for family in text_string_to_metric_families(text):
        labels = {name for sample in family.samples for name in sample.labels} - NOT_LABELS
        found[family.name] = (family.type, frozenset(labels))
    return found


def test_the_upstream_fixture_is_a_scrape_of_every_family_kind():
    upstream = families(UPSTREAM.read_text())
    assert len([n for n in upstream if not n.startswith(ABSENT_PREFIXES)]) == 44
    assert upstream["controller_runtime_reconcile"] == (
        "counter",
        frozenset({"controller", "result"}),
    )


@pytest.fixture
def operator(cluster, namespace, tmp_path) -> Iterator[Operator]:
    """The operator, with a temporary directory of its own: roles/memcached posts its user
    metrics once per such directory."""
    op = Operator(tmp_path, cluster.kubeconfig, [namespace], own_tmp_dir=True)
    try:
        yield op
    finally:
        op.stop()
        op.print_log()


def test_our_families_are_upstreams(operator, cluster, namespace, crs, tmp_path):
    with cluster.api_client() as api_client:
        install_crds(api_client, [yaml.safe_load(CRD.read_text())])
    certs = tmp_path / "certs"  # the metrics certificate from files, as certwatcher reads it
    certs.mkdir()
    cert_pem, key_pem = self_signed_pair()
    (certs / "tls.crt").write_bytes(cert_pem)
    (certs / "tls.key").write_bytes(key_pem)
    (metrics_port,) = free_ports(1)
    operator.write_watches(
        [
            {
                "group": "cache.example.com",
                "version": "v1alpha1",
                "kind": "Memcached",
                "role": str(REPO / "roles" / "memcached"),
            }
        ]
    )
    operator.start(
        f"--metrics-bind-address=127.0.0.1:{metrics_port}",
        "--metrics-secure",
        f"--metrics-cert-dir={certs}",
        "--leader-elect",
        "--leader-election-id=metrics-names",
        f"--leader-election-namespace={namespace}",
    )
    sample = {
        "apiVersion": "cache.example.com/v1alpha1",
        "kind": "Memcached",
        "metadata": {"name": "memcached-sample"},
        "spec": {"size": 1},
    }
    crs.create_namespaced_custom_object(
        "cache.example.com", "v1alpha1", namespace, "memcacheds", sample
    )

    def successful() -> bool:
        try:
            got = crs.get_namespaced_custom_object(
                "cache.example.com", "v1alpha1", namespace, "memcacheds", "memcached-sample"
            )
        except ApiException:
            return False
        conditions = (got.get("status") or {}).get("conditions") or []
        return any(c["type"] == "Successful" and c["status"] == "True" for c in conditions)

    wait_until(successful, what="the Memcached to be reconciled", timeout=180)
    unverified = ssl.create_default_context()
    unverified.check_hostname = False
    unverified.verify_mode = ssl.CERT_NONE
    url = f"https://127.0.0.1:{metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=30, context=unverified) as resp:
        ours = families(resp.read().decode())
    upstream = families(UPSTREAM.read_text())

    expected = {
        name: shape
        for name, shape in upstream.items()
        if not name.startswith(ABSENT_PREFIXES) and name not in ABSENT
    }
    missing = sorted(set(expected) - set(ours))
    assert not missing, f"upstream's families not served: {missing}"
    for name, (kind, labels) in expected.items():
        our_kind, our_labels = ours[name]
        if name in UNTYPED_USER_COUNTERS:
            kind = "unknown"
        assert our_kind == kind, f"{name}: {our_kind}, upstream's is a {kind}"
        assert our_labels - EXTRA_LABELS.get(name, set()) == labels, (
            f"{name}: labels {sorted(our_labels)}, upstream's {sorted(labels)}"
        )
    assert not [n for n in ours if n.startswith(ABSENT_PREFIXES) or n in ABSENT]
