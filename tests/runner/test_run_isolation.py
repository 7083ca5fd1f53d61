"""Nothing crosses from one run to the next, or from an Ansible worker into its module, under
either runner: each test role shows what a new interpreter would have, and the warm runner's
guard against each leak is named where it is tested."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ansible_operator.runner import ColdRunner, RunResult

from .runs import PLAYBOOKS, ROLES, MakeRequest

pytestmark = pytest.mark.ansible_core  # the core's own behaviour, on each core


def run(runner: ColdRunner, request: object) -> RunResult:
    result = asyncio.run(runner.run(request))  # type: ignore[arg-type]
    assert result.ok, result.outcome.failures
    return result


def test_a_modules_warnings_and_deprecations_reach_its_own_result(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    # Guard: patches/module_exec.as_module_side puts back the module side's hooks (2.19+).
    data = run(runner, make_request(role=str(ROLES / "warner"), skip_facts=True)).outcome
    assert data.artifact_data["warnings"] == ["warned by the module"]
    assert data.artifact_data["deprecations"] == ["deprecated by the module"]


def test_a_module_has_none_of_its_workers_kubernetes_clients(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    # Guards: modules._as_in_a_new_interpreter (collections' modules, the default configuration)
    # and the descriptors closed in the module's fork (sockets).
    data = run(runner, make_request(role=str(ROLES / "client_reuser"), skip_facts=True)).outcome
    assert data.artifact_data == {"leaks": []}


def test_a_roles_module_utility_that_shadows_ansible_cores_wins(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    # Guard: patches/module_exec._forgetting_shadowed (the worker has ansible-core's urls imported).
    data = run(runner, make_request(role=str(ROLES / "shadower"), skip_facts=True)).outcome
    assert data.artifact_data == {"urls_from": "the role"}


def test_the_operators_working_directory_is_not_on_the_path_of_a_run(
    runner: ColdRunner, make_request: MakeRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Guard: the fork server starts with `python -P` (client.py).
    cwd = tmp_path / "operator-cwd"
    cwd.mkdir()
    imported = tmp_path / "imported"
    (cwd / "difflib.py").write_text(f"open({str(imported)!r}, 'w').close()\n")
    monkeypatch.chdir(cwd)
    run(runner, make_request(playbook=str(PLAYBOOKS / "one_debug.yml")))
    assert not imported.exists()
