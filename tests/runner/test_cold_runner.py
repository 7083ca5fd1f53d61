"""ColdRunner against real ansible-runner runs of small playbooks and roles (tests/runner/data)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_operator.runner import AnsibleRunnerNotFound, ColdRunner, RunResult

from .runs import (
    DATA,
    PLAYBOOKS,
    ROLES,
    TAG_ENV,
    MakeRequest,
    Proc,
    live_group_members,
    tagged_processes,
)


def run(runner: ColdRunner, request: Any, events: list[dict[str, Any]] | None = None) -> RunResult:
    return asyncio.run(runner.run(request, on_event=events.append if events is not None else None))


def artifact_dirs(request: Any) -> list[str]:
    artifacts = Path(request.private_data_dir) / "artifacts"
    return sorted(p.name for p in artifacts.iterdir() if p.is_dir() and not p.is_symlink())


@pytest.mark.ansible_core
def test_success_reports_counts_over_all_tasks_and_sees_its_inputs(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    request = make_request(
        playbook=str(PLAYBOOKS / "success.yml"),
        extravars={"greeting_target": "tests"},
        extra_env={"RUNNER_TEST_EXTRA": "extra-value"},
    )
    events: list[dict[str, Any]] = []
    result = run(runner, request, events)

    assert result.ok, result.outcome.failures
    assert result.rc == 0 and not result.timed_out
    outcome = result.outcome
    assert outcome.stats_received and outcome.failures == []
    assert (outcome.ansible_result.ok, outcome.ansible_result.changed) == (3, 1)
    assert (outcome.ansible_result.skipped, outcome.ansible_result.failures) == (1, 0)
    assert outcome.ansible_result.completion
    assert outcome.stats["localhost"]["ok"] == 3
    assert outcome.artifact_data == {
        "greeting_target": "tests",
        "kubeconfig_env": request.kubeconfig,
        "extra_env": "extra-value",
        "from_cmdline": "absent",
    }
    assert "localhost" in outcome.stats_stdout and "ok=3" in outcome.stats_stdout
    # Every event file was delivered once, in counter order, ending with the stats.
    counters = [event["counter"] for event in events]
    files = list((result.artifact_dir / "job_events").glob("*.json"))
    assert counters == list(range(1, len(files) + 1))
    assert events[-1]["event"] == "playbook_on_stats"
    assert result.stdout_path.is_file() and result.runner_output_path.is_file()
    assert result.duration > 0


@pytest.mark.ansible_core
def test_failed_task_gives_its_message_and_location(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    result = run(runner, make_request(playbook=str(PLAYBOOKS / "failure.yml")))

    assert not result.ok and result.rc != 0
    [failure] = result.outcome.failures
    assert failure.task == "fail on purpose"
    assert failure.message == "the widget is broken"
    assert failure.host == "localhost"
    assert failure.task_path.endswith("failure.yml:4")
    assert result.outcome.ansible_result.failures == 1


@pytest.mark.ansible_core
def test_ignored_failure_is_not_a_failure(runner: ColdRunner, make_request: MakeRequest) -> None:
    result = run(runner, make_request(playbook=str(PLAYBOOKS / "ignored.yml")))

    assert result.ok, result.outcome.failures
    assert result.outcome.stats["localhost"]["ignored"] == 1


@pytest.mark.ansible_core
def test_rescued_failure_is_not_a_failure(runner: ColdRunner, make_request: MakeRequest) -> None:
    events: list[dict[str, Any]] = []
    result = run(runner, make_request(playbook=str(PLAYBOOKS / "rescued.yml")), events)

    assert any(e["event"] == "runner_on_failed" for e in events)  # the task did fail
    assert result.ok, result.outcome.failures
    assert result.outcome.stats["localhost"]["rescued"] == 1
    assert result.outcome.ansible_result.failures == 0


@pytest.mark.ansible_core
def test_real_failure_after_a_rescued_one_is_reported_alone(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    result = run(runner, make_request(playbook=str(PLAYBOOKS / "rescued_then_failed.yml")))

    assert not result.ok
    assert result.outcome.failure_messages == ["this one is real"]


@pytest.mark.ansible_core
def test_unreachable_host_is_a_failure(runner: ColdRunner, make_request: MakeRequest) -> None:
    inventory = DATA / "inventory" / "with_dead_host"
    request = make_request(
        playbook=str(PLAYBOOKS / "unreachable.yml"),
        extra_env={"ANSIBLE_INVENTORY": str(inventory)},
    )
    result = run(runner, request)

    copied = Path(request.private_data_dir) / "inventory" / "hosts"
    assert copied.read_text() == inventory.read_text()
    assert not result.ok
    [failure] = result.outcome.failures
    assert failure.host == "deadhost" and failure.task == "ping everyone"
    assert result.outcome.ansible_result.failures == 1  # dark counts as a failure
    assert result.outcome.ansible_result.ok == 1  # localhost, counted although not alone


@pytest.mark.ansible_core
@pytest.mark.parametrize(
    ("playbook", "seconds"),
    [("requeue_fqcn.yml", 90.0), ("requeue_bare.yml", 45.0)],
)
def test_requeue_after_sets_the_delay_and_later_tasks_still_run(
    runner: ColdRunner, make_request: MakeRequest, playbook: str, seconds: float
) -> None:
    result = run(runner, make_request(playbook=str(PLAYBOOKS / playbook)))

    assert result.ok, result.outcome.failures
    assert result.outcome.requeue_after == seconds
    assert result.outcome.artifact_data == {"after_requeue": True}


@pytest.mark.ansible_core
def test_requeue_after_by_short_name_in_a_role_run(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    result = run(runner, make_request(role=str(ROLES / "requeuer"), skip_facts=True))

    assert result.ok, result.outcome.failures
    assert result.outcome.requeue_after == 7200.0
    assert result.outcome.artifact_data == {"after_requeue": True}


@pytest.mark.ansible_core
def test_requeue_after_rejects_an_invalid_time(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    result = run(runner, make_request(playbook=str(PLAYBOOKS / "requeue_invalid.yml")))

    assert not result.ok
    assert result.outcome.requeue_after is None
    [failure] = result.outcome.failures
    assert failure.task == "bad time" and "invalid time input" in failure.message


@pytest.mark.ansible_core
def test_missing_stats_event_is_a_failure_with_the_output_tail(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    result = run(runner, make_request(playbook=str(PLAYBOOKS / "syntax_error.yml")))

    assert not result.ok and not result.outcome.stats_received
    [failure] = result.outcome.failures
    first_line, _, tail = failure.message.partition("\n")
    assert first_line == "did not receive playbook_on_stats event"
    # Ansible's words differ between ansible-core 2.18 and 2.19; both name the file.
    assert "YAML" in tail and "syntax_error.yml" in tail


def _watch_run(tag: str, seen: dict[int, Proc]) -> asyncio.Task[None]:
    async def watch() -> None:
        while True:
            # The latest view of each process: a fork shows its parent's command line until it
            # execs or (warm runs) renames itself.
            for proc in tagged_processes(tag):
                # A process on its way out reads an empty command line: keep the last it had.
                if proc.cmdline or proc.pid not in seen:
                    seen[proc.pid] = proc
            await asyncio.sleep(0.05)

    return asyncio.create_task(watch())


def _assert_all_gone(tag: str, seen: dict[int, Proc]) -> None:
    assert tagged_processes(tag) == []
    for proc in seen.values():
        assert live_group_members(proc.pgid) == [], f"process group of {proc} survived"


@pytest.mark.any_core(reason="the deadline and the process-tree kill are the runner's")
def test_timeout_kills_the_whole_process_tree(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    # The sleep must have started before the deadline for this test to mean anything; on a slow
    # machine, try again with more time rather than pass vacuously.
    for timeout in (5.0, 20.0, 60.0):
        request = make_request(role=str(ROLES / "sleeper"), skip_facts=True, timeout=timeout)
        tag = request.extra_env[TAG_ENV]
        seen: dict[int, Proc] = {}

        async def main(request: Any = request, tag: str = tag, seen: dict = seen) -> RunResult:
            watcher = _watch_run(tag, seen)
            try:
                return await runner.run(request)
            finally:
                watcher.cancel()

        result = asyncio.run(main())
        sleeps = [proc for proc in seen.values() if proc.cmdline == "sleep 600"]
        if sleeps:
            break
    else:
        pytest.fail("the sleep task never started before the timeout")

    assert result.timed_out and not result.ok
    assert result.outcome.failures[-1].message == (
        f"Ansible run timed out after {timeout:g}s and was stopped"
    )
    [top] = [proc for proc in seen.values() if "ansible-runner" in proc.cmdline]
    assert sleeps[0].pgid != top.pgid  # why killing ansible-runner's group alone is not enough
    _assert_all_gone(tag, seen)
    assert (Path(request.private_data_dir) / "artifacts" / "latest").resolve() == (
        result.artifact_dir.resolve()
    )


@pytest.mark.any_core(reason="the process-tree kill is the runner's")
def test_cancellation_kills_the_whole_process_tree(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    request = make_request(role=str(ROLES / "sleeper"), skip_facts=True)
    tag = request.extra_env[TAG_ENV]

    async def main() -> dict[int, Proc]:
        task = asyncio.create_task(runner.run(request))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 120
        seen: dict[int, Proc] = {}
        while not any(proc.cmdline == "sleep 600" for proc in seen.values()):
            assert not task.done(), "the run ended before its sleep started"
            assert loop.time() < deadline, "the sleep task never started"
            seen.update((proc.pid, proc) for proc in tagged_processes(tag))
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen

    seen = asyncio.run(main())
    _assert_all_gone(tag, seen)


@pytest.mark.any_core(reason="the run's task handling is the runner's")
def test_the_run_survives_the_cancellation_of_the_loops_other_tasks(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    # Any other task of the loop cancelled (as a watch library once did to every task created
    # since it started): the run must neither pass for ended nor end early.
    request = make_request(playbook=str(PLAYBOOKS / "sleep_briefly.yml"))
    tag = request.extra_env[TAG_ENV]

    async def main() -> RunResult:
        task = asyncio.create_task(runner.run(request))
        while not any(proc.cmdline == "sleep 3" for proc in tagged_processes(tag)):
            assert not task.done(), "the run ended before its sleep started"
            await asyncio.sleep(0.05)
        for other in asyncio.all_tasks():
            if other not in (task, asyncio.current_task()):
                other.cancel()
        return await task

    result = asyncio.run(main())
    assert result.ok, result.outcome.failures
    assert result.rc == 0 and result.outcome.stats_received


@pytest.mark.any_core(reason="the input dir's env files are written by the runner")
def test_env_files_are_rewritten_on_every_run(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    playbook = str(PLAYBOOKS / "success.yml")
    first = run(
        runner,
        make_request(
            playbook=playbook,
            ansible_args="'-e from_cmdline=yes'",
            extravars={"greeting_target": "first"},
        ),
    )
    env_dir = first.artifact_dir.parent.parent / "env"
    assert (env_dir / "cmdline").read_text() == "-e from_cmdline=yes"
    assert first.outcome.artifact_data["from_cmdline"] == "yes"

    second = run(runner, make_request(playbook=playbook, extravars={}))

    assert not (env_dir / "cmdline").exists()
    assert second.outcome.artifact_data["from_cmdline"] == "absent"
    assert second.outcome.artifact_data["greeting_target"] == "unset"
    assert yaml.safe_load((env_dir / "extravars").read_text()) == {}


@pytest.mark.any_core(reason="artifact rotation is ansible-runner's and ours")
def test_rotation_keeps_n_runs_and_latest_points_at_the_last(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    playbook = str(PLAYBOOKS / "one_debug.yml")
    idents = []
    for _ in range(4):
        request = make_request(playbook=playbook, rotate_artifacts=2)
        result = run(runner, request)
        assert result.ok, result.outcome.failures
        idents.append(request.ident)

    assert artifact_dirs(request) == sorted(idents[-2:])
    latest = Path(request.private_data_dir) / "artifacts" / "latest"
    assert latest.is_symlink() and latest.resolve() == result.artifact_dir.resolve()


@pytest.mark.any_core(reason="artifact rotation is ansible-runner's and ours")
def test_rotation_with_one_kept_run_survives_the_latest_link(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    playbook = str(PLAYBOOKS / "one_debug.yml")
    for _ in range(2):
        request = make_request(playbook=playbook, rotate_artifacts=1)
        result = run(runner, request)
        assert result.ok, result.outcome.failures

    assert artifact_dirs(request) == [request.ident]


@pytest.mark.ansible_core
@pytest.mark.parametrize(
    ("skip_facts", "gathering", "gathered"),
    [(True, "implicit", False), (None, "explicit", False), (None, "implicit", True)],
)
def test_role_mode_runs_the_role_and_honours_fact_skipping(
    runner: ColdRunner,
    make_request: MakeRequest,
    skip_facts: bool | None,
    gathering: str,
    gathered: bool,
) -> None:
    request = make_request(
        role=str(ROLES / "greeter"),
        skip_facts=skip_facts,
        extravars={"role_var": "from extravars"},
        extra_env={"ANSIBLE_GATHERING": gathering},
    )
    result = run(runner, request)

    assert result.ok, result.outcome.failures
    assert result.outcome.artifact_data == {
        "facts_gathered": gathered,
        "role_var": "from extravars",
    }


@pytest.mark.any_core(reason="the command line is the runner's")
def test_verbosity_is_passed_to_ansible(runner: ColdRunner, make_request: MakeRequest) -> None:
    result = run(runner, make_request(playbook=str(PLAYBOOKS / "one_debug.yml"), verbosity=3))

    assert result.ok, result.outcome.failures
    command = json.loads((result.artifact_dir / "command").read_text())["command"]
    assert "-vvv" in command


@pytest.mark.any_core(reason="no Ansible starts: the executable is missing")
def test_missing_ansible_runner_is_a_clear_error(make_request: MakeRequest, tmp_path: Path) -> None:
    runner = ColdRunner(executable=str(tmp_path / "no-such-ansible-runner"))
    request = make_request(playbook=str(PLAYBOOKS / "one_debug.yml"))

    with pytest.raises(AnsibleRunnerNotFound, match="no-such-ansible-runner"):
        asyncio.run(runner.run(request))
