"""End-to-end fixtures: the cluster, a namespace per test, the test CRDs, API clients, and the
operator as a real process against the local cluster (helpers live in plain modules: cluster,
crds, resources, operators, waiting).

Each test starts its own operator limited to its own namespace (WATCH_NAMESPACE), with a
watches.yaml written for it that points at small roles under ``tests/e2e/roles``.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from .cluster import EXISTING_CLUSTER_ENV, Cluster
from .crds import install_crds, kind_crd
from .operators import Operator
from .waiting import wait_until


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if os.environ.get(EXISTING_CLUSTER_ENV):
        yield Cluster(Path(os.environ[EXISTING_CLUSTER_ENV]))
        return
    from ansible_operator.devcluster import binaries
    from ansible_operator.devcluster.cluster import DevCluster

    def progress(message: str) -> None:
        print(f"[test cluster] {message}", file=sys.stderr)

    dev = DevCluster(tmp_path_factory.mktemp("dev-cluster"), progress=progress)
    kubeconfig = dev.up(binaries.ensure(progress=progress))
    try:
        yield Cluster(kubeconfig)
    finally:
        dev.down()


@pytest.fixture
def namespace(cluster: Cluster) -> Iterator[str]:
    """A namespace of its own for one test, whose default ServiceAccount exists; deleted after."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    with cluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        core.create_namespace({"metadata": {"name": name}})

        def default_account():
            try:
                return core.read_namespaced_service_account("default", name)
            except ApiException as err:
                if err.status != 404:
                    raise
                return None

        wait_until(default_account, what=f"the default ServiceAccount of {name}", timeout=60)
        yield name
        core.delete_namespace(name)


KINDS = ["Greeting", "Flaky", "Counter", "Requeuer", "Finalized", "Sleeper", "Echo", "Picky"]


@pytest.fixture(scope="session")
def test_crds(cluster) -> None:
    with cluster.api_client() as api_client:
        install_crds(api_client, [kind_crd(kind) for kind in KINDS])


@pytest.fixture
def operator(cluster, namespace, test_crds, tmp_path) -> Iterator[Operator]:
    op = Operator(tmp_path, cluster.kubeconfig, [namespace])
    try:
        yield op
    finally:
        op.stop()
        print(f"---- operator log ({op.log_path}) ----\n{op.log()[-20000:]}", file=sys.stderr)


@pytest.fixture
def crs(cluster) -> Iterator[client.CustomObjectsApi]:
    with cluster.api_client() as api_client:
        yield client.CustomObjectsApi(api_client)


@pytest.fixture
def core(cluster) -> Iterator[client.CoreV1Api]:
    with cluster.api_client() as api_client:
        yield client.CoreV1Api(api_client)
