"""The real node's configuration: containerd, the kubelet and kube-proxy beside kwok's fake node.

With ``dev-cluster up --real-node`` Pods scheduled to ``real-node-0`` run containers: containerd
(Debian's package, with runc and the CNI plugins) runs them, a kubelet built from Go modules as
the other components are drives it, kube-proxy gives Services their addresses and CoreDNS their
names. Everything here
is a pure function of paths and ports; ``node_host`` changes the machine (bridge, iptables,
cgroups) and undoes it.

What this machine needed, each found by a failure (docs/local-cluster.md): the kubelet on cgroup
v1 (``failCgroupV1: false``, the cgroupfs driver, swap allowed); containerd's sandboxes kept at
containerd's own OOM score, as the machine withholds CAP_SYS_RESOURCE; the node's address on the
bridge, as a kubelet refuses a loopback one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from ansible_operator.devcluster import gobuild
from ansible_operator.devcluster.binaries import Binaries
from ansible_operator.devcluster.components import SERVICE_CIDR, Component, Layout

NAME = "real-node-0"
BRIDGE = "ao0"
SUBNET = "10.42.0.0/24"  # not podman's default 10.88.0.0/16, so both may run at once
NODE_IP = "10.42.0.1"  # the bridge's: the node's address and the Pods' gateway
# The bridge's own MAC address (locally administered; 0a:2a:00:01 is NODE_IP). Without one a
# bridge takes its lowest port's, so the gateway's address changes when that Pod leaves, and the
# other Pods' ARP entries point at nobody: their Services go dark for up to a minute.
BRIDGE_MAC = "02:42:0a:2a:00:01"
API_SERVICE_IP = SERVICE_CIDR.rsplit(".", 1)[0] + ".1"  # the `kubernetes` Service's address
CGROUP_ROOT = "/ansible-operator-node"  # every Pod's cgroup is below it, on every hierarchy
SANDBOX_IMAGE = "localhost/ansible-operator/nodeimage:1"
CLUSTER_DOMAIN = "cluster.local"
PORT_NAMES = (
    "containerd-metrics",
    "kubelet",
    "kubelet-healthz",
    "kube-proxy",
    "kube-proxy-metrics",
    "cluster-dns-ready",
)
COREDNS_VERSION = "v1.14.7"  # github.com/coredns/coredns, as clusterdns/go.mod pins it

# The node's two Go programs of ours, built once into the binaries' cache (``gobuild``).
SANDBOX_PROGRAM = gobuild.GoProgram(
    name="nodeimage",
    pin="local",
    title="the real node's sandbox program (nodeimage/)",
    module=Path(__file__).parent / "nodeimage",
)
DNS_PROGRAM = gobuild.GoProgram(
    name="clusterdns",
    pin=f"coredns-{COREDNS_VERSION}",
    title=f"the cluster DNS (CoreDNS {COREDNS_VERSION} with the kubernetes plugin, clusterdns/)",
    module=Path(__file__).parent / "clusterdns",
)
PROGRAMS = (SANDBOX_PROGRAM, DNS_PROGRAM)

# What the node needs from the machine's packages, and where Debian puts them.
PACKAGES = "containerd runc containernetworking-plugins iptables conntrack"
COMMANDS = ("containerd", "containerd-shim-runc-v2", "ctr", "runc", "iptables", "ip6tables", "ip")
CNI_PLUGINS = ("bridge", "host-local", "loopback")
CNI_DIRS = (Path("/usr/lib/cni"), Path("/opt/cni/bin"))


class NodeLayout:
    """Where the real node keeps its files: ``node/`` in the cluster's state directory."""

    def __init__(self, layout: Layout) -> None:
        self.cluster = layout
        self.root = layout.state_dir / "node"

    @property
    def containerd_config(self) -> Path:
        return self.root / "containerd.toml"

    @property
    def containerd_root(self) -> Path:
        return self.root / "containerd"

    @property
    def containerd_state(self) -> Path:
        return self.root / "containerd-state"

    @property
    def containerd_socket(self) -> Path:
        return self.root / "containerd.sock"

    @property
    def cni_config_dir(self) -> Path:
        return self.root / "cni"

    @property
    def ipam_dir(self) -> Path:
        return self.root / "ipam"

    @property
    def corefile(self) -> Path:
        return self.root / "Corefile"

    @property
    def kubelet_config(self) -> Path:
        return self.root / "kubelet.yaml"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "kubelet"


def missing_prerequisites() -> list[str]:
    """The commands and CNI plugins the node needs that this machine lacks."""
    missing = [c for c in COMMANDS if shutil.which(c) is None]
    cni = cni_bin_dir()
    missing += [f"CNI plugin {p}" for p in CNI_PLUGINS if cni is None or not (cni / p).is_file()]
    return missing


