"""devcluster.gobuild without building: where a program is cached, that a cached one is used as
it is, and that a machine without Go gets one line naming the program (the builds themselves
run in tests/e2e: the bundle validator's and promtool's)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_operator.devcluster import binaries, gobuild


@pytest.fixture
def program(tmp_path) -> gobuild.GoProgram:
    module = tmp_path / "module"
    module.mkdir()
    (module / "go.mod").write_text("module example.local/hello\n\ngo 1.26.0\n")
    (module / "main.go").write_text('package main\n\nfunc main() { println("hello") }\n')
    return gobuild.GoProgram(name="hello", pin="v1.0.0", title="hello (v1.0.0)", module=module)


def test_the_cached_name_has_the_pin_and_follows_the_modules_files(program, tmp_path):
    env = {"ANSIBLE_OPERATOR_CACHE_DIR": str(tmp_path / "cache")}
    first = gobuild.path(program, env)
    assert first.parent == tmp_path / "cache/bin"
    assert first.name.startswith("hello_v1.0.0_")
    assert gobuild.path(program, env) == first
    (program.module / "main.go").write_text('package main\n\nfunc main() { println("hi") }\n')
    assert gobuild.path(program, env) != first


def test_a_cached_program_is_used_without_go(program, tmp_path):
    env = {"ANSIBLE_OPERATOR_CACHE_DIR": str(tmp_path / "cache"), "PATH": str(tmp_path / "none")}
    cached = gobuild.path(program, env)
    cached.parent.mkdir(parents=True)
    cached.write_text("#!/bin/sh\n")
    assert gobuild.ensure(program, env) == cached


def test_without_go_one_line_names_the_program(program, tmp_path):
    env = {"ANSIBLE_OPERATOR_CACHE_DIR": str(tmp_path / "cache"), "PATH": str(tmp_path / "none")}
    with pytest.raises(binaries.BinariesError) as raised:
        gobuild.ensure(program, env)
    assert str(raised.value) == (
        "go was not found on PATH: hello (v1.0.0) is built from Go modules on first use"
    )


def test_bundle_validate_without_go_says_so_in_one_line(tmp_path):
    (tmp_path / "bundle/manifests").mkdir(parents=True)
    env = dict(os.environ, PATH=str(tmp_path / "none"), ANSIBLE_OPERATOR_CACHE_DIR=str(tmp_path))
    result = subprocess.run(
        [sys.executable, "-m", "ansible_operator.cli", "bundle", "validate", "bundle"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "ansible-operator bundle validate: go was not found on PATH: the bundle validator "
        "(operator-framework/api v0.34.0) is built from Go modules on first use\n"
    )
    assert not (tmp_path / "bin").exists()
