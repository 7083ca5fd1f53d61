"""dev molecule's `ansible-playbook`: Ansible's CLI, with Python module tasks on localhost run in
forks of the worker (runner.warm.modules), which the module's environment shows."""

from __future__ import annotations

import os
import subprocess

import pytest

from ansible_operator.dev import playbook
from ansible_operator.runner.warm.modules import IN_PROCESS_ENV

pytestmark = pytest.mark.ansible_core

PLAYBOOK = f"""\
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - ansible.builtin.command: printenv {IN_PROCESS_ENV}
      register: printed
      changed_when: false
    - ansible.builtin.debug:
        msg: "in-process={{{{ printed.stdout }}}}"
    - ansible.builtin.command: "false"
"""


def run(program, *args, cwd):
    env = {**os.environ, "ANSIBLE_PIPELINING": "1", "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(
        [str(program), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_module_tasks_run_in_process_and_failures_still_fail(tmp_path):
    program = playbook.install(tmp_path)
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    done = run(program, "play.yml", cwd=tmp_path)
    assert "in-process=1" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 2, done.stdout  # the failing `false` task fails the play
    assert "ok=2" in done.stdout and "failed=1" in done.stdout


def test_version_is_ansible_playbooks(tmp_path):
    done = run(playbook.install(tmp_path), "--version", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("ansible-playbook [core ")
