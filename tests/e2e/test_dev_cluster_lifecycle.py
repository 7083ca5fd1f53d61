"""``ansible-operator dev-cluster`` as a user drives it: up, up again, status, a crash, down."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from kubernetes import client, config

from ansible_operator.devcluster import processes

from .dev_cluster import dev_cluster
from .listeners import listener_command_lines
from .waiting import wait_until

pytestmark = pytest.mark.e2e


def recorded(state_dir):
    state = json.loads((state_dir / "state.json").read_text())
    refs = {
        name: processes.ProcessRef(c["pid"], c["start_time"])
        for name, c in state["components"].items()
    }
    return refs, state["ports"]


def bound_volume(kubeconfig: Path) -> Path:
    """The directory of the volume provisioned for a new claim of the default class."""
    with config.new_client_from_config(config_file=str(kubeconfig)) as api_client:
        core = client.CoreV1Api(api_client)
        core.create_namespaced_persistent_volume_claim(
            "default",
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
        )
        claim = wait_until(
            lambda: (
                (c := core.read_namespaced_persistent_volume_claim("data", "default"))
                and c.status.phase == "Bound"
                and c
            ),
            what="the claim to bind",
            timeout=120,
        )
        assert claim.spec.storage_class_name == "standard"
        volume = core.read_persistent_volume(claim.spec.volume_name)
        return Path(volume.spec.host_path.path)


def test_up_is_idempotent_status_reports_a_crash_and_down_cleans_up(tmp_path):
    state_dir = tmp_path / "cluster"
    first = dev_cluster("up", state_dir=state_dir)
    assert first.returncode == 0, first.stderr
    kubeconfig = first.stdout.strip()
    assert kubeconfig == str(state_dir.resolve() / "admin.kubeconfig")
    refs, _ = recorded(state_dir)
    assert set(refs) == {
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
    }
    assert all(processes.is_running(r) for r in refs.values())

    second = dev_cluster("up", state_dir=state_dir)
    assert second.returncode == 0, second.stderr
    assert "reusing the running cluster" in second.stderr
    assert recorded(state_dir)[0] == refs, "a second up must not start new processes"

    assert dev_cluster("kubeconfig", state_dir=state_dir).stdout.strip() == kubeconfig
    status = dev_cluster("status", state_dir=state_dir)
    assert status.returncode == 0
    assert status.stdout.count("healthy") == 5

    os.kill(refs["kube-scheduler"].pid, signal.SIGKILL)
    wait_until(
        lambda: not processes.is_running(refs["kube-scheduler"]), what="the scheduler to die"
    )
    status = dev_cluster("status", state_dir=state_dir)
    assert status.returncode == 1
    assert "kube-scheduler" in status.stdout and "dead" in status.stdout
    assert "last lines of" in status.stdout

    # The broken cluster is cleared away and a new one started in its place.
    again = dev_cluster("up", state_dir=state_dir)
    assert again.returncode == 0, again.stderr
    new_refs, new_ports = recorded(state_dir)
    assert not any(processes.is_running(r) for r in refs.values())
    assert all(processes.is_running(r) for r in new_refs.values())

    # A claim of no class binds: the default StorageClass provisions a directory for it, which
    # `down` removes with the cluster (kwok runs no container, so nothing writes there).
    volume = bound_volume(Path(kubeconfig))
    assert volume.is_dir()

    down = dev_cluster("down", state_dir=state_dir)
    assert down.returncode == 0, down.stderr
    assert not volume.exists(), f"{volume} outlived the cluster"
    for ref in [*refs.values(), *new_refs.values()]:
        assert not processes.is_running(ref)
    # Any process may bind a port the cluster freed; none of the cluster's own may still hold one.
    for port in new_ports.values():
        holders = [c for c in listener_command_lines(port) if str(state_dir) in c]
        assert not holders, f"port {port} still held by {holders}"
    assert dev_cluster("status", state_dir=state_dir).returncode == 1
