"""The operator launcher: its command line, environment and ports, and real processes started,
waited for and stopped (a stand-in for the operator where the real one needs a cluster)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from ansible_operator import procfs
from ansible_operator.dev import launcher
from ansible_operator.devcluster import processes
from ansible_operator.runner import versions


def config(tmp_path: Path, **kwargs) -> launcher.LaunchConfig:
    values = {
        "workdir": tmp_path,
        "project": tmp_path / "project",
        "kubeconfig": tmp_path / "kubeconfig",
        "namespaces": ["ns1", "ns2"],
        "log": tmp_path / "operator.log",
    }
    values.update(kwargs)
    return launcher.LaunchConfig(**values)


def flags(argv: list[str]) -> dict[str, str]:
    return dict(a[2:].split("=", 1) for a in argv if a.startswith("--"))


# -- command line and ports ------------------------------------------------------------------


def test_free_ports_are_used_for_metrics_and_probes_and_the_proxy_picks_its_own(tmp_path):
    argv, ports = launcher.command(config(tmp_path), [41001, 41002])
    assert argv[:4] == [sys.executable, "-m", "ansible_operator.cli", "run"]
    assert flags(argv) == {
        "zap-encoder": "console",
        "metrics-bind-address": "127.0.0.1:41001",
        "health-probe-bind-address": "127.0.0.1:41002",
        "proxy-port": "0",
        "webhook-bind-address": "127.0.0.1:0",  # a port of its own, on loopback
    }
    assert ports == launcher.Ports(metrics=41001, probes=41002)


def test_a_flag_the_caller_gives_replaces_the_launchers(tmp_path):
    given = ["--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:7000",
             "--proxy-port=8999", "--zap-encoder=json",
             "--webhook-bind-address=127.0.0.1:9443"]  # fmt: skip
    argv, ports = launcher.command(config(tmp_path, args=given), [41001, 41002])
    assert argv[4:] == given, "nothing added in front of the caller's own flags"
    assert ports == launcher.Ports(metrics=None, probes=7000)


def test_another_virtualenvs_python_runs_the_operator_when_named(tmp_path):
    """`make bench` runs each ansible-core's operator from that core's virtualenv."""
    python = str(tmp_path / ".venv-ansible-core-2.21/bin/python")
    argv, _ = launcher.command(config(tmp_path, python=python), [41001, 41002])
    assert argv[:4] == [python, "-m", "ansible_operator.cli", "run"]


# -- environment -----------------------------------------------------------------------------


def test_the_environment_names_the_cluster_namespaces_and_the_projects_ansible_paths(tmp_path):
    caller = {"PATH": "/bin", "HOME": "/home/me", "ANSIBLE_FORCE_COLOR": "1", "OTHER": "x"}
    env = launcher.environment(config(tmp_path), caller, tmp_path / "tmp")
    assert env["KUBECONFIG"] == str(tmp_path / "kubeconfig")
    assert env["WATCH_NAMESPACE"] == "ns1,ns2"
    assert env["ANSIBLE_ROLES_PATH"] == str(tmp_path / "project/roles")
    assert env["ANSIBLE_GATHERING"] == "explicit"
    assert env["ANSIBLE_OPERATOR_USER_METRICS_ADDRESS"] == "127.0.0.1:0"
    assert env["TMPDIR"] == str(tmp_path / "tmp")
    assert env["OTHER"] == "x" and env["ANSIBLE_FORCE_COLOR"] == "1", "the caller's is inherited"


def test_a_clean_environment_keeps_only_path_and_home_and_the_callers_env_comes_last(tmp_path):
    caller = {"PATH": "/bin", "HOME": "/home/me", "ANSIBLE_FORCE_COLOR": "1", "LANG": "de_DE"}
    cfg = config(tmp_path, clean_environment=True, namespaces=[], env={"ANSIBLE_GATHERING": "x"})
    env = launcher.environment(cfg, caller)
    assert "ANSIBLE_FORCE_COLOR" not in env
    assert env["PATH"] == "/bin" and env["HOME"] == "/home/me" and env["LANG"] == "C.UTF-8"
    assert env["WATCH_NAMESPACE"] == "", "every namespace"
    assert env["ANSIBLE_GATHERING"] == "x"
    assert "TMPDIR" not in env


# -- real processes --------------------------------------------------------------------------

# Stands in for `ansible-operator run`: serves /readyz on the probe port it is given, starts a
# child in its own process group (as a stray process would be), records both pids, and exits 0
# on SIGTERM leaving the child behind unless the group is killed.
FAKE_OPERATOR = r"""
import http.server, os, signal, subprocess, sys, threading
args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
mode = os.environ.get("FAKE_MODE", "serve")
if mode == "exit":
    print("fake: refusing to start in", os.environ.get("TMPDIR"), flush=True)
    sys.exit(3)
