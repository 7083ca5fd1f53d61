"""runner.process without running Ansible: command line, environment, event file reading."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from ansible_operator.runner import process
from ansible_operator.runner.process import (
    _EventReader,
    _tail,
    build_command,
    find_ansible_runner,
    run_environment,
)
from ansible_operator.runner.proctree import MARKER_ENV
from ansible_operator.runner.types import AnsibleRunnerNotFound, RunRequest


def request(**kwargs: object) -> RunRequest:
    fields: dict[str, object] = {
        "ident": "77",
        "private_data_dir": Path("/pdd"),
        "extravars": {},
        "kubeconfig": "/kc",
    }
    fields.update(kwargs)
    return RunRequest(**fields)  # type: ignore[arg-type]


def test_playbook_command_is_upstreams() -> None:
    command = build_command("/bin/ar", request(playbook="/p/site.yml", rotate_artifacts=5), {})
    assert command == [
        "/bin/ar",
        "run",
        "/pdd",
        "--rotate-artifacts",
        "5",
        "-p",
        "/p/site.yml",
        "-i",
        "77",
    ]


def test_relative_playbook_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    command = build_command("ar", request(playbook="playbooks/x.yml"), {})
    assert command[command.index("-p") + 1] == str(tmp_path / "playbooks" / "x.yml")


@pytest.mark.parametrize(
    ("skip_facts", "env", "skipped"),
    [
        (None, {}, False),
        (None, {"ANSIBLE_GATHERING": "explicit"}, True),
        (None, {"ANSIBLE_GATHERING": "smart"}, False),
        (True, {}, True),
        (False, {"ANSIBLE_GATHERING": "explicit"}, False),
    ],
)
def test_role_command_is_upstreams(skip_facts: bool | None, env: dict, skipped: bool) -> None:
    command = build_command(
        "ar", request(role="/opt/ansible/roles/memcached/", verbosity=2, skip_facts=skip_facts), env
    )
    expected = [
        "ar",
        "run",
        "/pdd",
        "--rotate-artifacts",
        "20",
        "--role",
        "memcached",
        "--roles-path",
        "/opt/ansible/roles/",
        "--hosts",
        "localhost",
        "-i",
        "77",
        "-vv",
    ]
    assert command == expected + (["--role-skip-facts"] if skipped else [])


@pytest.mark.parametrize(("verbosity", "flag"), [(0, None), (1, "-v"), (7, "-vvvvvvv")])
def test_verbosity_flag(verbosity: int, flag: str | None) -> None:
    command = build_command("ar", request(playbook="/p.yml", verbosity=verbosity), {})
    assert command[-1] == (flag or "77")


def test_request_needs_exactly_one_of_playbook_and_role() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        request()
    with pytest.raises(ValueError, match="exactly one"):
        request(playbook="p", role="r")
    with pytest.raises(ValueError, match="timeout"):
        request(playbook="p", timeout=0)


def test_environment_adds_kubeconfig_extras_and_marker(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("ansible-runner", "ansible-playbook"):
        (bindir / name).write_text("#!/bin/sh\n")
        (bindir / name).chmod(0o755)
    base = {"PATH": "/usr/bin", "HOME": "/h", "KUBECONFIG": "/old"}
    env = run_environment(
        str(bindir / "ansible-runner"),
        request(playbook="p", extra_env={"EXTRA": "1", "HOME": "/other"}),
        "m-1",
        base,
    )
    assert env["KUBECONFIG"] == env["K8S_AUTH_KUBECONFIG"] == "/kc"
    assert env["EXTRA"] == "1" and env["HOME"] == "/other"
    assert env[MARKER_ENV] == "m-1"
    assert env["PATH"] == f"{bindir}:/usr/bin"  # ansible-playbook from beside ansible-runner
    assert env["ANSIBLE_NOCOLOR"] == "1"
    assert base == {"PATH": "/usr/bin", "HOME": "/h", "KUBECONFIG": "/old"}


def test_environment_leaves_out_the_in_cluster_variables() -> None:
    """The operator's Pod has them; a run's clients must not fall back to its ServiceAccount."""
    base = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443", "X": "1"}
    env = run_environment("/nowhere/ar", request(playbook="p"), "m", base)
    assert not {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"} & env.keys()
    assert env["X"] == "1" and env["KUBECONFIG"] == "/kc"


def test_environment_keeps_an_explicit_colour_choice() -> None:
    env = run_environment("/nowhere/ar", request(playbook="p"), "m", {"ANSIBLE_FORCE_COLOR": "1"})
    assert "ANSIBLE_NOCOLOR" not in env
    assert "PATH" not in env  # nothing beside /nowhere/ar to prefer


def write_event(directory: Path, counter: int, **extra: object) -> None:
    event = {"counter": counter, "event": "verbose", "uuid": f"u{counter}", **extra}
    (directory / f"{counter}-u{counter}.json").write_text(json.dumps(event))


def test_event_reader_delivers_each_event_once_in_order_without_gaps(tmp_path: Path) -> None:
    reader = _EventReader(tmp_path / "job_events")
    assert reader.read() == []  # not created yet
    events_dir = tmp_path / "job_events"
    events_dir.mkdir()
    write_event(events_dir, 1)
    write_event(events_dir, 3)
    (events_dir / "1234-5678-partial.json").write_text("{}")
    (events_dir / "2-u2.json.tmp").write_text("{")

    assert [e["counter"] for e in reader.read()] == [1]  # 3 waits for 2
    assert reader.read() == []
    write_event(events_dir, 2)
    write_event(events_dir, 10)
    assert [e["counter"] for e in reader.read()] == [2, 3]
    assert [e["counter"] for e in reader.read(final=True)] == [10]  # the end takes the rest
    assert reader.read(final=True) == []


def test_event_reader_skips_an_unreadable_event_only_at_the_end(tmp_path: Path) -> None:
    events_dir = tmp_path / "job_events"
    events_dir.mkdir()
    (events_dir / "1-u1.json").write_text("{not json")
    write_event(events_dir, 2)
    reader = _EventReader(events_dir)
    assert reader.read() == []
    assert [e["counter"] for e in reader.read(final=True)] == [2]


def test_tail_keeps_the_last_lines_of_a_large_file(tmp_path: Path) -> None:
    path = tmp_path / "stdout"
    path.write_text("".join(f"line {i}\n" for i in range(5000)))
    tail = _tail(path).splitlines()
    assert tail[-1] == "line 4999" and len(tail) == 20
    assert _tail(tmp_path / "missing") == ""


def test_find_ansible_runner_prefers_the_one_beside_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    beside = tmp_path / "venv" / "bin"
    beside.mkdir(parents=True)
    (beside / "ansible-runner").write_text("#!/bin/sh\n")
    (beside / "ansible-runner").chmod(stat.S_IRWXU)
    monkeypatch.setattr(sys, "executable", str(beside / "python"))
    assert find_ansible_runner() == str(beside / "ansible-runner")


def test_find_ansible_runner_reports_a_missing_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(AnsibleRunnerNotFound, match="ansible-runner not found"):
        find_ansible_runner()
    with pytest.raises(AnsibleRunnerNotFound):
        process.ColdRunner()
    assert os.environ["PATH"] == str(tmp_path)
