"""The one way to start ``ansible-operator run`` as a process for development and tests.

``make run``, molecule's ``create.yml`` and the e2e fixtures all launch the operator through
`start`: loopback ports of its own (metrics and probes picked free, the proxy's and the user
metrics' chosen by the operator itself), the environment its Ansible runs need, its output in a
log file (or the terminal), a TMPDIR of its own if asked, and readiness on ``/readyz``. The
operator runs in a session of its own, so `stop` reaches every process it started; a launch that
fails leaves no process behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ansible_operator import procfs
from ansible_operator.devcluster import processes

READY_TIMEOUT = 120.0
STOP_GRACE = 60.0  # the operator's own graceful shutdown (30 s by default) fits in it
PORT_ATTEMPTS = 3  # starts, each with a fresh pair of ports when another process took one
# What a clean environment keeps from the caller's (molecule's ANSIBLE_* must not leak).
KEPT_IN_CLEAN_ENVIRONMENT = ("PATH", "HOME")


class LaunchError(Exception):
    """The operator did not come up; one line, with the end of its log when there is one."""


@dataclass(frozen=True)
class LaunchConfig:
    """What to run: ``workdir`` holds the watches.yaml (``--watches-file`` is relative to it),
    ``project`` the ``roles/`` its runs use (the operator_sdk.util collection is installed with
    the package)."""

    workdir: Path
    project: Path
    kubeconfig: Path
    namespaces: Sequence[str]  # WATCH_NAMESPACE; empty: every namespace
    log: Path | None  # None: the caller's terminal
    args: Sequence[str] = ()  # more `run` flags; a flag given here replaces the launcher's
    env: Mapping[str, str] = field(default_factory=dict)  # set last, over everything
    own_tmp_dir: bool = False  # a TMPDIR of its own (`private_tmp_dir`), gone when it stops
    clean_environment: bool = False  # True: only PATH and HOME of the caller's environment
    python: str | None = None  # the interpreter (of a virtualenv) to run it with; None: this one


@dataclass(frozen=True)
class Ports:
    metrics: int | None  # None: the endpoint is off (a bind address of 0)
    probes: int | None


def _flag(args: Sequence[str], name: str) -> str | None:
    """The value of ``--name=value`` in ``args`` (the last one wins, as for argparse)."""
    found = None
    for arg in args:
        if arg.startswith(f"--{name}="):
            found = arg.split("=", 1)[1]
    return found


def _port_of(address: str) -> int | None:
    return None if address in ("", "0") else int(address.rpartition(":")[2])


def command(config: LaunchConfig, free: Sequence[int]) -> tuple[list[str], Ports]:
    """The operator's command line and the ports it will serve on; ``free`` are two free ports
    for the metrics and the probes, used unless ``config.args`` names addresses of their own."""
    args = list(config.args)
    defaults = {
        "zap-encoder": "console",
        "metrics-bind-address": f"127.0.0.1:{free[0]}",
        "health-probe-bind-address": f"127.0.0.1:{free[1]}",
        "proxy-port": "0",
        "webhook-bind-address": "127.0.0.1:0",
    }
    added = [f"--{name}={value}" for name, value in defaults.items() if _flag(args, name) is None]
    python = config.python or sys.executable
    argv = [python, "-m", "ansible_operator.cli", "run", *added, *args]
    ports = Ports(
        metrics=_port_of(_flag(argv, "metrics-bind-address") or ""),
        probes=_port_of(_flag(argv, "health-probe-bind-address") or ""),
    )
    return argv, ports


def private_tmp_dir() -> Path:
    """A TMPDIR for one operator, short and under the system's: ansible-core 2.21 puts its RPC
    socket under TMPDIR and cannot run under one longer than versions.RPC_TMPDIR_MAX (the
    operator refuses to start there), as a directory of a project or of a test can be."""
    return Path(tempfile.mkdtemp(prefix="ansible-operator-"))


def environment(
    config: LaunchConfig, caller: Mapping[str, str], tmp_dir: Path | None = None
) -> dict[str, str]:
    """The operator's environment: the caller's (or only its PATH and HOME), then what the
    operator and its runs need (TMPDIR: `tmp_dir`, if given), then ``config.env``."""
    if config.clean_environment:
        env = {k: caller[k] for k in KEPT_IN_CLEAN_ENVIRONMENT if k in caller}
        env["LANG"] = "C.UTF-8"
    else:
        env = dict(caller)
    env.update(
        KUBECONFIG=str(config.kubeconfig),
        WATCH_NAMESPACE=",".join(config.namespaces),
        ANSIBLE_GATHERING="explicit",
        ANSIBLE_ROLES_PATH=str(config.project / "roles"),
        # An ephemeral port: operators launched side by side never compete for 5050.
        ANSIBLE_OPERATOR_USER_METRICS_ADDRESS="127.0.0.1:0",
    )
    if tmp_dir is not None:
        env["TMPDIR"] = str(tmp_dir)
    env.update(config.env)
    return env


class OperatorProcess:
    """A launched operator: its process, ports, log and TMPDIR of its own (if it has one)."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        ports: Ports,
        log: Path | None,
        tmp_dir: Path | None = None,
    ) -> None:
        self.proc = proc
        self.ports = ports
        self.log = log
        self.tmp_dir = tmp_dir
        started = procfs.start_time(proc.pid)
        self.ref = processes.ProcessRef(proc.pid, started if started is not None else -1)

    @property
    def metrics_url(self) -> str | None:
        return (
            None if self.ports.metrics is None else f"http://127.0.0.1:{self.ports.metrics}/metrics"
        )

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Until ``/readyz`` answers 200; LaunchError (and the process stopped) if the operator
        exits first or is not ready within ``timeout`` seconds."""
        if self.ports.probes is None:
            return  # no probe endpoint to ask
        url = f"http://127.0.0.1:{self.ports.probes}/readyz"
        deadline = time.monotonic() + timeout
        while True:
            code = self.proc.poll()
            if code is not None:
                self.stop()
                raise LaunchError(
                    f"the operator exited with code {code} before it was ready{self._log_tail()}"
                )
            if _answers_ok(url):
                return
            if time.monotonic() > deadline:
                self.stop()
                raise LaunchError(
                    f"the operator was not ready on {url} within {timeout:.0f} s{self._log_tail()}"
                )
            time.sleep(0.2)

    def _log_tail(self) -> str:
        return "" if self.log is None else f"; the end of {self.log}:\n{processes.tail(self.log)}"

    def stop(self, grace: float = STOP_GRACE) -> int:
        """Stop the operator and its process group (see `stop_group`); its exit code."""
        stop_group(self.proc.pid, lambda: self.proc.poll() is not None, grace)
        code = self.proc.wait()
        _remove(self.tmp_dir)
        return code

    def kill(self) -> int:
        """SIGKILL to the operator alone, as a crash or an OOM kill would end it. Its TMPDIR
        goes too: a start after it makes another."""
        self.proc.kill()
        code = self.proc.wait()
        _remove(self.tmp_dir)
        return code


def _remove(tmp_dir: Path | str | None) -> None:
    if tmp_dir is not None:
        shutil.rmtree(tmp_dir, ignore_errors=True)


def stop_group(pgid: int, exited: Callable[[], bool], grace: float = STOP_GRACE) -> None:
    """SIGTERM to process group ``pgid``, until ``exited()`` or ``grace`` seconds; then SIGKILL
    to the group, which also ends what outlived its leader."""
    if not exited():
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while not exited() and time.monotonic() < deadline:
            time.sleep(0.1)
    _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _answers_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def start(
    config: LaunchConfig, *, ready: bool = True, ready_timeout: float = READY_TIMEOUT
) -> OperatorProcess:
    """Start the operator; with ``ready``, return only once it answers on ``/readyz``. A port the
    launcher chose that another process took before the operator bound it (the operator exits
    saying so) gets a fresh pair, up to PORT_ATTEMPTS starts."""
    attempt = 1
    while True:
        picked = processes.free_ports(2)
        logged = config.log.stat().st_size if config.log is not None and config.log.exists() else 0
        launched = _start_once(config, picked)
        if not ready:
            return launched
        try:
            launched.wait_ready(ready_timeout)
            return launched
        except LaunchError:
            if attempt == PORT_ATTEMPTS or not _lost_a_port(config.log, logged, picked):
                raise
        attempt += 1


def _start_once(config: LaunchConfig, picked: list[int]) -> OperatorProcess:
    argv, ports = command(config, picked)
    tmp_dir = private_tmp_dir() if config.own_tmp_dir else None
    env = environment(config, os.environ, tmp_dir)
    try:
        if config.log is not None:
            config.log.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as files:
            out = files.enter_context(open(config.log, "ab")) if config.log is not None else None
            proc = subprocess.Popen(
                argv,
                cwd=config.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT if out is not None else None,
                start_new_session=True,  # its own process group; Ctrl-C reaches it through us
            )
    except BaseException:
        _remove(tmp_dir)
        raise
    return OperatorProcess(proc, ports, config.log, tmp_dir)


def _lost_a_port(log: Path | None, offset: int, picked: list[int]) -> bool:
    """Whether the operator's log, from ``offset`` on, says a port of ``picked`` was in use."""
    if log is None:
        return False  # its output is the caller's: nothing to tell by
    with open(log, "rb") as file:
        file.seek(offset)
        said = file.read().decode(errors="replace")
    return "address already in use" in said.lower() and any(
        f"cannot listen on 127.0.0.1:{port}:" in said for port in picked
    )