first = not os.path.exists(os.environ["FAKE_PIDS"])
if mode == "port-taken" or (mode == "port-taken-once" and first):
    open(os.environ["FAKE_PIDS"], "w").close()
    where = args["metrics-bind-address"]
    sys.exit(f"metrics: cannot listen on {where}: error while attempting to bind on address "
             f"('127.0.0.1', {where.rpartition(':')[2]}): address already in use")
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(os.environ["FAKE_PIDS"], "w") as f:
    f.write(f"{os.getpid()} {child.pid} {os.environ.get('TMPDIR', '-')}\n")
def stop(*_):
    sys.exit(0)
signal.signal(signal.SIGTERM, stop if mode != "stubborn" else signal.SIG_IGN)
class Ready(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/readyz" and mode != "never-ready" else 503)
        self.end_headers()
    def log_message(self, *a):
        pass
port = int(args["health-probe-bind-address"].rpartition(":")[2])
server = http.server.HTTPServer(("127.0.0.1", port), Ready)
threading.Thread(target=server.serve_forever, daemon=True).start()
print("fake: serving", port, flush=True)
signal.pause() if mode != "stubborn" else [signal.pause() for _ in iter(int, 1)]
"""


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """Make the launcher run FAKE_OPERATOR instead of the operator; the pid file it writes."""
    script = tmp_path / "fake_operator.py"
    script.write_text(FAKE_OPERATOR)
    real = launcher.command

    def command(cfg, free):
        argv, ports = real(cfg, free)
        return [sys.executable, str(script), *argv[4:]], ports

    monkeypatch.setattr(launcher, "command", command)
    pids = tmp_path / "pids"
    monkeypatch.setenv("FAKE_PIDS", str(pids))
    return pids


def alive(pid: int) -> bool:
    return procfs.start_time(pid) is not None


def pids_of(path: Path) -> tuple[int, int]:
    leader, child, _ = path.read_text().split()
    return int(leader), int(child)


def tmp_dir_of(path: Path) -> Path:
    """The TMPDIR the stand-in was started with."""
    return Path(path.read_text().split()[2])


def test_start_waits_until_ready_and_stop_ends_the_whole_process_group(tmp_path, fake):
    operator = launcher.start(config(tmp_path))
    try:
        leader, child = pids_of(fake)
        assert leader == operator.proc.pid and alive(child)
        assert os.getpgid(child) == leader, "the operator leads a process group of its own"
        assert f"fake: serving {operator.ports.probes}" in (tmp_path / "operator.log").read_text()
        assert operator.metrics_url == f"http://127.0.0.1:{operator.ports.metrics}/metrics"
    except BaseException:
        operator.stop()  # a failed check leaves no process behind
        raise

    assert operator.stop() == 0
    assert not alive(leader)
    deadline = time.monotonic() + 30
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(child), "what outlived the operator in its group is gone too"


def test_a_taken_port_is_not_used(tmp_path, fake):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        operator = launcher.start(config(tmp_path))
        try:
            assert port not in (operator.ports.metrics, operator.ports.probes)
        finally:
            operator.stop()


def test_a_port_taken_before_the_operator_binds_it_gets_a_fresh_pair(tmp_path, fake, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "port-taken-once")
    operator = launcher.start(config(tmp_path))
    try:
        log = (tmp_path / "operator.log").read_text()
        assert f"fake: serving {operator.ports.probes}" in log
        assert f"cannot listen on 127.0.0.1:{operator.ports.metrics}:" not in log, "a fresh pair"
        assert log.count("address already in use") == 1
    finally:
        operator.stop()

    monkeypatch.setenv("FAKE_MODE", "port-taken")  # taken every time: the third start's error
    with pytest.raises(launcher.LaunchError) as err:
        launcher.start(config(tmp_path))
    assert "address already in use" in str(err.value)
    assert (tmp_path / "operator.log").read_text().count("address already in use") == 1 + 3


def test_an_operator_that_exits_before_it_is_ready_is_one_error_with_its_log(
    tmp_path, fake, monkeypatch
):
    monkeypatch.setenv("FAKE_MODE", "exit")
    with pytest.raises(launcher.LaunchError) as err:
        launcher.start(config(tmp_path, own_tmp_dir=True))
    message = str(err.value)
    assert message.startswith("the operator exited with code 3 before it was ready")
    assert "fake: refusing to start in /" in message and str(tmp_path / "operator.log") in message
    tmp_dir = message.split("fake: refusing to start in ")[1].split()[0]
    assert not Path(tmp_dir).exists(), "a failed launch leaves no TMPDIR behind"


def test_an_operator_of_its_own_tmp_dir_gets_a_short_one_that_stop_removes(tmp_path, fake):
    """Short enough for ansible-core 2.21's RPC socket wherever the project or test is."""
    operator = launcher.start(config(tmp_path, own_tmp_dir=True))
    try:
        tmp_dir = tmp_dir_of(fake)
        assert tmp_dir == operator.tmp_dir and tmp_dir.is_dir()
        assert tmp_dir.parent == Path(tempfile.gettempdir())
        assert len(str(tmp_dir)) <= versions.RPC_TMPDIR_MAX
    finally:
        operator.stop()
    assert not tmp_dir.exists()
    without = launcher.start(config(tmp_path))
    try:
        assert without.tmp_dir is None and tmp_dir_of(fake) == Path(os.environ.get("TMPDIR", "-"))
    finally:
        without.stop()


def test_an_operator_never_ready_is_stopped_with_its_group(tmp_path, fake, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "never-ready")
    with pytest.raises(launcher.LaunchError) as err:
        launcher.start(config(tmp_path), ready_timeout=3)
    assert "was not ready on http://127.0.0.1:" in str(err.value)
    leader, child = pids_of(fake)
    deadline = time.monotonic() + 30
    while (alive(leader) or alive(child)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(leader) and not alive(child), "a failed launch leaves no process behind"


def test_an_operator_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path, fake, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "stubborn")
    operator = launcher.start(config(tmp_path))
    assert operator.stop(grace=1) == -signal.SIGKILL


def test_a_detached_operator_is_recorded_found_and_stopped_by_another_process(tmp_path, fake):
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    state = launcher.start_detached(config(tmp_path, own_tmp_dir=True), state_dir)
    try:
        recorded = json.loads((state_dir / "operator.json").read_text())
        assert recorded["pid"] == state.pid and recorded["metrics_port"] == state.metrics_port
        assert recorded["tmp_dir"] == str(tmp_dir_of(fake)) and tmp_dir_of(fake).is_dir()
        assert launcher.running_detached(state_dir) == state
    except BaseException:
        launcher.stop_detached(state_dir)  # a failed check leaves no process behind
        raise

    # Stopped by another process, as molecule's destroy.yml does.
    code = (
        "import pathlib; from ansible_operator.dev import launcher; "
        f"launcher.stop_detached(pathlib.Path({str(state_dir)!r}))"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    leader, child = pids_of(fake)
    assert leader == state.pid
    assert launcher.running_detached(state_dir) is None
    assert not (state_dir / "operator.json").exists()
    assert not tmp_dir_of(fake).exists(), "its TMPDIR goes with it"
    deadline = time.monotonic() + 30
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(child)


def test_a_recorded_pid_reused_by_another_process_is_not_the_operator(tmp_path):
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        launcher.Detached(other.pid, 1, 1, 2, "log").save(tmp_path)  # a start time not its own
        assert launcher.running_detached(tmp_path) is None
        assert launcher.stop_detached(tmp_path) is False
        assert other.poll() is None, "somebody else's process is never signalled"
    finally:
        other.kill()
        other.wait()


def test_free_ports_come_from_below_the_ephemeral_range_and_can_be_bound():
    low = int(processes.EPHEMERAL_RANGE.read_text().split()[0])
    ports = processes.free_ports(5)
    assert len(set(ports)) == 5
    for port in ports:
        assert low - processes.PICKED_SPAN <= port < low  # never one a bind to 0 could take
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", port))
