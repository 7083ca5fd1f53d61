"""dev-cluster failures a user can cause end in one line that says what to do."""

from __future__ import annotations

import os
import subprocess
import sys


def dev_cluster(*args, env):
    return subprocess.run(
        [sys.executable, "-m", "ansible_operator.cli", "dev-cluster", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def test_incomplete_bin_dir_names_what_is_missing_and_the_three_ways(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "etcd").write_text("#!/bin/sh\n")
    (bin_dir / "etcd").chmod(0o755)
    result = dev_cluster(
        "up", "--bin-dir", str(bin_dir), "--state-dir", str(tmp_path / "c"), env=dict(os.environ)
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "kube-apiserver" in lines[0] and "kwok" in lines[0]
    assert "etcd," not in lines[0], "etcd is present and must not be reported missing"
    assert "--bin-dir" in lines[0] and "PATH" in lines[0] and "Go" in lines[0]


def test_go_missing_names_the_binaries_and_the_ways(tmp_path):
    env = dict(os.environ)
    env["PATH"] = str(tmp_path / "empty-path")  # no go, no binaries
    env["ANSIBLE_OPERATOR_CACHE_DIR"] = str(tmp_path / "cache")
    env.pop("ANSIBLE_OPERATOR_K8S_BIN_DIR", None)
    result = dev_cluster("up", "--state-dir", str(tmp_path / "c"), env=env)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ansible-operator dev-cluster up: go was not found")
    assert "kube-apiserver" in lines[0] and "--bin-dir" in lines[0]


def test_status_and_kubeconfig_without_a_cluster(tmp_path):
    env = dict(os.environ)
    status = dev_cluster("status", "--state-dir", str(tmp_path), env=env)
    assert status.returncode == 1 and "no cluster" in status.stdout
    kubeconfig = dev_cluster("kubeconfig", "--state-dir", str(tmp_path), env=env)
    assert kubeconfig.returncode == 1
    assert "run 'up' first" in kubeconfig.stderr


def test_bad_feature_gates_are_refused_in_one_line(tmp_path):
    result = dev_cluster(
        "up",
        "--feature-gates=ShardedListAndWatch=yes",
        "--state-dir",
        str(tmp_path / "c"),
        env=dict(os.environ),
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "ansible-operator dev-cluster: argument --feature-gates: 'ShardedListAndWatch=yes': "
        "expected Name=true or Name=false, comma-separated (see ansible-operator dev-cluster "
        "--help)"
    )
    assert not (tmp_path / "c").exists()  # nothing started, nothing written


def test_feature_gates_go_to_the_api_server_only():
    from collections import defaultdict
    from pathlib import Path

    from ansible_operator.devcluster import components
    from ansible_operator.devcluster.binaries import Binaries
    from ansible_operator.devcluster.components import Layout

    bins = Binaries(defaultdict(lambda: Path("/bin/any")), source="test")
    ports = dict.fromkeys(components.PORT_NAMES, 1)
    built = components.build(
        bins, Layout(Path("/state")), ports, feature_gates="ShardedListAndWatch=true"
    )
    with_gate = [c.name for c in built if "--feature-gates=ShardedListAndWatch=true" in c.argv]
    assert with_gate == ["kube-apiserver"]
    plain = components.build(bins, Layout(Path("/state")), ports)
    assert not any(arg.startswith("--feature-gates") for c in plain for arg in c.argv)


def test_load_image_says_what_it_needs_in_one_line(tmp_path):
    env = dict(os.environ)
    bare = dev_cluster("load-image", "--state-dir", str(tmp_path), env=env)
    assert bare.returncode == 1
    assert bare.stderr.strip() == (
        "ansible-operator dev-cluster load-image: load-image needs the images to load, "
        "e.g. localhost/op:1"
    )
    no_node = dev_cluster("load-image", "localhost/op:1", "--state-dir", str(tmp_path), env=env)
    assert no_node.returncode == 1
    assert no_node.stderr.strip() == (
        f"ansible-operator dev-cluster load-image: the cluster in {tmp_path} has no real node "
        "to load images into (start it with 'dev-cluster up --real-node')"
    )
    stray = dev_cluster("status", "localhost/op:1", "--state-dir", str(tmp_path), env=env)
    assert stray.returncode == 1
    assert stray.stderr.strip() == (
        "ansible-operator dev-cluster status: status takes no images: localhost/op:1"
    )
    stray_flag = dev_cluster("down", "--real-node", "--state-dir", str(tmp_path), env=env)
    assert stray_flag.returncode == 1
    assert stray_flag.stderr.strip() == (
        "ansible-operator dev-cluster down: --real-node goes with up or build, not down"
    )
