"""What the real node changes on the machine, and undoing all of it.

``prepare`` adds the node's bridge, the rule that takes Pods to the API server, the kernel
settings forwarding needs and the cgroup below which every Pod runs. ``clean`` removes them and
what the node left behind: the containers' processes, containerd's shims, the mounts under the
node's directory, the Pods' network namespaces, and the chains the kubelet and kube-proxy add to
the machine's iptables. One real node runs on a machine at a time (a marker in /run names its
cluster): the bridge, the Service addresses and the iptables chains are the machine's.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ansible_operator.devcluster import node
from ansible_operator.devcluster.node import NodeLayout

MARKER = Path("/run/ansible-operator-real-node.json")
MOUNTINFO = Path("/proc/self/mountinfo")
SYSCTLS = (
    "/proc/sys/net/ipv4/ip_forward",  # Pods' packets are routed through the bridge
    "/proc/sys/net/bridge/bridge-nf-call-iptables",  # kube-proxy's rules see bridged packets
)
ROUTE_LOCALNET = f"/proc/sys/net/ipv4/conf/{node.BRIDGE}/route_localnet"
IPTABLES_TABLES = ("filter", "nat", "mangle")
API_RULE_COMMENT = "ansible-operator real node: the kubernetes Service"


class NodeHostError(Exception):
    """The machine cannot host the real node; the message is one line for the user."""


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, check=False)


def _must(*argv: str) -> None:
    done = _run(*argv)
    if done.returncode != 0:
        raise NodeHostError(f"{shlex.join(argv)} failed: {(done.stderr or done.stdout).strip()}")


def api_rule(api_port: int) -> list[str]:
    """The nat rule that takes a Pod's connection to the `kubernetes` Service to the API server
    on loopback (its Endpoints stay empty: the API server listens on 127.0.0.1 only)."""
    return [
        "PREROUTING",
        *("-i", node.BRIDGE, "-d", f"{node.API_SERVICE_IP}/32", "-p", "tcp", "--dport", "443"),
        *("-m", "comment", "--comment", API_RULE_COMMENT),
        *("-j", "DNAT", "--to-destination", f"127.0.0.1:{api_port}"),
    ]


def owner() -> str | None:
    """The state directory of the cluster whose real node this machine hosts, if any."""
    try:
        return str(json.loads(MARKER.read_text())["state_dir"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def prepare(layout: NodeLayout, api_port: int) -> None:
    """Make the machine ready for the node: bridge, rule, kernel settings and cgroups."""
    if os.geteuid() != 0:
        raise NodeHostError("a real node needs root: it adds a bridge, iptables rules and cgroups")
    missing = node.missing_prerequisites()
    if missing:
        raise NodeHostError(
            f"a real node needs {', '.join(missing)} (Debian: apt-get install {node.PACKAGES})"
        )
    holder = owner()
    if holder is not None and holder != str(layout.cluster.state_dir):
        raise NodeHostError(
            f"this machine already hosts the real node of the cluster in {holder}; stop it "
            f"first ('ansible-operator dev-cluster down --state-dir {holder}')"
        )
    taken = _machine_taken()
    if taken:
        raise NodeHostError(
            f"this machine already has {taken} (another kubelet, kube-proxy or cluster runs "
            "here?); the real node would take them over"
        )
    if not Path(SYSCTLS[1]).exists():
        _run("modprobe", "br_netfilter")
        if not Path(SYSCTLS[1]).exists():
            raise NodeHostError(
                "the kernel has no br_netfilter (no /proc/sys/net/bridge): Services cannot "
                "reach Pods on the node's bridge"
            )
    saved = {path: Path(path).read_text().strip() for path in SYSCTLS}
    MARKER.write_text(json.dumps({"state_dir": str(layout.cluster.state_dir), "sysctls": saved}))
    for path in SYSCTLS:
        Path(path).write_text("1")
    _must("ip", "link", "add", node.BRIDGE, "address", node.BRIDGE_MAC, "type", "bridge")
    _must("ip", "addr", "add", f"{node.NODE_IP}/{node.SUBNET.split('/')[1]}", "dev", node.BRIDGE)
    _must("ip", "link", "set", node.BRIDGE, "up")
    Path(ROUTE_LOCALNET).write_text("1")  # a Pod's packet may be routed to 127.0.0.1
    _must("iptables", "-t", "nat", "-A", *api_rule(api_port))
    for hierarchy in cgroup_hierarchies():
        (hierarchy / node.CGROUP_ROOT.lstrip("/")).mkdir(exist_ok=True)


def _machine_taken() -> str:
    """What another node left on the machine that ours would take: the bridge, KUBE- chains."""
    if _run("ip", "link", "show", node.BRIDGE).returncode == 0:
        return f"a link named {node.BRIDGE}"
    for tool, table, rules in _iptables_rules():
        chains = [words[1] for words in rules if words[:1] == ["-N"] and _kube(words[1])]
        if chains:
            return f"{tool} chains {', '.join(chains[:3])} in table {table}"
    return ""


def _iptables_rules() -> Iterator[tuple[str, str, list[list[str]]]]:
    """Each table's rules as ``iptables -S`` lists them (split into words), IPv4 and IPv6."""
    for tool in ("iptables", "ip6tables"):
        for table in IPTABLES_TABLES:
            listed = _run(tool, "-t", table, "-S")
            if listed.returncode == 0:
                yield tool, table, [shlex.split(line) for line in listed.stdout.splitlines()]


