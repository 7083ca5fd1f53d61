"""What the warm runner must keep of a cold run (isolation, per-run settings) and how it recovers
(a run's process killed, the fork server killed or worn out). Tests that hold for both runners
take the parametrised `runner` fixture."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ansible_operator.procfs import fields_after_name
from ansible_operator.runner import ColdRunner, RunResult
from ansible_operator.runner.warm import patches
from ansible_operator.runner.warm.client import ForkServer, WarmRunner

from .runs import DATA, PLAYBOOKS, ROLES, TAG_ENV, MakeRequest, tagged_processes


def run(runner: ColdRunner, request: Any) -> RunResult:
    return asyncio.run(runner.run(request))


async def _started_to_sleep(runner: ColdRunner, request: Any, tag: str) -> asyncio.Task[RunResult]:
    """The run of `request` (the sleeper role), once its `sleep 600` task is running."""
    task = asyncio.create_task(runner.run(request))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 120
    while not any(proc.cmdline == "sleep 600" for proc in tagged_processes(tag)):
        assert not task.done(), "the run ended before its sleep started"
        assert loop.time() < deadline, "the sleep task never started"
        await asyncio.sleep(0.05)
    return task


@pytest.mark.ansible_core
def test_nothing_a_role_leaves_behind_reaches_the_next_task_or_run(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    seen = []
    for _ in range(2):
        result = run(runner, make_request(role=str(ROLES / "leaker"), skip_facts=True))
        assert result.ok, result.outcome.failures
        seen.append(result.outcome.artifact_data)
    assert seen[0] == seen[1]  # the second run saw exactly what the first did
    first, second = seen[0]["first"], seen[0]["second"]
    warm = isinstance(runner, WarmRunner) and not runner.cold
    for module_run in (first, second):
        assert module_run["cache_size"] == 1  # the module_utils cache started empty
        assert module_run["leaked_env"] == ""
        assert module_run["cwd"] != "/"
        # In-process: a fork of Ansible's worker, not a new interpreter (the builtin `local`).
        assert module_run["in_process"] is (warm and patches.tested_here("module-exec"))
        assert module_run["controller_loaded"] is module_run["in_process"]
    assert (first["task_env"], second["task_env"]) == ("set", "")
    # What the Kubernetes client read from KUBECONFIG when the fork server imported it is read
    # again for the run, and for a task's environment.
    assert (first["default_kubeconfig"], second["default_kubeconfig"]) == (
        "/set/by/task",
        str(make_request(role=str(ROLES / "leaker")).kubeconfig),
    )
    assert seen[0]["filter"] == {"calls": 1, "leaked_env": "", "cwd_is_root": False}


@pytest.mark.ansible_core
def test_each_run_reads_its_own_ansible_settings(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    # ANSIBLE_ROLES_PATH is read when Ansible is imported: a warm run must import it anew.
    for which in ("a", "b", "a"):
        request = make_request(
            playbook=str(PLAYBOOKS / "include_probe.yml"),
            extra_env={"ANSIBLE_ROLES_PATH": str(DATA / f"roles_{which}")},
        )
        result = run(runner, request)
        assert result.ok, result.outcome.failures
        assert result.outcome.artifact_data == {"roles_path_seen": which}


@pytest.fixture
def short_tmpdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """TMPDIR for the processes a runner starts from here on: a new directory, short enough for
    2.21's RPC socket (pytest's own can be too long)."""
    path = Path(tempfile.mkdtemp(prefix="tmpdir-", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(path))
    yield path
    shutil.rmtree(path)


@pytest.mark.ansible_core
def test_a_run_leaves_no_local_temporary_directory_behind(
    runner: ColdRunner, make_request: MakeRequest, tmp_path: Path, short_tmpdir: Path
) -> None:
    # Ansible makes its local temporary directory when imported and removes it at exit; 2.21's
    # ansible-playbook makes a directory for its RPC server's socket under TMPDIR
    # (multiprocessing's pymp-*), removed by multiprocessing's own exit hook.
    local = tmp_path / "local-tmp"
    for role in ("leaker", "greeter"):  # a module task (packaged there), and a debug task
        request = make_request(
            role=str(ROLES / role), skip_facts=True, extra_env={"ANSIBLE_LOCAL_TEMP": str(local)}
        )
        result = run(runner, request)
        assert result.ok, result.outcome.failures
    assert local.is_dir()  # it was used
    if isinstance(runner, WarmRunner):  # a zygote keeps its own until it exits with the server
        server = runner.server.process
        assert server is not None
        runner.close()
        assert server.wait(60) == 0
    assert list(local.iterdir()) == []
    assert list(short_tmpdir.iterdir()) == []


@pytest.mark.ansible_core
def test_a_run_whose_process_is_killed_fails_saying_so_and_the_next_run_works(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    request = make_request(role=str(ROLES / "sleeper"), skip_facts=True)
    tag = request.extra_env[TAG_ENV]

    async def main() -> RunResult:
        task = await _started_to_sleep(runner, request, tag)
        [top] = [p for p in tagged_processes(tag) if "ansible-runner run" in p.cmdline]
        os.kill(top.pid, signal.SIGKILL)  # what the out-of-memory killer does
        return await task

    result = asyncio.run(main())
    assert not result.ok and result.rc == -signal.SIGKILL
    assert "killed by SIGKILL" in result.outcome.failures[-1].message
    assert tagged_processes(tag) == []  # the rest of the run was stopped too
    after = run(runner, make_request(playbook=str(PLAYBOOKS / "one_debug.yml")))
    assert after.ok, after.outcome.failures


@pytest.mark.ansible_core
def test_a_run_whose_ansible_worker_is_killed_fails_saying_so_and_the_next_run_works(
    runner: ColdRunner, make_request: MakeRequest
) -> None:
    """Ansible finds a worker that died without a result; a warm run, which waits for results
    instead of polling, still looks for one every resultwait.WORKER_CHECK seconds."""
    request = make_request(role=str(ROLES / "sleeper"), skip_facts=True)
    tag = request.extra_env[TAG_ENV]

    async def main() -> RunResult:
        task = await _started_to_sleep(runner, request, tag)
        _, [worker] = _playbook_and_workers(tag)
        os.kill(worker, signal.SIGKILL)  # what the out-of-memory killer does
        return await asyncio.wait_for(task, 300)

    result = asyncio.run(main())
    assert not result.ok
    # Upstream leaves the worker's module and its `sleep` running; here the run's end stops them.
    assert tagged_processes(tag) == []
    assert "A worker was found in a dead state" in result.outcome.failures[-1].message
    after = run(runner, make_request(playbook=str(PLAYBOOKS / "one_debug.yml")))
    assert after.ok, after.outcome.failures


@pytest.mark.any_core(reason="the fork server's supervision is the operator's")
def test_a_killed_fork_server_is_replaced(warm: WarmRunner, make_request: MakeRequest) -> None:
    assert run(warm, make_request(playbook=str(PLAYBOOKS / "one_debug.yml"))).ok
    assert warm.server.process is not None
    warm.server.process.kill()
    warm.server.process.wait()
    result = run(warm, make_request(playbook=str(PLAYBOOKS / "one_debug.yml")))
    assert result.ok, result.outcome.failures
    assert warm.server.started == 2


@pytest.mark.any_core(reason="the fork server's supervision is the operator's")
def test_a_run_whose_fork_server_dies_fails_saying_so(
    warm: WarmRunner, make_request: MakeRequest
) -> None:
    request = make_request(role=str(ROLES / "sleeper"), skip_facts=True)
    tag = request.extra_env[TAG_ENV]

    async def main() -> RunResult:
        task = await _started_to_sleep(warm, request, tag)
        assert warm.server.process is not None
        warm.server.process.kill()
        return await task

    result = asyncio.run(main())
    assert not result.ok
    assert "fork server died" in result.outcome.failures[-1].message
    assert tagged_processes(tag) == []
    assert run(warm, make_request(playbook=str(PLAYBOOKS / "one_debug.yml"))).ok


@pytest.mark.any_core(reason="the fork server's recycling is the operator's")
def test_the_fork_server_is_recycled_after_its_runs_and_finishes_them(
    make_request: MakeRequest, tmp_path: Path
) -> None:
    warm = WarmRunner(server=ForkServer(max_runs=1))

    async def main() -> list[RunResult]:
        # The second run replaces the server while the first still runs on the old one.
        first = asyncio.create_task(
            warm.run(make_request(playbook=str(PLAYBOOKS / "sleep_briefly.yml")))
        )
        while warm.server.runs == 0:
            await asyncio.sleep(0.05)
        second = make_request(
            playbook=str(PLAYBOOKS / "one_debug.yml"), private_data_dir=tmp_path / "other"
        )
        return [await warm.run(second), await first]

    try:
        results = asyncio.run(main())
        assert [r.ok for r in results] == [True, True], [r.outcome.failures for r in results]
        assert (warm.server.started, warm.server.runs) == (2, 1)
    finally:
        warm.server.kill()


@pytest.mark.any_core(reason="the fork server's supervision is the operator's")
def test_a_hung_fork_server_is_replaced(make_request: MakeRequest) -> None:
    warm = WarmRunner(server=ForkServer(reply_timeout=30.0))
    try:
        assert run(warm, make_request(playbook=str(PLAYBOOKS / "one_debug.yml"))).ok
        assert warm.server.process is not None
        os.kill(warm.server.process.pid, signal.SIGSTOP)  # alive, answering nothing
        result = run(warm, make_request(playbook=str(PLAYBOOKS / "one_debug.yml")))
        assert result.ok, result.outcome.failures
        assert warm.server.started == 2
    finally:
        warm.server.kill()


def _write_versioned_role(role: Path, module_version: str, utils_version: str) -> None:
    """A role whose `library/` module reports its own version and its module_utils' version."""
    (role / "tasks").mkdir(parents=True, exist_ok=True)
    (role / "library").mkdir(exist_ok=True)
    (role / "module_utils").mkdir(exist_ok=True)
    (role / "tasks" / "main.yml").write_text(
        "- versioned:\n  register: seen\n"
        "- set_stats:\n    data:\n      versions: '{{ seen.versions }}'\n"
    )
    (role / "library" / "versioned.py").write_text(
        "from ansible.module_utils.basic import AnsibleModule\n"
        "from ansible.module_utils.versioned_utils import UTILS_VERSION\n"
        "module = AnsibleModule(argument_spec={})\n"
        f"module.exit_json(versions=['{module_version}', UTILS_VERSION])\n"
    )
    (role / "module_utils" / "versioned_utils.py").write_text(
        f"UTILS_VERSION = '{utils_version}'\n"
    )


