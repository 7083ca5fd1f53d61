"""``dev-cluster up --real-node``: a kubelet with containerd beside kwok's node, so containers run.

The cluster is this module's own (one real node per machine): a Pod's container answers through
its Service and reaches the API server, its log and exec go through the kubelet, an image comes
from podman's store, a second real node is refused, and ``down`` leaves nothing on the machine.
Needs root and Debian's containerd, runc and containernetworking-plugins (``.ci/run`` installs
them).
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from ansible_operator.devcluster import gobuild, image, node, processes

from .dev_cluster import dev_cluster
from .real_node import NODE, RealNode, pod_processes, ready, real_node_cluster
from .waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.long]

NODE_IMAGE = "localhost/ansible-operator/nodeimage:1"  # the sandbox image the node loads
BRIDGE = "ao0"
MARKER = Path("/run/ansible-operator-real-node.json")
BRIDGE_ADDRESS = Path(f"/sys/class/net/{BRIDGE}/address")


@pytest.fixture(scope="module")
def real_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealNode]:
    with real_node_cluster(tmp_path_factory.mktemp("real-node")) as started:
        yield started  # the last test checks what down leaves


def test_a_pod_runs_its_container_on_the_real_node(real_node):
    core = real_node.core()
    real = core.read_node(NODE)
    assert real.status.node_info.container_runtime_version.startswith("containerd://")
    kwok = core.read_node("kwok-node-0")
    assert [(t.key, t.effect) for t in kwok.spec.taints] == [
        ("kwok.x-k8s.io/node", "NoSchedule")
    ], "beside a real node, kwok's takes only the Pods that tolerate it"

    bridge_address = BRIDGE_ADDRESS.read_text()  # before the first Pod joins the bridge
    pod = real_node.run_pod("web", NODE_IMAGE, ["-listen", ":8080"], labels={"app": "web"})
    assert pod.spec.node_name == NODE
    # The gateway keeps its address as Pods come and go (a bridge takes its lowest port's by
    # default: when that Pod left, the others' ARP entries pointed at nobody, and etcddata's
    # members could not reach their Service for seconds).
    assert BRIDGE_ADDRESS.read_text() == bridge_address
    assert pod.status.container_statuses[0].container_id.startswith("containerd://")

    # Its log and exec reach the kubelet through the API server.
    logs = real_node.kubectl("logs", "web")
    assert logs.stdout.strip() == "nodeimage: running in web", logs
    exec_ = real_node.kubectl("exec", "web", "--", "/nodeimage", "-no-such-flag")
    assert exec_.returncode == 2, exec_
    assert "flag provided but not defined: -no-such-flag" in exec_.stderr

    # Only the API server (a client certificate of the cluster's CA) may call the kubelet: not a
    # Pod on the bridge, nor anyone else.
    ports = json.loads((real_node.state_dir / "state.json").read_text())["ports"]
    anonymous = _in_pod_network(real_node, pod, f"https://10.42.0.1:{ports['kubelet']}/pods")
    assert anonymous == "HTTP Error 401: Unauthorized"

    # The container answers on the Pod's address and through a Service (kube-proxy's rules).
    core.create_namespaced_service(
        "default",
        {
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
        },
    )
    cluster_ip = core.read_namespaced_service("web", "default").spec.cluster_ip
    for url in (f"http://{pod.status.pod_ip}:8080/", f"http://{cluster_ip}/"):
        answer = wait_until(lambda url=url: _get(url), what=f"an answer from {url}", timeout=60)
        assert answer == "nodeimage in web\n"

    # In the container, the cluster DNS names Services (the search path of its namespace).
    # ("web" alone is the Pod's own name, in its /etc/hosts.)
    for name in ("web.default", "web.default.svc.cluster.local", "kubernetes.default"):
        lookup = real_node.kubectl("exec", "web", "--", "/nodeimage", "-lookup", name)
        assert lookup.stdout.split() == [cluster_ip if name.startswith("web") else "10.0.0.1"], (
            lookup
        )
    unknown = real_node.kubectl("exec", "web", "--", "/nodeimage", "-lookup", "nothing-here")
    assert unknown.returncode == 1 and "lookup nothing-here" in unknown.stderr, unknown

    # From inside the Pod's network, the `kubernetes` Service is the API server.
    version = wait_until(
        lambda: _in_pod_network(real_node, pod, "https://10.0.0.1:443/version"),
        what="the API server from the Pod's network",
        timeout=60,
    )
    assert json.loads(version)["gitVersion"].startswith("v1.36.")


def _get(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.read().decode()
    except OSError:
        return ""


def _in_pod_network(real_node: RealNode, pod: client.V1Pod, url: str) -> str:
    """GET ``url`` from the Pod's network namespace (entered through one of its processes)."""
    pid = next(iter(pod_processes(pod.metadata.uid)))
    fetch = (
        "import ssl, sys, urllib.error, urllib.request; ctx = ssl._create_unverified_context()\n"
        "try: print(urllib.request.urlopen(sys.argv[1], context=ctx, timeout=5).read().decode())\n"
        "except urllib.error.HTTPError as err: print(err)"
    )
    done = subprocess.run(
        ["nsenter", "-t", str(pid), "-n", sys.executable, "-c", fetch, url],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else ""


def test_an_image_from_podmans_store_runs(real_node, tmp_path):
    # The program the node built for its sandbox image, in an image of podman's.
    (tmp_path / "nodeimage").write_bytes(gobuild.path(node.SANDBOX_PROGRAM).read_bytes())
    (tmp_path / "Containerfile").write_text(
        'FROM scratch\nCOPY --chmod=755 nodeimage /hello\nENTRYPOINT ["/hello"]\n'
    )
    name = "localhost/real-node-test/hello:1"
    image.ensure_tools()  # podman, from Debian's packages when missing
    podman = image.Podman.default()
    image.build(podman, tmp_path, name, file="Containerfile")
    try:
        loaded = dev_cluster("load-image", name, state_dir=real_node.state_dir)
        assert loaded.returncode == 0, loaded.stderr
        real_node.run_pod("hello", name, [])
        assert real_node.kubectl("logs", "hello").stdout == "nodeimage: running in hello\n"
    finally:
        podman.run("rmi", "--force", name, check=False)

    missing = dev_cluster("load-image", "localhost/no-such-image:1", state_dir=real_node.state_dir)
    assert missing.returncode == 1
    [line] = missing.stderr.strip().splitlines()
    assert line.startswith(
        "ansible-operator dev-cluster load-image: localhost/no-such-image:1: podman save failed"
    ), line


def test_one_real_node_per_machine(real_node, tmp_path):
    second = tmp_path / "second"
    refused = dev_cluster("up", "--real-node", state_dir=second)
    assert refused.returncode == 1
    last = refused.stderr.strip().splitlines()[-1]
    assert last == (
        f"ansible-operator dev-cluster up: this machine already hosts the real node of the "
        f"cluster in {real_node.state_dir}; stop it first ('ansible-operator dev-cluster down "
        f"--state-dir {real_node.state_dir}')"
    )
    # The refused cluster stopped what it had started, and touched nothing of the first.
    assert not (second / "state.json").exists()
    assert ready(real_node.core().read_node(NODE))
    assert subprocess.run(["ip", "link", "show", BRIDGE], capture_output=True).returncode == 0

    plain = dev_cluster("up", state_dir=real_node.state_dir)
    assert plain.returncode == 1
    assert "runs with a real node; run 'dev-cluster down' first" in plain.stderr


def test_down_leaves_nothing_on_the_machine(real_node):
    state = json.loads((real_node.state_dir / "state.json").read_text())
    namespaces = {p.name for p in Path("/run/netns").glob("cni-*")}
    assert namespaces, "the Pods have network namespaces"
    down = dev_cluster("down", state_dir=real_node.state_dir)
    assert down.returncode == 0, down.stderr

    refs = [processes.ProcessRef(c["pid"], c["start_time"]) for c in state["components"].values()]
    assert not [ref for ref in refs if processes.is_running(ref)]
    leftovers = subprocess.run(["pgrep", "-f", str(real_node.state_dir)], capture_output=True)
    assert leftovers.stdout == b"", "no process (kubelet, containerd, shim) of the node is left"
    assert not Path("/sys/fs/cgroup/pids/ansible-operator-node").exists()
    mountinfo = Path("/proc/self/mountinfo").read_text()
    assert str(real_node.state_dir) not in mountinfo
    assert not namespaces & {p.name for p in Path("/run/netns").glob("cni-*")}
    assert subprocess.run(["ip", "link", "show", BRIDGE], capture_output=True).returncode != 0
    for tool in ("iptables", "ip6tables"):
        for table in ("filter", "nat", "mangle"):
            rules = subprocess.run(
                [tool, "-t", table, "-S"], capture_output=True, text=True, check=True
            ).stdout
            assert "KUBE-" not in rules and "ansible-operator" not in rules, (tool, table, rules)
    assert not MARKER.exists()
    assert not (real_node.state_dir / "node").exists()
