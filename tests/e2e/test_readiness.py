"""/readyz means ready: not before the API server answers and the watches are established, and
not while the API server has been silent for longer than the grace period.

The shared API server is never disturbed: the operator reaches it through a TCP relay in the
test, which can stop answering (connections cut, new ones held unanswered) and resume.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from ansible_operator.devcluster.processes import free_ports
from ansible_operator.runtime.readiness import API_GRACE

from .crds import GROUP, VERSION, install_crds, kind_crd, remove_crds
from .operators import Operator
from .resources import new_cr, wait_condition
from .waiting import wait_until

pytestmark = pytest.mark.e2e


class Relay:
    """Forwards loopback connections to ``target``; ``silence()`` cuts them and leaves new ones
    unanswered (a black hole, as a lost network looks), ``resume()`` forwards again."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.silent = threading.Event()
        self.lock = threading.Lock()
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            with self.lock:
                self.open.append(conn)
            if not self.silent.is_set():
                upstream = socket.create_connection(self.target)
                with self.lock:
                    self.open.append(upstream)
                for a, b in ((conn, upstream), (upstream, conn)):
                    threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                s.close()

    def _close_all(self) -> None:
        with self.lock:
            for s in self.open:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self.open.clear()

    def silence(self) -> None:
        self.silent.set()
        self._close_all()

    def resume(self) -> None:
        self._close_all()  # the held connections end; clients reconnect
        self.silent.clear()

    def close(self) -> None:
        self.listener.close()
        self._close_all()


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
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    [entry] = config["clusters"]
    server = urlsplit(entry["cluster"]["server"])
    relay = Relay((server.hostname or "127.0.0.1", server.port or 443))
    entry["cluster"]["server"] = f"https://127.0.0.1:{relay.port}"  # in the server's certificate
    path = tmp_path / "relayed.kubeconfig"
    path.write_text(yaml.safe_dump(config))
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
        # Watching given namespaces, kopf finds the watched kinds once, at start: a restart
        # after the CRD is installed watches it.
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
        print(operator.log()[-20000:])
