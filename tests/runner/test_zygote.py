"""Zygotes (zygote.py): a kind of run seen before starts from a process that has imported
Ansible's controller in its configuration; what belongs to one run stays its own, a changed
configuration is read anew, and a configuration that warns when imported gets no zygote."""

from __future__ import annotations

import asyncio
import signal
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from ansible_operator.runner import RunResult, WarmNotice
from ansible_operator.runner.warm.client import ForkServer, WarmRunner
from ansible_operator.runner.warm.server import MAX_MISFITS

from .runs import DATA, PLAYBOOKS, TAG_ENV, MakeRequest, tagged_processes
from .test_warm_runner import _started_to_sleep

CORE = tuple(int(part) for part in version("ansible-core").split(".")[:2])
RUNS_TO_A_ZYGOTE = 10  # the zygote imports beside the runs; generous for a loaded machine


def _probe(make_request: MakeRequest, env: dict[str, str], **fields: Any) -> Any:
    return make_request(playbook=str(PLAYBOOKS / "zygote_probe.yml"), extra_env=env, **fields)


def _config(path: Path, roles: str) -> dict[str, str]:
    path.write_text(f"[defaults]\nroles_path = {DATA / roles}\n")
    return {"ANSIBLE_CONFIG": str(path)}


def _runs_until_from_zygote(warm: WarmRunner, request: Any) -> list[RunResult]:
    results = []
    for _ in range(RUNS_TO_A_ZYGOTE):
        result = asyncio.run(warm.run(request()))
        assert result.ok, result.outcome.failures
        results.append(result)
        if result.outcome.artifact_data["from_zygote"]:
            return results
    raise AssertionError(f"no run came from a zygote in {RUNS_TO_A_ZYGOTE} runs")


@pytest.mark.ansible_core
def test_a_kind_seen_before_starts_from_its_zygote_and_a_changed_config_is_read_anew(
    warm: WarmRunner, make_request: MakeRequest, tmp_path: Path
) -> None:
    env = _config(tmp_path / "ansible.cfg", "roles_a")
    results = _runs_until_from_zygote(warm, lambda: _probe(make_request, env))
    assert not results[0].outcome.artifact_data["from_zygote"]  # nothing recorded yet
    assert {r.outcome.artifact_data["roles_path_seen"] for r in results} == {"a"}

    # Same kind (same variables), new ini content: the zygote's constants no longer fit.
    _config(tmp_path / "ansible.cfg", "roles_b")
    changed = asyncio.run(warm.run(_probe(make_request, env)))
    assert changed.ok, changed.outcome.failures
    assert changed.outcome.artifact_data == {"roles_path_seen": "b", "from_zygote": False}
    again = _runs_until_from_zygote(warm, lambda: _probe(make_request, env))
    assert {r.outcome.artifact_data["roles_path_seen"] for r in again} == {"b"}


@pytest.mark.ansible_core
def test_runs_from_a_zygote_have_their_own_task_ids_and_temporary_directories(
    warm: WarmRunner, make_request: MakeRequest, tmp_path: Path
) -> None:
    local = tmp_path / "local-tmp"
    env = {**_config(tmp_path / "ansible.cfg", "roles_a"), "ANSIBLE_LOCAL_TEMP": str(local)}
    _runs_until_from_zygote(warm, lambda: _probe(make_request, env))
    task_ids = []
    for _ in range(2):
        events: list[dict[str, Any]] = []
        result = asyncio.run(warm.run(_probe(make_request, env), events.append))
        assert result.outcome.artifact_data["from_zygote"]
        task_ids.append(
            {e["event_data"]["task_uuid"] for e in events if "task_uuid" in e.get("event_data", {})}
        )
    assert task_ids[0] and task_ids[1] and not task_ids[0] & task_ids[1]

    server = warm.server.process
    assert server is not None
    warm.close()  # the server and its zygote exit; the zygote removes its own directory
    assert server.wait(60) == 0
    assert list(local.iterdir()) == []


