"""End-to-end fixtures: test CRDs, and the operator as a real process against the local cluster.

Each test starts its own operator limited to its own namespace (WATCH_NAMESPACE), with a
watches.yaml written for it that points at small roles under ``tests/e2e/roles``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from .waiting import wait_until

GROUP = "test.example.com"
VERSION = "v1alpha1"
ROLES = Path(__file__).parent / "roles"
REPO = Path(__file__).resolve().parents[2]
KINDS = ["Greeting", "Flaky", "Counter", "Requeuer", "Finalized", "Sleeper", "Echo", "Picky"]


def crd(kind: str) -> dict:
    plural = kind.lower() + "s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


def install_crds(cluster, kinds: list[str]) -> None:
    """Create the test CRDs of ``kinds`` (if missing) and wait until each is established."""
    with cluster.api_client() as api_client:
        ext = client.ApiextensionsV1Api(api_client)
        for kind in kinds:
            try:
                ext.create_custom_resource_definition(crd(kind))
            except ApiException as err:
                if err.status != 409:
                    raise
        for kind in kinds:

            def established(kind=kind):
                obj = ext.read_custom_resource_definition(f"{kind.lower()}s.{GROUP}")
                return any(
                    c.type == "Established" and c.status == "True"
                    for c in (obj.status.conditions or [])
                )

            wait_until(established, what=f"CRD {kind} established")


@pytest.fixture(scope="session")
def test_crds(cluster) -> None:
    install_crds(cluster, KINDS)


def _unless_given(args: tuple[str, ...], default: str) -> list[str]:
    flag = default.split("=", 1)[0]
    return [] if any(a.startswith(flag) for a in args) else [default]


class Operator:
    """``ansible-operator run`` in a subprocess; its log is kept in a file."""

    def __init__(self, workdir: Path, kubeconfig: Path, namespaces: list[str]) -> None:
        self.workdir = workdir
        self.kubeconfig = kubeconfig
        self.namespaces = namespaces
        self.log_path = workdir / "operator.log"
        self.proc: subprocess.Popen | None = None

    def write_watches(self, entries: list[dict]) -> None:
        for entry in entries:
            entry.setdefault("group", GROUP)
            entry.setdefault("version", VERSION)
            if "role" in entry and not entry["role"].startswith("/"):
                entry["role"] = str(ROLES / entry["role"])
        (self.workdir / "watches.yaml").write_text(yaml.safe_dump(entries))

    def start(self, *args: str, env: dict[str, str] | None = None) -> None:
        full_env = dict(os.environ)
        full_env.update(
            KUBECONFIG=str(self.kubeconfig),
            WATCH_NAMESPACE=",".join(self.namespaces),
            ANSIBLE_GATHERING="explicit",
            ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"),
        )
        full_env.update(env or {})
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "ansible_operator.cli",
                    "run",
                    "--zap-encoder=console",
                    "--max-concurrent-reconciles=2",
                    # A free port unless the test picks one: operators of parallel runs coexist.
                    # Ports of their own, or none, so that operators of tests never collide.
                    *_unless_given(args, "--proxy-port=0"),
                    *_unless_given(args, "--metrics-bind-address=0"),
                    *_unless_given(args, "--health-probe-bind-address=0"),
                    *args,
                ],
                cwd=self.workdir,
                env=full_env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill would."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(30)

    def stop(self) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(30)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


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


def new_cr(kind: str, name: str, spec: dict, labels: dict | None = None) -> dict:
    meta: dict = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": kind, "metadata": meta, "spec": spec}


def condition(obj: dict, ctype: str) -> dict | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


def wait_condition(crs, namespace, kind, name, ctype, status="True", timeout=180, reason=None):
    plural = kind.lower() + "s"

    def probe():
        try:
            obj = crs.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        c = condition(obj, ctype)
        if c and c.get("status") == status and (reason is None or c.get("reason") == reason):
            return obj
        return None

    return wait_until(probe, what=f"{kind} {name} {ctype}={status}", timeout=timeout)


def config_map_data(core, namespace, name) -> dict | None:
    try:
        return core.read_namespaced_config_map(name, namespace).data or {}
    except ApiException as err:
        if err.status == 404:
            return None
        raise


def settle(seconds: float = 8) -> None:
    """Give the operator time to do something it must not do (a negative check)."""
    time.sleep(seconds)
