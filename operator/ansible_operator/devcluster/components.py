"""The command line of each control-plane component, as a pure function of paths and ports.

Everything listens on 127.0.0.1 only. The API server advertises a loopback address, which the
``kubernetes`` Service endpoints reject, so the endpoint reconciler is off; kwok plays the kubelet
for every node, so Pods are scheduled and become Running without a container runtime. Claims bind:
the controller manager's host-path provisioner makes a volume for each claim of the default
StorageClass (a directory under /tmp/hostpath_pv, its path fixed in Kubernetes' code).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ansible_operator.devcluster.binaries import Binaries
from ansible_operator.devcluster.certs import ClusterCerts

SERVICE_CIDR = "10.0.0.0/24"
POD_CIDR = "10.244.0.0/16"
PORT_NAMES = (
    "etcd",
    "etcd-peer",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
)


@dataclass(frozen=True)
class Component:
    name: str
    argv: list[str]
    health_url: str
    needs_client_cert: bool = False  # the API server's /readyz wants the admin certificate
    verify_tls: bool = True  # False for self-signed serving certificates


@dataclass(frozen=True)
class Layout:
    """Where a cluster keeps its files."""

    state_dir: Path

    @property
    def certs(self) -> ClusterCerts:
        return ClusterCerts(self.state_dir / "pki")

    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "admin.kubeconfig"

    @property
    def kwok_config(self) -> Path:
        return self.state_dir / "kwok-stages.yaml"

    @property
    def state_file(self) -> Path:
        return self.state_dir / "state.json"

    def log(self, component: str) -> Path:
        return self.state_dir / "logs" / f"{component}.log"

    def data(self, component: str) -> Path:
        return self.state_dir / "data" / component


def build(
    bins: Binaries, layout: Layout, ports: dict[str, int], *, feature_gates: str = ""
) -> list[Component]:
    """The components in start order: etcd first, the API server next, the rest after it.
    ``feature_gates`` (``Name=true,...``) go to the API server."""
    certs = layout.certs
    kubeconfig = str(layout.kubeconfig)
    etcd_url = f"http://127.0.0.1:{ports['etcd']}"
    peer_url = f"http://127.0.0.1:{ports['etcd-peer']}"
    api = ports["kube-apiserver"]
    shared_component_flags = [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        "--leader-elect=false",
    ]
    return [
        Component(
            "etcd",
            [
                str(bins["etcd"]),
                "--name=node0",
                f"--data-dir={layout.data('etcd')}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=node0={peer_url}",
                "--listen-metrics-urls=",
                "--unsafe-no-fsync=true",
                "--auto-compaction-retention=1",
                "--quota-backend-bytes=2147483648",
                "--log-level=warn",
            ],
            f"{etcd_url}/health",
        ),
        Component(
            "kube-apiserver",
            [
                str(bins["kube-apiserver"]),
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={api}",
                "--endpoint-reconciler-type=none",
                # A fake Node's Hostname resolves nowhere: port-forwards go to its InternalIP.
                "--kubelet-preferred-address-types=InternalIP",
                # A real node's kubelet takes only clients of the cluster's CA.
                f"--kubelet-client-certificate={certs.admin_cert}",
                f"--kubelet-client-key={certs.admin_key}",
                f"--cert-dir={layout.data('kube-apiserver')}",
                f"--tls-cert-file={certs.serving_cert}",
                f"--tls-private-key-file={certs.serving_key}",
                f"--client-ca-file={certs.ca_cert}",
                "--authorization-mode=Node,RBAC",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allow-privileged=true",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={certs.service_account_public_key}",
                f"--service-account-signing-key-file={certs.service_account_key}",
                "--profiling=false",
                *([f"--feature-gates={feature_gates}"] if feature_gates else []),
            ],
            f"https://127.0.0.1:{api}/readyz",
            needs_client_cert=True,
        ),
        Component(
            "kube-controller-manager",
            [
                str(bins["kube-controller-manager"]),
                *shared_component_flags,
                f"--secure-port={ports['kube-controller-manager']}",
                f"--cert-dir={layout.data('kube-controller-manager')}",
                f"--service-account-private-key-file={certs.service_account_key}",
                f"--root-ca-file={certs.ca_cert}",
                f"--cluster-signing-cert-file={certs.ca_cert}",
                f"--cluster-signing-key-file={certs.ca_key}",
                "--controllers=*",
                "--enable-hostpath-provisioner=true",
                "--profiling=false",
            ],
            f"https://127.0.0.1:{ports['kube-controller-manager']}/healthz",
            verify_tls=False,
        ),
        Component(
            "kube-scheduler",
            [
                str(bins["kube-scheduler"]),
                *shared_component_flags,
                f"--secure-port={ports['kube-scheduler']}",
                f"--cert-dir={layout.data('kube-scheduler')}",
                "--profiling=false",
            ],
            f"https://127.0.0.1:{ports['kube-scheduler']}/healthz",
            verify_tls=False,
        ),
        Component(
            "kwok",
            [
                str(bins["kwok"]),
                f"--kubeconfig={kubeconfig}",
                f"--config={layout.kwok_config}",
                # Only the fake node: a real kubelet's Node beside it is its own.
                f"--manage-nodes-with-annotation-selector={KWOK_NODE}=fake",
                f"--cidr={POD_CIDR}",
                "--node-ip=127.0.0.1",
                "--node-lease-duration-seconds=40",
                f"--server-address=127.0.0.1:{ports['kwok']}",
                # The Node's kubelet endpoint: the API server's port-forward comes here (over
                # TLS, unverified as it has no --kubelet-certificate-authority), and kwok
                # forwards as the Pod's PortForward object says.
                f"--node-port={ports['kwok']}",
                f"--tls-cert-file={certs.serving_cert}",
                f"--tls-private-key-file={certs.serving_key}",
                "--enable-crds=PortForward",
            ],
            f"https://127.0.0.1:{ports['kwok']}/healthz",
            verify_tls=False,
        ),
    ]


HOSTPATH_PROVISIONER = "kubernetes.io/host-path"
HOSTPATH_VOLUMES = Path("/tmp/hostpath_pv")  # where that provisioner makes each volume


def default_storage_class() -> dict[str, object]:
    """The cluster's default StorageClass (a claim with no class gets it): a volume made for each
    claim at once, deleted with it. kind names its default class ``standard`` too."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": "standard",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": HOSTPATH_PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }


KWOK_NODE = "kwok.x-k8s.io/node"  # the annotation of a Node kwok manages ("fake")


def fake_node(name: str, *, tainted: bool = False) -> dict[str, object]:
    """A Node that kwok manages. Untainted, every Pod may land on it; ``tainted`` (beside a real
    node) only the Pods that tolerate ``kwok.x-k8s.io/node=fake:NoSchedule`` (scale tests)."""
    taints = [{"key": KWOK_NODE, "value": "fake", "effect": "NoSchedule"}] if tainted else []
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "spec": {"taints": taints},
        "metadata": {
            "name": name,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0", KWOK_NODE: "fake"},
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "kubernetes.io/hostname": name,
                "type": "kwok",
            },
        },
        "status": {
            # No Pod runs here, so no kubelet's default of 110 Pods: `make bench` keeps every
            # round's Deployments until it ends, and a soak or a user's cluster may hold more.
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "1000"},
            "capacity": {"cpu": "32", "memory": "256Gi", "pods": "1000"},
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": "fake",
                "kubeProxyVersion": "fake",
            },
            "phase": "Running",
        },
    }
