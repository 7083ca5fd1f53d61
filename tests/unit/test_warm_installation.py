"""Warm runs use the ansible-runner and ansible-core the start-up probe found: the executables it
asked must run on the fork server's Python, whose packages a warm run imports, or warm mode is
refused in one line."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ansible_operator.runner import RunnerError
from ansible_operator.runner.versions import AnsibleVersions
from ansible_operator.runner.warm.client import WarmRunner

BESIDE = Path(sys.executable).parent


def script(path: Path, interpreter: str) -> str:
    path.write_text(f"#!{interpreter}\n")
    path.chmod(0o755)
    return str(path)


def found(playbook: str) -> AnsibleVersions:
    return AnsibleVersions(core="2.18.19", runner="2.4.3", playbook=playbook)


def test_the_executables_of_this_python_are_accepted() -> None:
    runner = WarmRunner(executable=str(BESIDE / "ansible-runner"))
    runner.check_installation(found(str(BESIDE / "ansible-playbook")))


def test_an_env_shebang_is_followed_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{BESIDE}{os.pathsep}{os.environ['PATH']}")
    playbook = script(tmp_path / "ansible-playbook", f"/usr/bin/env {Path(sys.executable).name}")
    WarmRunner(executable=str(BESIDE / "ansible-runner")).check_installation(found(playbook))


@pytest.mark.parametrize("which", ["ansible-runner", "ansible-playbook"])
def test_an_executable_of_another_python_refuses_warm_mode(tmp_path: Path, which: str) -> None:
    other = script(tmp_path / "python3", "/bin/sh")  # another installation's interpreter
    executables = {
        "ansible-runner": str(BESIDE / "ansible-runner"),
        "ansible-playbook": str(BESIDE / "ansible-playbook"),
        which: script(tmp_path / which, other),
    }
    runner = WarmRunner(executable=executables["ansible-runner"])
    with pytest.raises(RunnerError) as refused:
        runner.check_installation(found(executables["ansible-playbook"]))
    message = str(refused.value)
    assert "\n" not in message
    assert f"{tmp_path / which} is another installation's (it runs on {other})" in message
    assert "--runner=cold" in message
