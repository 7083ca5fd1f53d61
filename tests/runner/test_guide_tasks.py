"""Every task example of the role author's guide passes Ansible's syntax check, as written.

Each list of tasks in docs/role-authors-guide.md becomes a play of one playbook, checked with
`ansible-playbook --syntax-check` from this virtualenv: module names must resolve (the
operator_sdk.util collection comes with the package, kubernetes.core with ansible) and every
keyword must be one Ansible knows. Unit checks of the guide are in tests/unit.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.guide import blocks, is_task_list

pytestmark = pytest.mark.ansible_core  # the core's own behaviour, on each core


class AnsibleYaml(yaml.SafeLoader):
    """YAML as Ansible reads it: the guide shows a run's extra vars, with `!unsafe`."""


AnsibleYaml.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def syntax_check(playbook: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "--syntax-check", str(playbook)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=playbook.parent,
    )


def test_task_examples_pass_the_syntax_check(tmp_path: Path):
    plays = [
        {
            "name": f"guide line {block.line}",
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": tasks,
        }
        for block in blocks()
        if block.lang == "yaml" and is_task_list(tasks := yaml.load(block.text, Loader=AnsibleYaml))
    ]
    assert len(plays) >= 5
    playbook = tmp_path / "guide.yml"
    playbook.write_text(yaml.safe_dump(plays, sort_keys=False))
    checked = syntax_check(playbook)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_syntax_check_refuses_an_unknown_module(tmp_path: Path):
    """The check above can fail: a module that does not exist is refused."""
    playbook = tmp_path / "bad.yml"
    playbook.write_text(
        yaml.safe_dump(
            [{"hosts": "localhost", "tasks": [{"name": "x", "operator_sdk.util.no_such": {}}]}]
        )
    )
    checked = syntax_check(playbook)
    assert checked.returncode != 0
    assert "no_such" in checked.stdout + checked.stderr