def _kube(chain: str) -> bool:
    """A chain of the kubelet's or kube-proxy's."""
    return chain.startswith("KUBE-")


def cgroup_hierarchies() -> list[Path]:
    """Every mounted cgroup hierarchy (v1 controllers and the v2 one)."""
    found = []
    for line in MOUNTINFO.read_text().splitlines():
        before, _, after = line.partition(" - ")
        if after.split(" ", 1)[0] in ("cgroup", "cgroup2"):
            found.append(Path(_unescape(before.split(" ")[4])))
    return found


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    for code in ("040", "011", "012", "134"):
        field = field.replace("\\" + code, chr(int(code, 8)))
    return field


def mounts_under(root: Path) -> list[Path]:
    """Mount points at or below ``root``, deepest first."""
    points = []
    for line in MOUNTINFO.read_text().splitlines():
        point = Path(_unescape(line.split(" ")[4]))
        if point == root or root in point.parents:
            points.append(point)
    return sorted(points, key=lambda p: len(p.parts), reverse=True)


def clean(layout: NodeLayout, say: Callable[[str], None]) -> list[str]:
    """Undo ``prepare`` and remove what the node left behind, once its processes are stopped.
    Each step runs whatever the others found; returns what could not be removed."""
    holder = owner()
    if holder is not None and holder != str(layout.cluster.state_dir):
        return []  # the machine's real node is another cluster's: nothing here is ours
    ours = holder is not None  # the machine-wide changes are ours only while the marker says so
    left: list[str] = []
    namespaces = _sandbox_namespaces(layout)
    killed = _kill_cgroup_processes()
    shims = _kill_shims(layout)
    if killed or shims:
        say(f"killed {killed} container processes and {shims} containerd shims of the real node")
    for point in mounts_under(layout.root):
        if _run("umount", "-l", str(point)).returncode != 0:
            left.append(f"mount {point}")
    for path in namespaces:
        _run("umount", "-l", str(path))
        with contextlib.suppress(OSError):
            path.unlink()
    left += _remove_cgroups()
    if ours:
        bridge_there = _run("ip", "link", "show", node.BRIDGE).returncode == 0
        if bridge_there and _run("ip", "link", "del", node.BRIDGE).returncode != 0:
            left.append(f"bridge {node.BRIDGE}")
        left += _remove_iptables()
        _restore_sysctls(layout)
    if not left:
        _rmtree(layout.root)
    return left


