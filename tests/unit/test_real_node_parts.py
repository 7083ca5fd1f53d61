"""The real node's pure parts: its sandbox image archive, and what its teardown recognises as
its own on the machine (the e2e module test_real_node runs the node itself)."""

from __future__ import annotations

import hashlib
import io
import json
import shlex
import subprocess
import tarfile
from pathlib import Path

import pytest

from ansible_operator.devcluster import node, node_host, oci
from ansible_operator.devcluster.cluster import DevCluster
from ansible_operator.devcluster.components import Layout


def _members(archive: bytes) -> dict[str, tarfile.TarInfo | bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return {m.name: (m, tar.extractfile(m).read()) for m in tar.getmembers()}  # type: ignore[union-attr]


def test_the_program_image_is_a_valid_oci_layout_that_names_itself():
    program = b"\x7fELF pretend program"
    archive = oci.program_image(program, "nodeimage", "localhost/x/nodeimage:1")
    again = oci.program_image(program, "nodeimage", "localhost/x/nodeimage:1")
    assert archive == again, "reproducible"
    files = _members(archive)

    def blob(digest: str) -> bytes:
        algorithm, hexdigest = digest.split(":")
        content = files[f"blobs/{algorithm}/{hexdigest}"][1]
        assert hashlib.sha256(content).hexdigest() == hexdigest
        return content

    assert json.loads(files["oci-layout"][1]) == {"imageLayoutVersion": "1.0.0"}
    [entry] = json.loads(files["index.json"][1])["manifests"]
    assert entry["annotations"]["io.containerd.image.name"] == "localhost/x/nodeimage:1"
    assert entry["annotations"]["org.opencontainers.image.ref.name"] == "1"
    manifest = json.loads(blob(entry["digest"]))
    assert len(blob(entry["digest"])) == entry["size"]
    config = json.loads(blob(manifest["config"]["digest"]))
    assert config["config"]["Entrypoint"] == ["/nodeimage"]
    [layer] = manifest["layers"]
    layer_tar = blob(layer["digest"])
    assert config["rootfs"]["diff_ids"] == [layer["digest"]]  # uncompressed: digest == diff_id
    [(info, content)] = _members(layer_tar).values()
    assert (info.name, info.mode, info.mtime, content) == (
        "nodeimage",
        0o755,
        0,
        b"\x7fELF pretend program",
    )


def test_teardown_removes_the_rules_that_jump_into_kube_chains_and_its_own_rule():
    removable = [
        "-A INPUT -j KUBE-FIREWALL",
        '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        f'-A PREROUTING -i ao0 -m comment --comment "{node_host.API_RULE_COMMENT}" -j DNAT',
    ]
    kept = [
        "-A KUBE-SERVICES -d 10.0.0.9/32 -j KUBE-SVC-X",  # flushed with its chain instead
        "-A FORWARD -j DOCKER-USER",
        "-N KUBE-FIREWALL",
        "-P INPUT ACCEPT",
    ]
    assert [r for r in removable + kept if node_host._removable_rule(shlex.split(r))] == removable


def test_mounts_under_a_directory_deepest_first_with_escaped_names(tmp_path, monkeypatch):
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(
        "22 1 0:21 / /tmp/state rw - tmpfs tmpfs rw\n"
        "23 22 0:22 / /tmp/state/node/a\\040b/rootfs rw - overlay overlay rw\n"
        "24 22 0:23 / /tmp/state/node/shm rw - tmpfs shm rw\n"
        "25 1 0:24 / /tmp/state-other rw - tmpfs tmpfs rw\n"
        "26 1 0:25 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
    )
    monkeypatch.setattr(node_host, "MOUNTINFO", mountinfo)
    assert node_host.mounts_under(Path("/tmp/state/node")) == [
        Path("/tmp/state/node/a b/rootfs"),
        Path("/tmp/state/node/shm"),
    ]
    assert node_host.cgroup_hierarchies() == [Path("/sys/fs/cgroup/pids")]


def _layout(tmp_path: Path) -> node.NodeLayout:
    return node.NodeLayout(Layout(tmp_path))


def test_a_real_node_needs_root(tmp_path, monkeypatch):
    monkeypatch.setattr(node_host.os, "geteuid", lambda: 1000)
    with pytest.raises(node_host.NodeHostError) as err:
        node_host.prepare(_layout(tmp_path), 6443)
    assert str(err.value) == "a real node needs root: it adds a bridge, iptables rules and cgroups"


def test_a_real_node_names_the_packages_it_lacks(tmp_path, monkeypatch):
    monkeypatch.setattr(node_host.os, "geteuid", lambda: 0)
    monkeypatch.setattr(node.shutil, "which", lambda name: None if "containerd" in name else name)
    monkeypatch.setattr(node, "CNI_DIRS", (tmp_path / "no-cni",))
    with pytest.raises(node_host.NodeHostError) as err:
        node_host.prepare(_layout(tmp_path), 6443)
    assert str(err.value) == (
        "a real node needs containerd, containerd-shim-runc-v2, CNI plugin bridge, "
        "CNI plugin host-local, CNI plugin loopback (Debian: apt-get install containerd runc "
        "containernetworking-plugins iptables conntrack)"
    )


def test_a_second_real_node_is_refused_before_anything_changes(tmp_path, monkeypatch):
    marker = tmp_path / "marker.json"
    marker.write_text(json.dumps({"state_dir": "/elsewhere"}))
    monkeypatch.setattr(node_host, "MARKER", marker)
    monkeypatch.setattr(node_host.os, "geteuid", lambda: 0)
    monkeypatch.setattr(node, "missing_prerequisites", lambda: [])
    ran = []
    monkeypatch.setattr(node_host, "_run", lambda *argv: ran.append(argv))
    with pytest.raises(node_host.NodeHostError) as err:
        node_host.prepare(_layout(tmp_path), 6443)
    assert "already hosts the real node of the cluster in /elsewhere" in str(err.value)
    assert node_host.clean(_layout(tmp_path), print) == [] and ran == [], "another's: untouched"


def test_a_real_node_refuses_a_machine_whose_iptables_another_kube_proxy_holds(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(node_host, "MARKER", tmp_path / "marker.json")
    monkeypatch.setattr(node_host.os, "geteuid", lambda: 0)
    monkeypatch.setattr(node, "missing_prerequisites", lambda: [])

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        listed = "-P PREROUTING ACCEPT\n-N KUBE-SERVICES\n" if argv[-1] == "-S" else ""
        return subprocess.CompletedProcess(argv, 0 if listed else 1, listed, "")

    monkeypatch.setattr(node_host, "_run", run)
    with pytest.raises(node_host.NodeHostError) as err:
        node_host.prepare(_layout(tmp_path), 6443)
    assert str(err.value) == (
        "this machine already has iptables chains KUBE-SERVICES in table filter (another "
        "kubelet, kube-proxy or cluster runs here?); the real node would take them over"
    )
    assert not (tmp_path / "marker.json").exists(), "refused before any change"


def test_a_closed_output_does_not_stop_the_cluster_from_stopping(tmp_path):
    def closed(message: str) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    cluster = DevCluster(tmp_path, progress=closed)
    (tmp_path / "state.json").write_text(
        json.dumps({"server": "https://127.0.0.1:1", "components": {}, "real_node": False})
    )
    assert cluster.down() is True, "down went on through every progress line"
    assert not (tmp_path / "state.json").exists()
