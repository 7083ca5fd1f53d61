"""The watches through API server faults, on a private cluster (its API server is restarted, so
the shared one is never used): a 410 Gone is resumed by a relist that loses nothing, and an
API server restart is survived.

The 410 is forced, not hoped for: the operator is cut off by a TCP relay, changes are made,
and the API server is restarted meanwhile. Its watch cache starts over from etcd's current
revision, so resuming from any resourceVersion the operator saw before is answered with 410
("too old resource version"): only a relist can tell what changed, deletions included.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from ansible_operator.devcluster import processes

from .cluster import Cluster, fresh_namespace
from .crds import GROUP, VERSION, install_crds, kind_crd
from .operators import STRUCTURED_LOG, Operator, records_of
from .relay import relayed_kubeconfig
from .resources import config_map_data, new_cr, wait_condition
from .waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.long]


@pytest.fixture(scope="module")
def private_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    from ansible_operator.devcluster import binaries
    from ansible_operator.devcluster.cluster import DevCluster

    dev = DevCluster(tmp_path_factory.mktemp("watch-faults-cluster"))
    cluster = Cluster(dev.up(binaries.ensure()))
    try:
        with cluster.api_client() as api_client:
            install_crds(api_client, [kind_crd("Greeting")])
        yield cluster
    finally:
        dev.down()


@pytest.fixture
def namespace(private_cluster: Cluster) -> Iterator[str]:
    with fresh_namespace(private_cluster) as name:
        yield name


@pytest.fixture
def api(private_cluster: Cluster) -> Iterator[tuple[client.CustomObjectsApi, client.CoreV1Api]]:
    with private_cluster.api_client() as api_client:
        yield client.CustomObjectsApi(api_client), client.CoreV1Api(api_client)


def restart_api_server(cluster: Cluster, *, down_for: float = 0.0) -> None:
    """Stop the API server (SIGKILL: no goodbye to its watchers), wait ``down_for`` seconds,
    start it again with the same command line, and return once it answers."""
    state_file = cluster.kubeconfig.parent / "state.json"
    state = json.loads(state_file.read_text())
    component = state["components"]["kube-apiserver"]
    old = processes.ProcessRef(component["pid"], component["start_time"])
    os.kill(old.pid, signal.SIGKILL)
    port = int(state["ports"]["kube-apiserver"])

    def port_free() -> bool:  # its threads all ended (a zombie leader can still hold it)
        processes.exit_code(old)  # reaped once it is gone: a child of this test process
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                return False
        return True

    wait_until(port_free, what="the API server to end and free its port")
    time.sleep(down_for)  # the fault itself: the API server stays down this long
    log = cluster.kubeconfig.parent / "logs" / "kube-apiserver.log"
    new = processes.spawn(component["argv"], log)
    component.update(pid=new.pid, start_time=new.start_time)  # so that `down` stops it
    state_file.write_text(json.dumps(state, indent=2))

    def ready() -> bool:  # serving the test kind: every path installed, custom resources' too
        try:
            with cluster.api_client() as api_client:
                client.CustomObjectsApi(api_client).list_cluster_custom_object(
                    GROUP, VERSION, "greetings", limit=1, _request_timeout=5
                )
            return True
        except Exception:  # refused, reset, or 500 while it starts
            return False

    wait_until(ready, what="the restarted API server to be ready", timeout=120)


def greeting(core: client.CoreV1Api, namespace: str, name: str) -> str | None:
    data = config_map_data(core, namespace, f"{name}-greeting")
    return None if data is None else data.get("greeting")


def test_a_410_is_resumed_by_a_relist_that_loses_nothing(
    private_cluster, namespace, api, tmp_path: Path
):
    crs, core = api
    relay = relayed_kubeconfig(private_cluster.kubeconfig, tmp_path / "relayed.kubeconfig")
    operator = Operator(tmp_path, tmp_path / "relayed.kubeconfig", [namespace])
    operator.write_watches([{"kind": "Greeting", "role": "greeting"}])
    try:
        operator.start(*STRUCTURED_LOG)
        for name in ("kept", "changed", "doomed"):
            crs.create_namespaced_custom_object(
                GROUP, VERSION, namespace, "greetings", new_cr("Greeting", name, {"who": name})
            )
        for name in ("kept", "changed", "doomed"):
            wait_condition(crs, namespace, "Greeting", name, "Successful")

        relay.silence()  # the operator's watches break; it keeps trying
        since = len(operator.log())
        crs.create_namespaced_custom_object(
            GROUP, VERSION, namespace, "greetings", new_cr("Greeting", "born", {"who": "born"})
        )
        crs.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, "greetings", "changed", {"spec": {"who": "again"}}
        )
        crs.delete_namespaced_custom_object(GROUP, VERSION, namespace, "greetings", "doomed")
        core.delete_namespaced_config_map("kept-greeting", namespace)  # a dependent
        restart_api_server(private_cluster)
        relay.resume()

        # Primaries: the new CR and the changed one are reconciled, the deletion is seen.
        wait_condition(crs, namespace, "Greeting", "born", "Successful", timeout=300)
        wait_until(lambda: greeting(core, namespace, "born") == "Hello, born", what="born's")
        wait_until(
            lambda: greeting(core, namespace, "changed") == "Hello, again",
            what="the change made while cut off",
            timeout=300,
        )
        key = f"{namespace}/doomed"
        wait_until(
            lambda: [
                r
                for r in operator.records(since)
                if r.get("event") == "delete" and r.get("key") == key
            ],
            what="the deletion made while cut off",
        )
        # A dependent: its deletion re-runs its owner, which writes it again.
        wait_until(
            lambda: greeting(core, namespace, "kept") == "Hello, kept",
            what="the deleted dependent written again",
            timeout=300,
        )
        records = operator.records(since)
        expired = records_of(records, "Watch expired, listing again")
        assert {r["gvk"] for r in expired} >= {
            f"{GROUP}/{VERSION}, Kind=Greeting",
            "/v1, Kind=ConfigMap",
        }, "no 410: the relist was not exercised"
        deleted = [
            r
            for r in records_of(records, "Dependent changed, reconciling its owner")
            if r["event"] == "DELETED" and r["object"] == f"{namespace}/kept-greeting"
        ]
        assert deleted, "the dependent's deletion did not reach its owner"
        assert operator.proc.poll() is None
    finally:
        operator.stop()
        relay.close()
        print(operator.log()[-20000:])


def test_an_api_server_restart_is_survived(private_cluster, namespace, api, tmp_path: Path):
    crs, core = api
    operator = Operator(tmp_path, private_cluster.kubeconfig, [namespace])
    operator.write_watches([{"kind": "Greeting", "role": "greeting"}])
    try:
        operator.start(*STRUCTURED_LOG)
        crs.create_namespaced_custom_object(
            GROUP, VERSION, namespace, "greetings", new_cr("Greeting", "before", {"who": "a"})
        )
        wait_condition(crs, namespace, "Greeting", "before", "Successful")

        restart_api_server(private_cluster, down_for=10)
        # Made as soon as the API server is back, while the operator's watches wait to retry.
        crs.create_namespaced_custom_object(
            GROUP, VERSION, namespace, "greetings", new_cr("Greeting", "after", {"who": "b"})
        )
        wait_condition(crs, namespace, "Greeting", "after", "Successful", timeout=300)
        assert greeting(core, namespace, "after") == "Hello, b"
        assert operator.proc.poll() is None
    finally:
        operator.stop()
        print(operator.log()[-20000:])