# -- a detached operator, for molecule: started by one command, stopped by another --------------

STATE_FILE = "operator.json"


@dataclass(frozen=True)
class Detached:
    """What ``dev operator start`` leaves in its directory for ``stop`` and the playbooks."""

    pid: int
    start_time: int
    metrics_port: int | None
    probe_port: int | None
    log: str
    tmp_dir: str | None = None  # its TMPDIR of its own, which `stop_detached` removes

    def ref(self) -> processes.ProcessRef:
        return processes.ProcessRef(self.pid, self.start_time)

    def save(self, directory: Path) -> None:
        (directory / STATE_FILE).write_text(json.dumps(vars(self)) + "\n")

    @classmethod
    def load(cls, directory: Path) -> Detached | None:
        try:
            return cls(**json.loads((directory / STATE_FILE).read_text()))
        except (OSError, ValueError, TypeError):
            return None


def start_detached(config: LaunchConfig, directory: Path) -> Detached:
    """Start the operator, wait until it is ready and record it in ``directory``."""
    launched = start(config)
    state = Detached(
        launched.ref.pid,
        launched.ref.start_time,
        launched.ports.metrics,
        launched.ports.probes,
        str(config.log),
        None if launched.tmp_dir is None else str(launched.tmp_dir),
    )
    state.save(directory)
    return state


def running_detached(directory: Path) -> Detached | None:
    """The operator recorded in ``directory`` if it still runs (a reused pid does not count)."""
    state = Detached.load(directory)
    return state if state is not None and processes.is_running(state.ref()) else None


def stop_detached(directory: Path, grace: float = STOP_GRACE) -> bool:
    """Stop the operator recorded in ``directory`` and forget it; whether one was running."""
    state = Detached.load(directory)
    running = state is not None and processes.is_running(state.ref())
    if state is not None:
        if running:
            ref = state.ref()
            stop_group(ref.pid, lambda: not processes.is_running(ref), grace)
        _remove(state.tmp_dir)
    with contextlib.suppress(FileNotFoundError):
        (directory / STATE_FILE).unlink()
    return running
