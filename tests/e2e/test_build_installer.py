"""`make build-installer` needs a kubectl, not the control plane: it renders config/default with
only a kubectl on PATH and an empty binaries cache. In the e2e layer because `make e2e` makes sure
the cluster's kubectl exists first (the unit layer may run on a machine without one)."""

from __future__ import annotations

import pytest
import yaml

from ansible_operator import cli
from ansible_operator.devcluster import binaries

pytestmark = pytest.mark.e2e


def test_build_installer_needs_a_kubectl_not_the_control_plane(tmp_path, monkeypatch):
    """Only a kubectl on PATH, an empty cache: `make build-installer`'s command renders
    config/default."""
    real = binaries.kubectl()  # `make e2e` builds (or finds) the cluster's binaries first
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "kubectl").symlink_to(real)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty-cache"))
    monkeypatch.delenv(binaries.BIN_DIR_ENV, raising=False)
    project = tmp_path / "op"
    project.mkdir()
    monkeypatch.chdir(project)
    assert cli.main(["init", "--domain", "example.com"]) == 0
    argv = ["dev-image", "render", "--tag", "registry.example.com/op:1"]
    assert cli.main([*argv, "--output", "dist/install.yaml"]) == 0
    kinds = [d["kind"] for d in yaml.safe_load_all((project / "dist/install.yaml").read_text())]
    assert "Deployment" in kinds
