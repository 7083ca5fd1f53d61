"""Which cluster `make run`, `install` and `deploy` use (the user's, as operator-sdk's, else the
local one, said first); `build-installer` and `deploy` need a kubectl, not the control plane;
`make help` shows values, not variables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_operator import cli
from ansible_operator.devcluster import binaries, target

REPO = Path(__file__).resolve().parents[2]
KUBECONFIG = (
    "apiVersion: v1\nkind: Config\ncurrent-context: {context}\n"
    "clusters: [{{name: k, cluster: {{server: 'https://127.0.0.1:1'}}}}]\n"
    "users: [{{name: u, user: {{token: t}}}}]\n"
    "contexts: [{{name: c, context: {{cluster: k, user: u}}}}]\n"
)


def kubeconfig(path: Path, context: str = "c") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(KUBECONFIG.format(context=context or '""'))
    return path


def test_the_given_kubeconfig_wins(tmp_path):
    given = kubeconfig(tmp_path / "given")
    env = {"KUBECONFIG": str(kubeconfig(tmp_path / "env")), "HOME": str(tmp_path)}
    chosen = target.choose(given, env)
    assert chosen.kubeconfig == given
    assert chosen.describe() == f"cluster: --kubeconfig={given} (context c)"


def test_kubeconfig_then_the_current_context_then_the_local_cluster(tmp_path):
    home = tmp_path / "home"
    assert target.choose(None, {"HOME": str(home)}).describe() == (
        "cluster: the local dev cluster (no KUBECONFIG and no ~/.kube/config)"
    )
    default = kubeconfig(home / ".kube/config", context="")
    chosen = target.choose(None, {"HOME": str(home)})
    assert chosen.local
    assert chosen.describe() == f"cluster: the local dev cluster ({default} has no current context)"
    kubeconfig(default, context="kind-dev")
    chosen = target.choose(None, {"HOME": str(home)})
    assert chosen.kubeconfig == default
    assert chosen.describe() == f"cluster: the current context kind-dev of {default}"
    env_file = kubeconfig(tmp_path / "env")
    env = {"HOME": str(home), "KUBECONFIG": f"{tmp_path / 'missing'}:{env_file}"}
    assert target.choose(None, env).kubeconfig == env_file


def test_a_kubeconfig_named_that_is_not_there_is_one_line(tmp_path):
    with pytest.raises(target.TargetError, match=r"^KUBECONFIG=/nowhere: no such file$"):
        target.choose(None, {"KUBECONFIG": "/nowhere"})
    with pytest.raises(target.TargetError, match=r"^--kubeconfig=/nowhere: no such file$"):
        target.choose(Path("/nowhere"), {})


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_a_kubectl_on_path_before_the_cache(tmp_path):
    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": str(tmp_path / "bin")}
    with pytest.raises(binaries.BinariesError, match="no kubectl: install one on PATH"):
        binaries.kubectl(cache)
    cached = executable(binaries.cache_bin_dir(cache) / "kubectl")
    assert binaries.kubectl(cache) == cached
    on_path = executable(tmp_path / "bin" / "kubectl")
    assert binaries.kubectl(cache) == on_path


def test_dev_run_uses_kubeconfig_s_cluster_and_says_so(tmp_path):
    """KUBECONFIG names a cluster (unreachable here): dev run says it is the one, and fails on
    it in one line, without starting the local cluster."""
    project = tmp_path / "op"
    project.mkdir()
    env = {**os.environ, "KUBECONFIG": str(kubeconfig(tmp_path / "kc"))}
    env["ANSIBLE_OPERATOR_DEV_CLUSTER_DIR"] = str(tmp_path / "local-cluster")
    command = [sys.executable, "-m", "ansible_operator.cli"]
    subprocess.run([*command, "init", "--domain", "example.com"], cwd=project, env=env, check=True)
    subprocess.run(
        [*command, "new-api", "--group", "x", "--version", "v1", "--kind", "Thing"],
        cwd=project,
        env=env,
        check=True,
    )
    done = subprocess.run(
        [*command, "dev", "run"], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert done.stdout.splitlines()[0] == f"cluster: $KUBECONFIG {tmp_path / 'kc'} (context c)"
    (line,) = done.stderr.splitlines()
    assert line.startswith("ansible-operator dev run: kubectl apply -k ")
    assert "127.0.0.1:1" in line
    assert not (tmp_path / "local-cluster").exists()


def make(directory: Path, *args: str) -> str:
    done = subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=directory,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "ANSIBLE_OPERATOR": "ansible-operator"},
    )
    return done.stdout


def test_make_help_shows_values(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["init", "--domain", "example.com", "--project-name", "op"]) == 0
    shown = make(tmp_path, "help", "IMG=registry.example.com/op:2")
    assert "$(" not in shown and "$$" not in shown
    assert "build-installer        config/default with registry.example.com/op:2" in shown
    assert "bundle-build           build the bundle image controller-bundle:v0.0.1" in shown
    for name in ("install", "uninstall", "run", "deploy"):
        assert f"\n{name} " in shown
    assert "$(" not in make(REPO, "help")


def test_make_install_and_uninstall_are_the_crds_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["init", "--domain", "example.com", "--project-name", "op"]) == 0
    assert make(tmp_path, "-n", "install").split() == [
        "ansible-operator", "dev-image", "deploy", "--config", "crd"
    ]  # fmt: skip
    assert make(tmp_path, "-n", "uninstall").split() == [
        "ansible-operator", "dev-image", "undeploy", "--config", "crd"
    ]  # fmt: skip
