"""End-to-end fixtures: the cluster, a namespace per test, the test CRDs, API clients, and the
operator as a real process against the local cluster (helpers live in plain modules: cluster,
crds, resources, operators, waiting).

Each test starts its own operator limited to its own namespace (WATCH_NAMESPACE), with a
watches.yaml written for it that points at small roles under ``tests/e2e/roles``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from kubernetes import client

from .cluster import Cluster, cluster, namespace  # fixtures, used by name
from .crds import install_crds, kind_crd
from .health import check_command
from .operators import Operator

KINDS = ["Greeting", "Flaky", "Counter", "Requeuer", "Finalized", "Sleeper", "Echo", "Picky"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules marked `long` first (a stable sort keeps each module's order): parallel
    workers take whole modules in this order (--dist loadfile), so the longest ones start at
    once instead of ending the run alone."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


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
        op.print_log()


@pytest.fixture
def crs(cluster) -> Iterator[client.CustomObjectsApi]:
    with cluster.api_client() as api_client:
        yield client.CustomObjectsApi(api_client)


@pytest.fixture
def core(cluster) -> Iterator[client.CoreV1Api]:
    with cluster.api_client() as api_client:
        yield client.CoreV1Api(api_client)


@pytest.fixture
def apps(cluster) -> Iterator[client.AppsV1Api]:
    with cluster.api_client() as api_client:
        yield client.AppsV1Api(api_client)


@pytest.fixture(scope="session")
def kstatus_check(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The command that reads a CR as kstatus and Argo CD's health check do (health.py)."""
    return check_command(tmp_path_factory.mktemp("argocd"))