@pytest.mark.ansible_core
def test_an_edited_role_module_or_module_util_is_packaged_anew(
    warm: WarmRunner, make_request: MakeRequest, tmp_path: Path
) -> None:
    role = tmp_path / "versioned"

    def versions_seen() -> list[str]:
        result = run(warm, make_request(role=str(role), skip_facts=True))
        assert result.ok, result.outcome.failures
        return list(result.outcome.artifact_data["versions"])

    _write_versioned_role(role, "m1", "u1")
    assert versions_seen() == ["m1", "u1"]
    _write_versioned_role(role, "m2", "u1")
    assert versions_seen() == ["m2", "u1"]
    _write_versioned_role(role, "m2", "u2")
    assert versions_seen() == ["m2", "u2"]


def _kept(warm: WarmRunner, kind: str) -> dict[str, int]:
    """What the fork server keeps of `kind` (a cachedir subdirectory): name → inode."""
    assert warm.server.kept_directory is not None
    entries = (Path(warm.server.kept_directory) / kind).iterdir()
    return {e.name: e.stat().st_ino for e in entries if not e.name.startswith(".")}


@pytest.mark.ansible_core
@pytest.mark.skipif(
    not patches.tested_here("module-packages"), reason="not tested here (patches.PATCHES)"
)
def test_an_unchanged_module_is_taken_from_the_kept_packages(
    warm: WarmRunner, make_request: MakeRequest
) -> None:
    request = make_request(role=str(ROLES / "leaker"), skip_facts=True)
    assert run(warm, request).ok
    first = _kept(warm, "modules")
    assert len(first) == 1  # the role's one module
    assert run(warm, make_request(role=str(ROLES / "leaker"), skip_facts=True)).ok
    assert _kept(warm, "modules") == first  # read, not packaged and written again
    # Another CR's run: its own input dir (and collections path in it), the same packages.
    other = Path(request.private_data_dir).with_name("thing-2")
    assert run(warm, make_request(role=str(ROLES / "leaker"), skip_facts=True,
                                  private_data_dir=other)).ok  # fmt: skip
    assert _kept(warm, "modules") == first