def _sandbox_namespaces(layout: NodeLayout) -> list[Path]:
    """The network namespaces of the node's Pods, from their sandboxes' OCI bundles."""
    found = []
    tasks = layout.containerd_state / "io.containerd.runtime.v2.task"
    for config in tasks.glob("*/*/config.json"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError, AttributeError):
            for ns in json.loads(config.read_text())["linux"]["namespaces"]:
                if ns.get("type") == "network" and ns.get("path", "").startswith(
                    ("/var/run/netns/", "/run/netns/")
                ):
                    found.append(Path(ns["path"]))
    return found


def _our_cgroups() -> Iterator[Path]:
    """Every cgroup at or below the node's root, deepest first, on every hierarchy."""
    for hierarchy in cgroup_hierarchies():
        root = hierarchy / node.CGROUP_ROOT.lstrip("/")
        if root.is_dir():
            yield from sorted(
                (p for p in [root, *root.rglob("*")] if p.is_dir()),
                key=lambda p: len(p.parts),
                reverse=True,
            )


def _kill_cgroup_processes(timeout: float = 10.0) -> int:
    """SIGKILL every process in the node's cgroups until none is left; how many were killed."""
    killed: set[int] = set()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = set()
        for group in _our_cgroups():
            with contextlib.suppress(OSError):
                pids |= {int(p) for p in (group / "cgroup.procs").read_text().split()}
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        killed |= pids
        time.sleep(0.1)
    return len(killed)


def _kill_shims(layout: NodeLayout) -> int:
    """containerd's shims for this node (their command line names its socket)."""
    socket = str(layout.containerd_socket).encode()
    count = 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"containerd-shim-runc-v2") and socket in argv:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(proc.name), signal.SIGKILL)
                count += 1
    return count


def _remove_cgroups() -> list[str]:
    left = []
    for group in _our_cgroups():
        for _ in range(50):  # a killed process leaves its cgroup a moment later
            try:
                group.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)
        else:
            left.append(f"cgroup {group}")
    return left


def _remove_iptables() -> list[str]:
    """The rule of ``prepare`` and every KUBE- chain (the kubelet's and kube-proxy's), with the
    rules that jump to them, in IPv4 and IPv6."""
    left = []
    for tool, table, rules in _iptables_rules():
        for words in filter(_removable_rule, rules):
            if _run(tool, "-t", table, "-D", *words[1:]).returncode != 0:
                left.append(f"{tool} -t {table} {shlex.join(words)}")
        kube = [words[1] for words in rules if words[:1] == ["-N"] and _kube(words[1])]
        for chain in kube:
            _run(tool, "-t", table, "-F", chain)
        for chain in kube:
            if _run(tool, "-t", table, "-X", chain).returncode != 0:
                left.append(f"{tool} -t {table} chain {chain}")
    return left


def _removable_rule(words: list[str]) -> bool:
    """A rule (``iptables -S`` words) outside the KUBE- chains that is ours or jumps into one."""
    if words[:1] != ["-A"] or _kube(words[1]):
        return False
    return API_RULE_COMMENT in words or any(_kube(word) for word in words[2:])


def _restore_sysctls(layout: NodeLayout) -> None:
    try:
        marker = json.loads(MARKER.read_text())
    except (OSError, ValueError):
        return
    if marker.get("state_dir") != str(layout.cluster.state_dir):
        return
    for path, value in (marker.get("sysctls") or {}).items():
        if path in SYSCTLS:
            with contextlib.suppress(OSError):
                Path(path).write_text(str(value))
    MARKER.unlink(missing_ok=True)


def _rmtree(root: Path) -> None:
    """Remove the node's directory; never across a mount point still there."""
    if root.exists() and not mounts_under(root):
        subprocess.run(["rm", "-rf", "--one-file-system", str(root)], check=False)
