"""The operator image run as the manifests' Pod would run it, with podman in place of a kubelet.

kwok plays the kubelet in the local cluster and runs no containers, so the image is run here
from the Deployment that ``config/default`` renders: its args and env, uid 1001, a read-only
root filesystem with ``/tmp`` as the only writable place, and the ServiceAccount's token, CA and
namespace mounted where a Pod has them, ``KUBERNETES_SERVICE_HOST/PORT`` set and no kubeconfig.
The host's network is the Pod's, so the bind addresses are moved to free loopback ports.
"""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ansible_operator.devcluster.image import Podman
from ansible_operator.kube.config import from_kubeconfig
from tests.e2e.waiting import wait_until

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def service_account_dir(where: Path, kubeconfig: Path, token: str, namespace: str) -> Path:
    """What the kubelet mounts: ``token``, ``ca.crt`` (the cluster's CA) and ``namespace``."""
    where.mkdir(parents=True, exist_ok=True)
    ca = from_kubeconfig(kubeconfig).ca_data
    assert ca is not None, f"{kubeconfig} names no CA"
    for name, data in (
        ("token", token.encode()),
        ("ca.crt", ca),
        ("namespace", namespace.encode()),
    ):
        (where / name).write_bytes(data)
        (where / name).chmod(0o644)
    return where


@dataclass
class PodmanPod:
    podman: Podman
    image: str
    kubeconfig: Path
    name: str = field(default_factory=lambda: f"ansible-operator-{uuid.uuid4().hex[:8]}")
    probe_port: int = field(default_factory=free_port)
    metrics_port: int = field(default_factory=free_port)

    def start(
        self,
        container: dict,
        secrets: Path | None,
        env: dict[str, str],
        volumes: Mapping[Path, str] | None = None,
    ) -> None:
        """Run ``container`` (a Deployment's container spec) detached, in-cluster style, with
        ``volumes`` (host path: where) mounted read-only."""
        server = urlsplit(from_kubeconfig(self.kubeconfig).server)
        argv = ["run", "--detach", "--name", self.name, "--user", "1001", "--read-only"]
        argv += ["--tmpfs", "/tmp:rw,mode=1777,size=1g"]
        if secrets is not None:
            argv += ["--volume", f"{secrets}:{SERVICE_ACCOUNT_DIR}:ro"]
        for source, target in (volumes or {}).items():
            argv += ["--volume", f"{source}:{target}:ro"]
        environ = {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}
        environ |= {
            "KUBERNETES_SERVICE_HOST": server.hostname or "",
            "KUBERNETES_SERVICE_PORT": str(server.port or 443),
            **env,
        }
        for key, value in environ.items():
            argv += ["--env", f"{key}={value}"]
        argv += [self.image, *self._args(container.get("args", []))]
        self.podman.run(*argv)

    def _args(self, args: list[str]) -> list[str]:
        moved = {
            "--health-probe-bind-address": f"127.0.0.1:{self.probe_port}",
            "--metrics-bind-address": f"127.0.0.1:{self.metrics_port}",
            "--proxy-port": "0",  # a Pod's 8888 is its own; the host's may be taken
            # The local cluster routes no Service: on loopback the operator points the CRD's
            # conversion webhook at its own URL, which the API server on this host reaches.
            "--webhook-bind-address": "127.0.0.1:0",
        }
        out = [a for a in args if a.partition("=")[0] not in moved]
        return out + [f"{flag}={address}" for flag, address in moved.items()]

    def wait_ready(self) -> None:
        """Until its /readyz says ready: by then its conversion webhook has pointed the CRDs at
        it (the local cluster routes no Service, so a CR of a converted kind fails before)."""

        def ready() -> bool:
            assert self.running(), self.logs()
            url = f"http://127.0.0.1:{self.probe_port}/readyz"
            try:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    return resp.status == 200
            except (urllib.error.URLError, OSError):
                return False

        wait_until(ready, what=f"{self.name} ready", timeout=300, every=1)

    def running(self) -> bool:
        state = self.podman.run("inspect", "--format", "{{.State.Running}}", self.name, check=False)
        return state.stdout.strip() == "true"

    def exit_code(self) -> int:
        done = self.podman.run("inspect", "--format", "{{.State.ExitCode}}", self.name)
        return int(done.stdout.strip())

    def logs(self) -> str:
        done = self.podman.run("logs", self.name, check=False)
        return done.stdout + done.stderr

    def remove(self) -> None:
        self.podman.run("rm", "--force", "--time", "5", self.name, check=False)
