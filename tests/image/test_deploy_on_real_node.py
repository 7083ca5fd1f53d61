"""``make deploy`` on a local cluster with a real node: the operator image runs as a real Pod.

The image is loaded into the node (``dev-cluster load-image``, and the examples' workload images
with ``example-images``), and ``make deploy`` applies ``config/default`` as a user runs it. The
Pod then runs with its ServiceAccount's token, passes its readiness probe, reconciles every
sample (the memcached one's workload runs), answers the API server's conversion reviews through
the webhook's Service, and serves its metrics behind RBAC through the metrics Service;
``make undeploy`` removes it and its container.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.e2e.cluster import Cluster
from tests.e2e.dev_cluster import dev_cluster
from tests.e2e.project import wait_successful
from tests.e2e.real_node import NODE, RealNode, pod_processes, ready, real_node_cluster
from tests.e2e.waiting import wait_until
from tests.image.access import account_token, scrape, scraper
from tests.image.samples import SAMPLES, apply_samples

REPO = Path(__file__).resolve().parents[2]
SYSTEM = "ansible-operator-system"  # config/default's namespace
PREFIX = "ansible-operator-"  # and name prefix


@pytest.fixture(scope="module")
def real_node(tmp_path_factory: pytest.TempPathFactory, built_image: str) -> Iterator[RealNode]:
    with real_node_cluster(tmp_path_factory.mktemp("real-node")) as node:
        for loaded in (
            dev_cluster("load-image", built_image, state_dir=node.state_dir),
            dev_cluster("example-images", state_dir=node.state_dir),  # the workloads' own
        ):
            assert loaded.returncode == 0, loaded.stderr
        yield node


def make(*args: str, kubeconfig: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=REPO,
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_make_deploy_runs_the_operator_as_a_pod_on_the_real_node(real_node, built_image):
    deployed = make("deploy", f"IMG={built_image}", kubeconfig=real_node.kubeconfig)
    assert deployed.returncode == 0, deployed.stderr
    assert "no container runs" not in deployed.stderr, "the cluster has a real node"
    core = real_node.core()
    pod = wait_until(
        lambda: next((p for p in core.list_namespaced_pod(SYSTEM).items if ready(p)), None),
        what="the operator's Pod Ready (its readiness probe passing)",
        timeout=300,
    )
    assert pod.spec.node_name == NODE
    assert pod.status.container_statuses[0].container_id.startswith("containerd://")
    assert pod_processes(pod.metadata.uid), "the operator runs in the Pod's cgroup"

    # Every sample, reconciled by the Pod: its log shows each one's runs.
    cluster = Cluster(real_node.kubeconfig)
    with cluster.api_client() as api_client:
        crs = client.CustomObjectsApi(api_client)
        # The webhook's Service reaches the Pod once kube-proxy has its endpoint, a moment after
        # the Pod is Ready (until then: connection refused, as on any cluster).
        wait_until(
            lambda: _converts(crs), what="the conversion webhook through its Service", timeout=120
        )
        refs = apply_samples(cluster, "default", SAMPLES)
        wait_successful(crs, "default", refs, timeout=600)
        logs = real_node.kubectl("logs", "-n", SYSTEM, pod.metadata.name).stdout
        runs = {json.loads(line).get("name") for line in logs.splitlines() if line.startswith("{")}
        assert {name for *_, name in refs} <= runs, logs

        # The memcached sample's workload runs: Debian's memcached answers its readiness probe
        # (the kubelet's connection to port 11211).
        apps = client.AppsV1Api(api_client)
        wait_until(
            lambda: (
                apps.read_namespaced_deployment(
                    "memcached-sample-memcached", "default"
                ).status.ready_replicas
                == 1
            ),
            what="the memcached sample's Pod Ready",
            timeout=300,
        )

        # The API server converts through the webhook's Service (kube-proxy's rules on the
        # machine take it to the Pod): the v1alpha1 sample, stored as v1alpha2.
        nginx = next(ref for ref in refs if ref[:2] == ("operator.example.com", "v1alpha1"))
        converted = crs.get_namespaced_custom_object(
            "operator.example.com", "v1alpha2", "default", "nginxoperators", nginx[3]
        )
        assert converted["apiVersion"] == "operator.example.com/v1alpha2"
        assert converted["spec"]["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]

        # The metrics, through their Service, for a reader only.
        metrics = f"{PREFIX}controller-manager-metrics-service"
        service = core.read_namespaced_service(metrics, SYSTEM)
        url = f"https://{service.spec.cluster_ip}:8443/metrics"
        manager = account_token(cluster, SYSTEM, f"{PREFIX}controller-manager")
        assert scrape(url, manager)[0] == 403
        with scraper(cluster, "default", f"{PREFIX}metrics-reader") as token:
            status, body = scrape(url, token)
        assert status == 200, body
        assert "ansible_operator_build_info" in body
        assert "ansible_operator_conversion_reviews_total" in body
        assert 'ansible_operator_reconcile_result{GVK="cache.example.com/v1alpha1' in body

        # Their finalizers run in the Pod before it goes.
        for group, version, plural, name in refs:
            crs.delete_namespaced_custom_object(group, version, "default", plural, name)
        for group, version, plural, name in refs:
            wait_until(
                lambda g=group, v=version, p=plural, n=name: _gone(crs, g, v, p, n),
                what=f"{plural}/{name} deleted",
                timeout=300,
            )

    undeployed = make("undeploy", f"IMG={built_image}", kubeconfig=real_node.kubeconfig)
    assert undeployed.returncode == 0, undeployed.stderr
    wait_until(
        lambda: SYSTEM not in {n.metadata.name for n in core.list_namespace().items},
        what=f"namespace {SYSTEM} gone",
        timeout=300,
    )
    wait_until(
        lambda: not pod_processes(pod.metadata.uid),
        what="the operator's container stopped on the node",
        timeout=120,
    )


def _converts(crs: client.CustomObjectsApi) -> bool:
    """Whether a v1alpha1 NginxOperator can be created (a dry run: the API server converts it
    to the stored v1alpha2 through the webhook)."""
    cr = yaml.safe_load(next(p for p in SAMPLES if "v1alpha1_nginx" in p.name).read_text())
    try:
        crs.create_namespaced_custom_object(
            "operator.example.com", "v1alpha1", "default", "nginxoperators", cr, dry_run="All"
        )
    except ApiException as err:
        if err.status == 500 and "conversion webhook" in str(err.body):
            return False
        raise
    return True


def _gone(crs: client.CustomObjectsApi, group: str, version: str, plural: str, name: str) -> bool:
    try:
        crs.get_namespaced_custom_object(group, version, "default", plural, name)
    except ApiException as err:
        return err.status == 404
    return False
