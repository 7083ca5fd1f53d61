"""Fixtures shared by every test layer: the local cluster and a fresh namespace per test.

The session's cluster is started by the tests in a private state directory and stopped at the
end, unless ANSIBLE_OPERATOR_TEST_KUBECONFIG names the kubeconfig of a cluster that is already
running (for example the one ``make run`` started), which is then used and left alone.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

EXISTING_CLUSTER_ENV = "ANSIBLE_OPERATOR_TEST_KUBECONFIG"


@dataclass(frozen=True)
class Cluster:
    kubeconfig: Path

    def api_client(self):  # a new client each call: tests may close theirs
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))

    def component_pid(self, name: str) -> int:
        """The pid of one control-plane process, for tests that disturb it on purpose."""
        import json

        state = json.loads((self.kubeconfig.parent / "state.json").read_text())
        return int(state["components"][name]["pid"])


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
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    name = f"t-{uuid.uuid4().hex[:10]}"
    with cluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        core.create_namespace({"metadata": {"name": name}})
        deadline = time.monotonic() + 60
        while True:
            try:
                core.read_namespaced_service_account("default", name)
                break
            except ApiException as err:
                if err.status != 404 or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield name
        core.delete_namespace(name)
