"""A private cluster with a real node (``dev-cluster up --real-node``), for the tests that run
containers: the e2e module test_real_node and the image's deploy as a Pod."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kubernetes import client, config

from ansible_operator.devcluster import binaries

from .dev_cluster import dev_cluster
from .waiting import wait_until

NODE = "real-node-0"
POD_CGROUPS = Path("/sys/fs/cgroup/pids/ansible-operator-node")  # the node's cgroup root


class RealNode:
    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.kubeconfig = state_dir / "admin.kubeconfig"

    def kubectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        kubectl = str(binaries.find()["kubectl"])
        return subprocess.run(
            [kubectl, f"--kubeconfig={self.kubeconfig}", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(config.new_client_from_config(config_file=str(self.kubeconfig)))

    def run_pod(
        self, name: str, image: str, args: list[str], labels: dict | None = None
    ) -> client.V1Pod:
        """A Pod of one container left to the scheduler; returns it once Ready."""
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {
                "containers": [
                    {"name": "main", "image": image, "imagePullPolicy": "Never", "args": args}
                ]
            },
        }
        core = self.core()
        core.create_namespaced_pod("default", pod)
        return wait_until(
            lambda: ready(core.read_namespaced_pod(name, "default")),
            what=f"Pod {name} Ready",
            timeout=180,
        )


def ready[T: (client.V1Pod, client.V1Node)](obj: T) -> T | None:
    conditions = obj.status.conditions or []
    return obj if any(c.type == "Ready" and c.status == "True" for c in conditions) else None


def pod_processes(uid: str) -> set[int]:
    """The processes of a Pod on the real node, from its cgroup (named after the Pod's uid)."""
    pids: set[int] = set()
    for procs in POD_CGROUPS.rglob("cgroup.procs"):
        if f"pod{uid}" in str(procs):
            pids |= {int(p) for p in procs.read_text().split()}
    return pids


@contextmanager
def real_node_cluster(state_dir: Path) -> Iterator[RealNode]:
    """``dev-cluster up --real-node`` in ``state_dir``; ``down`` after."""
    up = dev_cluster("up", "--real-node", state_dir=state_dir)
    try:
        assert up.returncode == 0, up.stderr
        yield RealNode(state_dir)
    finally:
        dev_cluster("down", state_dir=state_dir)
