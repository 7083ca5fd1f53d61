"""A new project, as a user makes one (`init`, then `new-api` for one kind), and its Makefile's
targets run with this virtualenv's `ansible-operator`: shared by the e2e and image layers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_operator import cli

BIN = Path(sys.executable).parent


def new_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, group: str, version: str, kind: str
) -> Path:
    """`init` in ``tmp_path/name``, then `new-api` for one kind; the working directory is it."""
    project = tmp_path / name
    project.mkdir()
    monkeypatch.chdir(project)
    assert cli.main(["init", "--domain", "example.com"]) == 0
    argv = ["new-api", "--group", group, "--version", version, "--kind", kind]
    assert cli.main(argv) == 0
    return project


def make(project: Path, *args: str) -> str:
    """`make args` in ``project``; its output, or a failed assertion with it."""
    env = {**os.environ, "ANSIBLE_OPERATOR": str(BIN / "ansible-operator")}
    argv = ["make", "--no-print-directory", *args]
    done = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