@pytest.mark.any_core(reason="a zygote's end with its fork server is the operator's")
def test_a_run_whose_zygote_dies_with_the_fork_server_fails_saying_so(
    warm: WarmRunner, make_request: MakeRequest, tmp_path: Path
) -> None:
    env = _config(tmp_path / "ansible.cfg", "roles_a")
    _runs_until_from_zygote(warm, lambda: _probe(make_request, env))
    request = _probe(make_request, env, extravars={"sleep_long": True})
    tag = request.extra_env[TAG_ENV]

    async def main() -> RunResult:
        task = await _started_to_sleep(warm, request, tag)
        assert warm.server.process is not None
        warm.server.process.send_signal(signal.SIGKILL)
        return await task

    result = asyncio.run(main())
    assert not result.ok
    assert "fork server died" in result.outcome.failures[-1].message
    assert tagged_processes(tag) == []


@pytest.mark.any_core(reason="a zygote's idle timer is the operator's")
def test_an_unused_zygote_goes_and_the_next_run_of_its_kind_starts_another(
    make_request: MakeRequest, tmp_path: Path
) -> None:
    warm = WarmRunner(server=ForkServer(zygote_idle=5.0))  # runs under load come seconds apart
    try:
        env = _config(tmp_path / "ansible.cfg", "roles_a")
        _runs_until_from_zygote(warm, lambda: _probe(make_request, env))
        assert warm.server.process is not None
        server = warm.server.process.pid
        assert _children(server)  # the zygote
        deadline = time.monotonic() + 60
        while _children(server):
            assert time.monotonic() < deadline, "the unused zygote did not go"
            time.sleep(0.1)
        _runs_until_from_zygote(warm, lambda: _probe(make_request, env))
    finally:
        warm.server.kill()


@pytest.mark.any_core(reason="the count of zygotes that did not fit is the operator's")
def test_a_kind_whose_zygotes_keep_not_fitting_gets_none(
    warm: WarmRunner, make_request: MakeRequest, tmp_path: Path
) -> None:
    # Each run reads another ini content than the run before: the zygote, started from the one
    # before, never fits. After MAX_MISFITS such zygotes, the kind is run without one.
    env = _config(tmp_path / "ansible.cfg", "roles_a")
    assert warm.server.process is None
    told: list[WarmNotice] = []
    warm.on_notice = told.append
    zygotes: set[str] = set()
    for number in range(40):
        roles = ("roles_a", "roles_b")[number % 2]
        _config(tmp_path / "ansible.cfg", roles)
        result = asyncio.run(warm.run(_probe(make_request, env)))
        assert result.ok, result.outcome.failures
        assert result.outcome.artifact_data["roles_path_seen"] == roles[-1]
        assert warm.server.process is not None
        alive = _children(warm.server.process.pid)
        zygotes.update(alive)
        if len(zygotes) >= MAX_MISFITS and not alive:
            break
    assert len(zygotes) >= MAX_MISFITS, "the zygotes did not get the runs"
    for _ in range(RUNS_TO_A_ZYGOTE // 2):  # the same ini content from now on
        result = asyncio.run(warm.run(_probe(make_request, env)))
        assert not result.outcome.artifact_data["from_zygote"]
        assert warm.server.process is not None
        assert _children(warm.server.process.pid) == []
    # Each run that went cold for it, and the kind given up on, were told (notices.py).
    reasons = [notice.reason for notice in told]
    assert reasons.count("zygote-misfit") >= MAX_MISFITS
    assert reasons.count("zygote-given-up") == 1
    misfit = next(notice for notice in told if notice.reason == "zygote-misfit")
    assert misfit.detail.endswith("ansible.cfg changed")


def _children(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()


@pytest.mark.ansible_core
@pytest.mark.skipif(CORE != (2, 18), reason="ANSIBLE_COLLECTIONS_PATHS warns on 2.18 only")
def test_a_configuration_that_warns_when_imported_gets_no_zygote_and_each_run_warns(
    warm: WarmRunner, make_request: MakeRequest, tmp_path: Path
) -> None:
    env = {
        **_config(tmp_path / "ansible.cfg", "roles_a"),
        "ANSIBLE_COLLECTIONS_PATHS": str(tmp_path),  # deprecated: a warning at import
    }
    told: list[WarmNotice] = []
    warm.on_notice = told.append
    for _ in range(RUNS_TO_A_ZYGOTE // 2):
        result = asyncio.run(warm.run(_probe(make_request, env)))
        assert result.ok, result.outcome.failures
        assert not result.outcome.artifact_data["from_zygote"]
        assert "ANSIBLE_COLLECTIONS_PATHS option" in result.stdout_path.read_text()
    told += warm.server.notices()  # a zygote that refused after the last run
    assert "zygote-refused" in [notice.reason for notice in told]