@pytest.mark.ansible_core
@pytest.mark.skipif(
    not patches.tested_here("plugin-docs"), reason="not tested here (patches.PATCHES)"
)
def test_plugin_documentation_is_taken_from_the_kept_parses(
    warm: WarmRunner, make_request: MakeRequest
) -> None:
    assert run(warm, make_request(role=str(ROLES / "leaker"), skip_facts=True)).ok
    docs = _kept(warm, "plugin-docs")
    assert docs, "the plugins' documentation is kept (plugin_docs.py)"
    assert run(warm, make_request(role=str(ROLES / "leaker"), skip_facts=True)).ok
    assert _kept(warm, "plugin-docs") == docs  # read, not parsed and written again


@pytest.mark.ansible_core
def test_the_kept_packages_go_with_their_fork_server(
    warm: WarmRunner, make_request: MakeRequest
) -> None:
    assert run(warm, make_request(role=str(ROLES / "leaker"), skip_facts=True)).ok
    killed = warm.server.kept_directory
    assert killed is not None and Path(killed).is_dir()
    warm.server.kill()
    assert not Path(killed).exists()
    assert run(warm, make_request(role=str(ROLES / "leaker"), skip_facts=True)).ok
    died = warm.server.kept_directory
    assert warm.server.process is not None and died is not None and died != killed
    warm.server.process.kill()  # from outside: replaced at the next run
    warm.server.process.wait()
    assert run(warm, make_request(role=str(ROLES / "leaker"), skip_facts=True)).ok
    assert not Path(died).exists()
    let_go = warm.server.kept_directory
    assert let_go is not None and let_go != died
    process = warm.server.process
    assert process is not None
    warm.server.close()
    process.wait(timeout=60)
    assert not Path(let_go).exists()


