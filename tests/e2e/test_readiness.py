"""/readyz means ready: not before the API server answers and the watches are established, and
not while the API server has been silent for longer than the grace period.

The shared API server is never disturbed: the operator reaches it through a TCP relay in the
test, which can stop answering (connections cut, new ones held unanswered) and resume.
"""

from __future__ import annotations

import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from ansible_operator.devcluster.processes import free_ports
from ansible_operator.runtime.manager.readiness import API_GRACE

from .crds import GROUP, VERSION, install_crds, kind_crd, remove_crds
from .operators import Operator
from .relay import relayed_kubeconfig as relayed_kubeconfig_of
from .resources import new_cr, wait_condition
from .waiting import wait_until

pytestmark = pytest.mark.e2e


def readyz(port: int) -> tuple[int | None, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError:
        return None, ""


@pytest.fixture
def relayed_kubeconfig(cluster, tmp_path):
    path = tmp_path / "relayed.kubeconfig"
    relay = relayed_kubeconfig_of(cluster.kubeconfig, path)
    try:
        yield relay, path
    finally:
        relay.close()


@pytest.fixture
def new_kind(cluster):
    """A kind of its own whose CRD the test installs when it chooses; removed afterwards."""
    kind = f"Ready{uuid.uuid4().hex[:8]}"
    try:
        yield kind
    finally:
        with cluster.api_client() as api_client:
            remove_crds(api_client, [kind_crd(kind)["metadata"]["name"]])


def test_ready_only_with_the_api_server_and_the_watches(
    cluster, namespace, crs, relayed_kubeconfig, new_kind, tmp_path: Path
):
    relay, kubeconfig = relayed_kubeconfig
    operator = Operator(tmp_path, kubeconfig, [namespace])
    operator.write_watches([{"kind": new_kind, "role": "greeting"}])
    _, probe_port = free_ports(2)
    relay.silence()
    operator.start(f"--health-probe-bind-address=127.0.0.1:{probe_port}", ready=False)
    try:
        wait_until(lambda: readyz(probe_port)[0] is not None, what="/readyz to answer")
        assert readyz(probe_port) == (503, "not ready: the API server has not answered yet")

        # The API server answers, but the watched kind is not served: no watch can be made.
        relay.resume()
        wait_until(
            lambda: readyz(probe_port) == (503, "not ready: the watches are not established yet"),
            what="/readyz to wait for the watches",
            timeout=180,
        )
        # Once the CRD is installed, the kind is watched (here by a restart; a running operator
        # finds it too, at its informer's next try).
        operator.stop()
        with cluster.api_client() as api_client:
            install_crds(api_client, [kind_crd(new_kind)])
        operator.start(f"--health-probe-bind-address=127.0.0.1:{probe_port}", ready=False)
        wait_until(lambda: readyz(probe_port) == (200, "ok"), what="ready", timeout=180)
        # Ready means watching: a new object of the kind is reconciled.
        plural = new_kind.lower() + "s"
        crs.create_namespaced_custom_object(
            GROUP, VERSION, namespace, plural, new_cr(new_kind, "r", {"who": "readiness"})
        )
        wait_condition(crs, namespace, new_kind, "r", "Successful")

        # The API server goes silent: still ready within the grace period, then not.
        relay.silence()
        lost = (503, f"not ready: the API server has not answered for over {API_GRACE:g}s")
        wait_until(lambda: readyz(probe_port) == lost, what="/readyz to fail", timeout=180)
        assert operator.proc.poll() is None  # unready, not gone

        relay.resume()
        wait_until(lambda: readyz(probe_port) == (200, "ok"), what="ready again", timeout=180)
    finally:
        operator.stop()
        operator.print_log()
