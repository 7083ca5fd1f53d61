"""The local control plane's lifecycle: ``up``, ``status`` and ``down``.

A cluster lives in one state directory: certificates, kubeconfig, logs, etcd data and a
``state.json`` naming the ports and processes it started. ``up`` reuses a healthy cluster, and
clears away what a killed run left behind before starting afresh; a file lock keeps two
commands from working on the same directory at once.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from ansible_operator.core import conditions
from ansible_operator.devcluster import certs as certs_mod
from ansible_operator.devcluster import (
    components,
    example_images,
    gobuild,
    node,
    node_host,
    node_images,
    processes,
)
from ansible_operator.devcluster.binaries import Binaries, BinariesError
from ansible_operator.devcluster.components import Component, Layout
from ansible_operator.devcluster.kubeapi import LocalApi, insecure_tls, probe

STATE_DIR_ENV = "ANSIBLE_OPERATOR_DEV_CLUSTER_DIR"
NODE_NAME = "kwok-node-0"
START_TIMEOUT = 120.0
START_ATTEMPTS = 3  # a port taken between choosing it and binding it gets a fresh set

Progress = Callable[[str], None]


class ClusterError(Exception):
    """The cluster cannot be started or reached; the first line says what and where."""


@dataclass(frozen=True)
class ComponentStatus:
    name: str
    pid: int
    running: bool
    healthy: bool
    log: Path
    log_tail: str = ""


def default_state_dir() -> Path:
    if os.environ.get(STATE_DIR_ENV):
        return Path(os.environ[STATE_DIR_ENV])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "ansible-operator" / "dev-cluster"


class DevCluster:
    def __init__(self, state_dir: Path | None = None, progress: Progress | None = None) -> None:
        self.layout = Layout((state_dir or default_state_dir()).resolve())
        self._progress = progress or (lambda message: None)

    def _say(self, message: str) -> None:
        # An output closed under us (`| head`) must not stop a cluster from stopping.
        with contextlib.suppress(OSError):
            self._progress(message)

    @property
    def kubeconfig(self) -> Path:
        return self.layout.kubeconfig

    # -- state ---------------------------------------------------------------------------------

    def _read_state(self) -> dict | None:
        try:
            state = json.loads(self.layout.state_file.read_text())
        except (OSError, ValueError):
            return None
        return state if isinstance(state, dict) and "components" in state else None

    def _refs(self, state: dict) -> dict[str, processes.ProcessRef]:
        return {
            name: processes.ProcessRef(int(c["pid"]), int(c["start_time"]))
            for name, c in state["components"].items()
        }

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.layout.state_dir.mkdir(parents=True, exist_ok=True)
        with open(self.layout.state_dir / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    # -- status --------------------------------------------------------------------------------

    def status(self) -> list[ComponentStatus]:
        """Each component of the cluster recorded in the state directory; [] when there is none."""
        state = self._read_state()
        if state is None:
            return []
        refs = self._refs(state)
        result = []
        for comp in self._components_from_state(state):
            ref = refs[comp.name]
            running = processes.is_running(ref)
            healthy = running and self._healthy(comp)
            log = self.layout.log(comp.name)
            result.append(
                ComponentStatus(
                    comp.name,
                    ref.pid,
                    running,
                    healthy,
                    log,
                    "" if running else processes.tail(log),
                )
            )
        return result

    def is_healthy(self) -> bool:
        statuses = self.status()
        return bool(statuses) and all(s.healthy for s in statuses)

    def _components_from_state(self, state: dict) -> list[Component]:
        return [
            Component(name, c["argv"], c["health_url"], c["needs_client_cert"], c["verify_tls"])
            for name, c in state["components"].items()
        ]

    def _healthy(self, comp: Component) -> bool:
        tls: ssl.SSLContext | None = None
        if comp.needs_client_cert:
            certs = self.layout.certs
            tls = ssl.create_default_context(cafile=str(certs.ca_cert))
            tls.load_cert_chain(str(certs.admin_cert), str(certs.admin_key))
        elif not comp.verify_tls:
            tls = insecure_tls()
        return probe(comp.health_url, tls=tls)

    # -- down ----------------------------------------------------------------------------------

    def down(self) -> bool:
        """Stop every process this cluster started; True when there was something to stop."""
        with self._locked():
            return self._stop_recorded()

    def _stop_recorded(self) -> bool:
        state = self._read_state()
        if state is None:
            return False
        self._remove_provisioned_volumes(state)
        refs = self._refs(state)
        # Reverse start order: clients of the API server first, etcd last and on its own: an API
        # server whose etcd went away takes 10 s to stop.
        order = list(reversed(list(refs)))
        self._say(f"stopping {', '.join(order)}")
        processes.stop([refs[n] for n in order if n != "etcd"])
        processes.stop([refs[n] for n in order if n == "etcd"])
        if state.get("real_node"):
            left = node_host.clean(node.NodeLayout(self.layout), self._say)
            if left:
                self._say(f"the real node left behind (remove by hand): {'; '.join(left)}")
        self.layout.state_file.unlink(missing_ok=True)
        return True

    def _remove_provisioned_volumes(self, state: dict) -> None:
        """The directories of the volumes still provisioned: the controller manager removes a
        volume's directory when its claim goes, and it is about to stop. When the API server no
        longer answers (a killed run's cluster), it says which directories may stay behind."""
        try:
            api = LocalApi(state["server"], self.layout.certs)
            code, body = api.get("/api/v1/persistentvolumes")
        except OSError as err:
            code, body = 0, str(err)
        if code != 200 or not isinstance(body, dict):
            self._say(
                f"cannot list the cluster's volumes ({code or body}); the directories of those "
                f"it provisioned stay in {components.HOSTPATH_VOLUMES}"
            )
            return
        for volume in body.get("items") or []:
            path = Path((volume["spec"].get("hostPath") or {}).get("path", "/"))
            if path.parent == components.HOSTPATH_VOLUMES:
                shutil.rmtree(path, ignore_errors=True)

    # -- up ------------------------------------------------------------------------------------

    def up(self, bins: Binaries, *, feature_gates: str = "", real_node: bool = False) -> Path:
        """Start the cluster, or reuse the healthy one already running with the same
        ``feature_gates`` (the API server's, ``Name=true,...``) and node; return the kubeconfig.
        ``real_node`` adds a node that runs containers (``bins`` with the kubelet's)."""
        with self._locked():
            state = self._read_state()
            if state is not None and self.is_healthy():
                running_gates = state.get("feature_gates", "")
                if running_gates != feature_gates:
                    raise ClusterError(
                        f"the cluster in {self.layout.state_dir} runs with feature gates "
                        f"{running_gates or '(none)'!r}, not {feature_gates or '(none)'!r}; "
                        "run 'dev-cluster down' first"
                    )
                if bool(state.get("real_node")) != real_node:
                    raise ClusterError(
                        f"the cluster in {self.layout.state_dir} runs "
                        f"{'with' if state.get('real_node') else 'without'} a real node; "
                        "run 'dev-cluster down' first"
                    )
                self._say(f"reusing the running cluster in {self.layout.state_dir}")
                return self.kubeconfig
            if state is not None:
                self._say("clearing a cluster that is not healthy (left by a killed run?)")
                self._stop_recorded()
            last_error: ClusterError | None = None
            for _ in range(START_ATTEMPTS):
                try:
                    return self._start(bins, feature_gates, real_node)
                except PortTaken as err:
                    last_error = err
                    self._stop_recorded()
                    self._say(f"{err}; retrying with other ports")
                except BaseException:
                    self._stop_recorded()
                    raise
            assert last_error is not None
            raise last_error

    def _fresh_state_dir(self) -> None:
        for sub in ("data", "logs", "pki"):
            shutil.rmtree(self.layout.state_dir / sub, ignore_errors=True)
        for sub in ("data", "logs"):
            (self.layout.state_dir / sub).mkdir(parents=True)

    def _start(self, bins: Binaries, feature_gates: str, real_node: bool) -> Path:
        started_at = time.monotonic()
        self._fresh_state_dir()
        cluster_certs = certs_mod.generate(self.layout.certs.directory)
        names = components.PORT_NAMES + (node.PORT_NAMES if real_node else ())
        ports = dict(zip(names, processes.free_ports(len(names)), strict=True))
        server = f"https://127.0.0.1:{ports['kube-apiserver']}"
        write_kubeconfig(self.layout.kubeconfig, server, cluster_certs)
        stages = resources.files("ansible_operator.devcluster").joinpath("kwok-stages.yaml")
        self.layout.kwok_config.write_text(stages.read_text())

        comps = components.build(bins, self.layout, ports, feature_gates=feature_gates)
        state: dict = {
            "server": server,
            "ports": ports,
            "feature_gates": feature_gates,
            "real_node": real_node,
            "components": {},
        }
        by_name = {c.name: c for c in comps}

        def launch(comp: Component) -> None:
            self.layout.data(comp.name).mkdir(parents=True, exist_ok=True)
            ref = processes.spawn(comp.argv, self.layout.log(comp.name))
            state["components"][comp.name] = {
                "pid": ref.pid,
                "start_time": ref.start_time,
                "argv": comp.argv,
                "health_url": comp.health_url,
                "needs_client_cert": comp.needs_client_cert,
                "verify_tls": comp.verify_tls,
            }
            self.layout.state_file.write_text(json.dumps(state, indent=2))

        launch(by_name["etcd"])
        self._wait_healthy([by_name["etcd"]], state)
        launch(by_name["kube-apiserver"])
        self._wait_healthy([by_name["kube-apiserver"]], state)
        self._say(f"kube-apiserver ready at {server} ({time.monotonic() - started_at:.1f}s)")
        api = LocalApi(server, cluster_certs)
        port_forward_crd = yaml.safe_load(
            resources.files("ansible_operator.devcluster")
            .joinpath("kwok-portforward-crd.yaml")
            .read_text()
        )
        self._create(
            api,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            port_forward_crd,
            "kwok's PortForward CRD",
        )
        self._create(
            api,
            "/apis/storage.k8s.io/v1/storageclasses",
            components.default_storage_class(),
            "the default StorageClass",
        )
        rest = [c for c in comps if c.name not in ("etcd", "kube-apiserver")]
        for comp in rest:
            launch(comp)
        self._create(
            api,
            "/api/v1/nodes",
            components.fake_node(NODE_NAME, tainted=real_node),
            f"node {NODE_NAME}",
        )
        self._wait_healthy(rest, state)
        self._wait_for(
            api,
            "/api/v1/namespaces/default/serviceaccounts/default",
            "the default ServiceAccount",
            lambda obj: True,
            state,
        )
        self._wait_for(
            api, f"/api/v1/nodes/{NODE_NAME}", f"node {NODE_NAME} Ready", _node_ready, state
        )
        if real_node:
            self._start_real_node(bins, api, ports, launch, state)
        self._say(f"cluster ready in {time.monotonic() - started_at:.1f}s")
        return self.kubeconfig

    def _start_real_node(
        self,
        bins: Binaries,
        api: LocalApi,
        ports: dict[str, int],
        launch: Callable[[Component], None],
        state: dict,
    ) -> None:
        """containerd, the kubelet, kube-proxy and the cluster DNS, on a machine made ready for
        them."""
        started_at = time.monotonic()
        layout = node.NodeLayout(self.layout)
        node_host.clean(layout, self._say)  # what a killed run of this cluster left behind
        layout.root.mkdir(parents=True, exist_ok=True)
        layout.containerd_config.write_text(node.containerd_config(layout, ports))
        layout.cni_config_dir.mkdir(exist_ok=True)
        (layout.cni_config_dir / "10-bridge.conflist").write_text(node.cni_config(layout))
        layout.kubelet_config.write_text(node.kubelet_config(layout, ports))
        layout.corefile.write_text(node.corefile(layout, ports))
        try:
            cluster_dns = gobuild.ensure(node.DNS_PROGRAM, progress=self._say)
        except BinariesError as err:
            raise ClusterError(str(err)) from None
        try:
            node_host.prepare(layout, ports["kube-apiserver"])
        except node_host.NodeHostError as err:
            raise ClusterError(str(err)) from None
        containerd, kubelet, kube_proxy, dns = node.components(bins, layout, ports, cluster_dns)
        launch(containerd)
        self._wait_healthy([containerd], state)
        try:
            node_images.load_sandbox_image(layout, self._say)
        except node_images.ImageError as err:
            raise ClusterError(str(err)) from None
        for comp in (kubelet, kube_proxy, dns):
            launch(comp)
        self._wait_healthy([kubelet, kube_proxy, dns], state)
        self._wait_for(
            api, f"/api/v1/nodes/{node.NAME}", f"node {node.NAME} Ready", _node_ready, state
        )
        self._say(f"real node {node.NAME} ready in {time.monotonic() - started_at:.1f}s")

    def _real_node(self) -> node.NodeLayout:
        state = self._read_state()
        if state is None or not state.get("real_node"):
            raise ClusterError(
                f"the cluster in {self.layout.state_dir} has no real node to load images into "
                "(start it with 'dev-cluster up --real-node')"
            )
        return node.NodeLayout(self.layout)

    def load_image(self, image: str) -> None:
        """Copy ``image`` from podman's store into the real node's containerd."""
        layout = self._real_node()
        started_at = time.monotonic()
        try:
            node_images.load_from_podman(layout, image)
        except node_images.ImageError as err:
            raise ClusterError(str(err)) from None
        self._say(f"loaded {image} into {node.NAME} in {time.monotonic() - started_at:.1f}s")

    def load_example_images(self) -> None:
        """Make the images the etcd example names and load them into the real node."""
        layout = self._real_node()
        started_at = time.monotonic()
        try:
            names = example_images.load(layout, self._say)
        except (node_images.ImageError, BinariesError) as err:
            raise ClusterError(str(err)) from None
        self._say(
            f"loaded {', '.join(names)} into {node.NAME} in {time.monotonic() - started_at:.1f}s"
        )

    def _create(self, api: LocalApi, collection: str, obj: dict, what: str) -> None:
        code, body = api.request("POST", collection, obj)
        if code not in (201, 409):
            raise ClusterError(f"creating {what} failed: HTTP {code}: {body}")

    def _check_alive(self, state: dict) -> None:
        for name, ref in self._refs(state).items():
            if not processes.is_running(ref):
                log = self.layout.log(name)
                code = processes.exit_code(ref)
                text = processes.tail(log)
                message = (
                    f"{name} exited during start-up (exit code {code}); last lines of {log}:\n"
                    f"{text}"
                )
                if "address already in use" in text:
                    raise PortTaken(f"{name}: a port was taken by another process")
                raise ClusterError(message)

    def _wait_healthy(self, comps: list[Component], state: dict) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        waiting = list(comps)
        while waiting:
            self._check_alive(state)
            waiting = [c for c in waiting if not self._healthy(c)]
            if not waiting:
                return
            if time.monotonic() > deadline:
                names = ", ".join(c.name for c in waiting)
                raise ClusterError(
                    f"{names} not healthy after {START_TIMEOUT:.0f}s; logs in "
                    f"{self.layout.state_dir / 'logs'}"
                )
            time.sleep(0.2)

    def _wait_for(
        self, api: LocalApi, path: str, what: str, ready: Callable[[dict], bool], state: dict
    ) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            self._check_alive(state)
            code, body = api.get(path)
            if code == 200 and isinstance(body, dict) and ready(body):
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"timed out after {START_TIMEOUT:.0f}s waiting for {what}")
            time.sleep(0.25)


class PortTaken(ClusterError):
    """A component lost the race for a port we had picked."""


def _node_ready(node: dict) -> bool:
    return conditions.condition_true(node, "Ready")


def write_kubeconfig(path: Path, server: str, cluster_certs: certs_mod.ClusterCerts) -> None:
    def b64(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "ansible-operator-dev",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": b64(cluster_certs.ca_cert),
                },
            }
        ],
        "users": [
            {
                "name": "admin",
                "user": {
                    "client-certificate-data": b64(cluster_certs.admin_cert),
                    "client-key-data": b64(cluster_certs.admin_key),
                },
            }
        ],
        "contexts": [
            {
                "name": "ansible-operator-dev",
                "context": {"cluster": "ansible-operator-dev", "user": "admin"},
            }
        ],
        "current-context": "ansible-operator-dev",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