@pytest.mark.ansible_core
@pytest.mark.skipif(
    not patches.tested_here("template-cache"), reason="not tested here (patches.PATCHES)"
)
def test_templates_are_kept_across_runs_and_a_folded_filter_is_drawn_anew(
    warm: WarmRunner, make_request: MakeRequest
) -> None:
    def messages() -> dict[str, str]:
        events: list[dict[str, Any]] = []
        request = make_request(playbook=str(PLAYBOOKS / "templates_probe.yml"))
        assert asyncio.run(warm.run(request, events.append)).ok
        return {
            e["event_data"]["task"]: e["event_data"]["res"]["msg"]
            for e in events
            if e.get("event") == "runner_on_ok"
        }

    def kept() -> dict[str, int]:
        assert warm.server.kept_directory is not None
        entries = (Path(warm.server.kept_directory) / "templates").iterdir()
        return {e.name: e.stat().st_ino for e in entries if not e.name.startswith(".")}

    first = messages()
    templates = kept()
    assert templates, "the run's templates are kept"
    second = messages()
    assert second["Plain"] == first["Plain"] == "hello world"
    assert second["Folded"] != first["Folded"]  # 1 in 10^9 to fail by chance
    assert kept() == templates  # read, not compiled and written again


@pytest.mark.ansible_core
def test_the_playbook_sleeps_while_its_task_runs_instead_of_polling(
    warm: WarmRunner, make_request: MakeRequest
) -> None:
    """Ansible polls for results every millisecond; a warm run wakes when one arrives, and every
    resultwait.WORKER_CHECK seconds to look for a dead worker."""
    request = make_request(playbook=str(PLAYBOOKS / "sleep_briefly.yml"))
    tag = request.extra_env[TAG_ENV]

    async def wakeups_in_one_second() -> int:
        task = asyncio.create_task(warm.run(request))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 120
        while not any(proc.cmdline == "sleep 3" for proc in tagged_processes(tag)):
            assert not task.done() and loop.time() < deadline, "the sleep task never started"
            await asyncio.sleep(0.05)
        parent, _ = _playbook_and_workers(tag)
        before = _voluntary_switches(parent)
        await asyncio.sleep(1.0)
        woken = _voluntary_switches(parent) - before
        assert (await task).ok
        return woken

    # Polling wakes it about a thousand times a second; results come once, checks 20 times.
    assert asyncio.run(wakeups_in_one_second()) < 200


