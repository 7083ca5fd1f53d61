"""The cluster the e2e tests run against: its kubeconfig, API clients and component pids.

A private one is started for the session unless ANSIBLE_OPERATOR_TEST_KUBECONFIG names the
kubeconfig of a cluster that is already running (for example the shared one or the one
``make run`` started), which is then used and left alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from .waiting import wait_until

EXISTING_CLUSTER_ENV = "ANSIBLE_OPERATOR_TEST_KUBECONFIG"


@dataclass(frozen=True)
class Cluster:
    kubeconfig: Path

    def api_client(self):  # a new client each call: tests may close theirs
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))

    def component_pid(self, name: str) -> int:
        """The pid of one control-plane process, for tests that disturb it on purpose."""
        state = json.loads((self.kubeconfig.parent / "state.json").read_text())
        return int(state["components"][name]["pid"])


@contextlib.contextmanager
def session_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The shared cluster named by ANSIBLE_OPERATOR_TEST_KUBECONFIG, else a private one."""
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


@contextlib.contextmanager
def fresh_namespace(cluster: Cluster) -> Iterator[str]:
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


# The fixtures, for the conftest of each layer that runs against the cluster (e2e, image).
@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with session_cluster(tmp_path_factory) as started:
        yield started


@pytest.fixture
def namespace(cluster: Cluster) -> Iterator[str]:
    with fresh_namespace(cluster) as name:
        yield name