def cni_bin_dir() -> Path | None:
    return next((d for d in CNI_DIRS if (d / "bridge").is_file()), None)


def containerd_config(node: NodeLayout, ports: dict[str, int]) -> str:
    cni = cni_bin_dir() or CNI_DIRS[0]
    return f"""version = 2
root = "{node.containerd_root}"
state = "{node.containerd_state}"

[grpc]
  address = "{node.containerd_socket}"

[metrics]
  address = "127.0.0.1:{ports["containerd-metrics"]}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{SANDBOX_IMAGE}"
  # The machine withholds CAP_SYS_RESOURCE: no sandbox may go below containerd's own OOM score.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni}"
    conf_dir = "{node.cni_config_dir}"
"""


def cni_config(node: NodeLayout) -> str:
    """One bridge on the node's subnet; its addresses are recorded in the state directory."""
    network = {
        "cniVersion": "1.0.0",
        "name": "ansible-operator-node",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "hairpinMode": True,  # a Pod reaches itself through its own Service
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(node.ipam_dir),
                    "ranges": [[{"subnet": SUBNET, "gateway": NODE_IP}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            }
        ],
    }
    return json.dumps(network, indent=2)


def kubelet_config(node: NodeLayout, ports: dict[str, int]) -> str:
    certs = node.cluster.certs
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": CGROUP_ROOT,
        "failSwapOn": False,
        "containerRuntimeEndpoint": f"unix://{node.containerd_socket}",
        "address": NODE_IP,
        "port": ports["kubelet"],
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": ports["kubelet-healthz"],
        "tlsCertFile": str(certs.serving_cert),
        "tlsPrivateKeyFile": str(certs.serving_key),
        # Only a client certificate of the cluster's CA (the API server's) may call the kubelet:
        # a Pod on the bridge reaches its port, and exec into another Pod must not be anonymous.
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(certs.ca_cert)},
        },
        "authorization": {"mode": "AlwaysAllow"},
        # A dev machine's disk is often fuller than a server's: evict only when nearly out.
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
        },
        # Images are loaded, never pulled, so none may be collected.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "resolvConf": "/etc/resolv.conf",
        "clusterDNS": [NODE_IP],
        "clusterDomain": CLUSTER_DOMAIN,
    }
    return yaml.safe_dump(config, sort_keys=False)


def corefile(node: NodeLayout, ports: dict[str, int]) -> str:
    """The cluster DNS on the node's address: Services and Pods by name, nothing forwarded."""
    zones = f"{CLUSTER_DOMAIN} in-addr.arpa ip6.arpa"
    return f"""{" ".join(f"{zone}:53" for zone in zones.split())} {{
    bind {NODE_IP}
    errors
    ready 127.0.0.1:{ports["cluster-dns-ready"]}
    kubernetes {zones} {{
        kubeconfig {node.cluster.kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }}
    cache 5
}}
"""


def components(
    bins: Binaries, node: NodeLayout, ports: dict[str, int], cluster_dns: Path
) -> list[Component]:
    """containerd, the kubelet, kube-proxy and the cluster DNS (``cluster_dns``: the program
    built from ``DNS_PROGRAM``), in start order."""
    kubeconfig = str(node.cluster.kubeconfig)
    return [
        Component(
            "containerd",
            ["containerd", f"--config={node.containerd_config}"],
            f"http://127.0.0.1:{ports['containerd-metrics']}/v1/metrics",
        ),
        Component(
            "kubelet",
            [
                str(bins["kubelet"]),
                f"--config={node.kubelet_config}",
                f"--kubeconfig={kubeconfig}",
                f"--hostname-override={NAME}",
                f"--node-ip={NODE_IP}",
                f"--root-dir={node.kubelet_root}",
                f"--cert-dir={node.root / 'kubelet-pki'}",
            ],
            f"http://127.0.0.1:{ports['kubelet-healthz']}/healthz",
        ),
        Component(
            "kube-proxy",
            [
                str(bins["kube-proxy"]),
                f"--kubeconfig={kubeconfig}",
                f"--hostname-override={NAME}",
                "--proxy-mode=iptables",
                f"--cluster-cidr={SUBNET}",
                f"--healthz-bind-address=127.0.0.1:{ports['kube-proxy']}",
                f"--metrics-bind-address=127.0.0.1:{ports['kube-proxy-metrics']}",
                # Leave the machine's conntrack table and route_localnet as they are.
                "--conntrack-max-per-core=0",
                "--iptables-localhost-nodeports=false",
            ],
            f"http://127.0.0.1:{ports['kube-proxy']}/healthz",
        ),
        Component(
            "cluster-dns",
            [str(cluster_dns), "-conf", str(node.corefile)],
            # Ready once its kubernetes plugin has listed the Services and Pods.
            f"http://127.0.0.1:{ports['cluster-dns-ready']}/ready",
        ),
    ]