def _playbook_and_workers(tag: str) -> tuple[int, list[int]]:
    """The run's ansible-playbook process and its workers (forks of it), by pid."""
    playbooks = {
        p.pid for p in tagged_processes(tag) if "ansible-playbook" in p.cmdline.split(" -")[0]
    }
    [playbook] = [pid for pid in playbooks if _parent(pid) not in playbooks]
    return playbook, [pid for pid in playbooks if pid != playbook]


def _parent(pid: int) -> int:
    return int(fields_after_name(Path(f"/proc/{pid}/stat").read_text())[1])


def _voluntary_switches(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    raise AssertionError(f"no context switches in /proc/{pid}/status")


@pytest.mark.ansible_core
def test_an_untested_release_turns_its_patches_off_and_runs_still_work(
    make_request: MakeRequest,
) -> None:
    """A load-bearing patch off (an ansible-runner never tested): runs are cold. A core never
    tested: runs are forked, but ansible-playbook and its modules are new interpreters."""
    cold = WarmRunner(installed={**patches.installed(), patches.RUNNER: "9.9.9"})
    result = run(cold, make_request(role=str(ROLES / "leaker"), skip_facts=True))
    assert result.ok, result.outcome.failures
    assert result.outcome.artifact_data["first"]["in_process"] is False
    assert cold.server.started == 0
    warm = WarmRunner(installed={**patches.installed(), patches.CORE: "9.9.9"})
    try:
        result = run(warm, make_request(role=str(ROLES / "leaker"), skip_facts=True))
        assert result.ok, result.outcome.failures
        assert result.outcome.artifact_data["first"]["in_process"] is False
        assert result.outcome.artifact_data["first"]["controller_loaded"] is False
        assert warm.server.started == 1
    finally:
        warm.server.kill()


@pytest.mark.ansible_core
def test_only_an_async_job_outlives_its_run(runner: ColdRunner, make_request: MakeRequest) -> None:
    request = make_request(role=str(ROLES / "async_sleeper"), skip_facts=True)
    tag = request.extra_env[TAG_ENV]
    try:
        assert run(runner, request).ok
        # The async job (under its async_wrapper) may not have started its command yet when
        # the run ends: wait for it (it is spared, so it comes), then look at what is left.
        deadline = time.monotonic() + 60
        while "sleep 601" not in {p.cmdline for p in tagged_processes(tag)}:
            assert time.monotonic() < deadline, "the async job's sleep 601 never ran"
            time.sleep(0.1)
        left = {proc.cmdline for proc in tagged_processes(tag)}
        assert "sleep 602" not in left  # a shell's `&`: the task did not ask Ansible for it
    finally:
        for leftover in tagged_processes(tag):
            with contextlib.suppress(ProcessLookupError):
                os.kill(leftover.pid, signal.SIGKILL)
