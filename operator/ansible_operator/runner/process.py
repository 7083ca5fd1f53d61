"""The cold runner: one `ansible-runner run` process per reconcile, as the Go operator does.

ansible-runner is started in a session of its own with upstream's command line, and its events
are read from the files it writes (`artifacts/<ident>/job_events/<counter>-<uuid>.json`), polled
while it runs and delivered once each, in counter order; no socket or HTTP plugin is involved.
Memory stays bounded: ansible-runner's own output goes to a file in the run's artifacts, and
events are folded into the outcome as they arrive instead of being kept. A run that exceeds its
timeout, or whose task is cancelled, is killed with every process it started (see proctree.py).
A run first takes its input dir's run lock, which ansible-runner inherits, so that no second run
of the same CR starts beside it, even from another operator process (see runlock.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from ansible_operator.runner import proctree, runlock
from ansible_operator.runner.events import EventSummary
from ansible_operator.runner.inputdir import prepare_input_dir
from ansible_operator.runner.logging_events import emit
from ansible_operator.runner.types import (
    AnsibleRunnerNotFound,
    EventCallback,
    Logger,
    RunnerError,
    RunRequest,
    RunResult,
)

RUNNER_OUTPUT_FILE = "runner.log"  # ansible-runner's own stdout/stderr, inside artifacts/<ident>/
LATEST_LINK = "latest"
_EVENT_FILE = re.compile(r"^(\d+)-.+\.json$")
_TAIL_BYTES = 4096
_TAIL_LINES = 20
# What the in-cluster loaders (client-go's, the Python client's, kubectl's) look for first.
IN_CLUSTER_ENV = ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")

_default_logger = logging.getLogger("ansible_operator.runner")


def find_ansible_runner() -> str:
    """The ansible-runner to use: the one next to this Python, else the first on PATH."""
    beside = Path(sys.executable).parent / "ansible-runner"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("ansible-runner")
    if found:
        return found
    raise AnsibleRunnerNotFound(
        f"ansible-runner not found next to {sys.executable} nor on PATH; "
        "install it (pip install ansible-runner) in the operator's environment"
    )


def build_command(executable: str, request: RunRequest, env: Mapping[str, str]) -> list[str]:
    """Upstream's ansible-runner command line for `request`."""
    command = [
        executable,
        "run",
        str(request.private_data_dir),
        "--rotate-artifacts",
        str(request.rotate_artifacts),
    ]
    if request.playbook is not None:
        command += ["-p", os.path.abspath(request.playbook), "-i", request.ident]
    else:
        assert request.role is not None
        role = os.path.abspath(request.role)
        command += [
            "--role",
            os.path.basename(role),
            "--roles-path",
            os.path.dirname(role) + "/",
            "--hosts",
            "localhost",
            "-i",
            request.ident,
        ]
    if request.verbosity > 0:
        command.append("-" + "v" * request.verbosity)
    if request.role is not None:
        skip_facts = request.skip_facts
        if skip_facts is None:
            skip_facts = env.get("ANSIBLE_GATHERING") == "explicit"
        if skip_facts:
            command.append("--role-skip-facts")
    return command


def run_path(executable: str, path: str) -> str:
    """The PATH of a run: ansible-runner finds ansible-playbook on it, so the one installed
    beside `executable` comes first."""
    bindir = os.path.dirname(executable)
    playbook_bin = os.path.join(bindir, "ansible-playbook")
    if os.path.isfile(playbook_bin) and shutil.which("ansible-playbook", path=path) != playbook_bin:
        return os.pathsep.join(p for p in (bindir, path) if p)
    return path


def run_environment(
    executable: str, request: RunRequest, marker: str, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of the run: the operator's, the kubeconfig, the caller's extras.

    The in-cluster variables are left out: without them the in-cluster loaders refuse instead
    of taking the operator's ServiceAccount token, so a client that falls back to them
    (`kubernetes.config.load_config()`, kubernetes.core without a kubeconfig) ends up on the
    run's kubeconfig, the proxy.
    """
    env = dict(os.environ if base is None else base)
    env["K8S_AUTH_KUBECONFIG"] = request.kubeconfig
    env["KUBECONFIG"] = request.kubeconfig
    env.update(request.extra_env)
    for name in IN_CLUSTER_ENV:
        env.pop(name, None)
    path = run_path(executable, env.get("PATH", ""))
    if path != env.get("PATH", ""):
        env["PATH"] = path
    # Ansible colours its output because ansible-runner gives it a terminal; the escape codes
    # only clutter logs and the stdout artifact. An explicit choice of the user wins.
    if not any(k in env for k in ("ANSIBLE_NOCOLOR", "ANSIBLE_FORCE_COLOR", "NO_COLOR")):
        env["ANSIBLE_NOCOLOR"] = "1"
    env[proctree.MARKER_ENV] = marker
    return env


class RunProcess(Protocol):
    """The process of a run as the runner watches it (asyncio's Process is one)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...


class _EventReader:
    """Reads new event files of one run, each once, in counter order without gaps.

    While the run goes on, an event is only delivered after all lower counters (a directory
    listing may show a file before an older one); the final read takes whatever is left.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.next_counter = 1
        self.delivered: set[int] = set()

    def read(self, *, final: bool = False) -> list[dict[str, Any]]:
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        pending: dict[int, str] = {}
        for name in names:
            match = _EVENT_FILE.match(name)
            if match is None or name.endswith("-partial.json"):
                continue
            counter = int(match.group(1))
            if counter not in self.delivered:
                pending[counter] = name
        events: list[dict[str, Any]] = []
        for counter in sorted(pending):
            if not final and counter != self.next_counter:
                break
            event = self._load(self.directory / pending[counter])
            if event is None:
                if final:
                    self.delivered.add(counter)
                    continue
                break
            events.append(event)
            self.delivered.add(counter)
            self.next_counter = max(self.next_counter, counter + 1)
        return events

    @staticmethod
    def _load(path: Path) -> dict[str, Any] | None:
        try:
            with open(path, encoding="utf-8") as handle:
                event = json.load(handle)
        except (OSError, ValueError):
            return None
        return event if isinstance(event, dict) else None


class ColdRunner:
    """A `Runner` that starts a fresh `ansible-runner` process for every run.

    `executable` defaults to `find_ansible_runner()`, checked here so that a missing install
    fails at startup. `kill_grace` is how long processes get between SIGTERM and SIGKILL.
    `environ` is the environment every run starts from (None: the operator's own).
    """

    def __init__(
        self,
        *,
        executable: str | None = None,
        poll_interval: float = 0.15,
        kill_grace: float = 5.0,
        logger: Logger | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.executable = executable or find_ansible_runner()
        self.environ = environ
        self.poll_interval = poll_interval
        self.kill_grace = kill_grace
        self.logger = logger or _default_logger

    async def run(
        self,
        request: RunRequest,
        on_event: EventCallback | None = None,
        *,
        logger: Logger | None = None,
    ) -> RunResult:
        log = logger or self.logger
        pdd = Path(request.private_data_dir)
        marker = f"{request.ident}.{secrets.token_hex(8)}"
        async with runlock.hold(pdd, marker, log=log, grace=self.kill_grace) as lock:
            return await self._run_locked(request, on_event, log, marker, lock)

    async def _run_locked(
        self,
        request: RunRequest,
        on_event: EventCallback | None,
        log: Logger,
        marker: str,
        lock: int,
    ) -> RunResult:
        pdd = Path(request.private_data_dir)
        env = run_environment(self.executable, request, marker, base=self.environ)
        prepare_input_dir(
            pdd,
            ident=request.ident,
            extravars=request.extravars,
            kubeconfig=request.kubeconfig,
            ansible_args=request.ansible_args,
            environ=env,
        )
        artifacts = pdd / "artifacts"
        artifact_dir = artifacts / request.ident
        output_path = artifact_dir / RUNNER_OUTPUT_FILE
        command = build_command(self.executable, request, env)
        emit(
            log,
            logging.DEBUG,
            "Starting ansible-runner",
            {"job": request.ident, "command": command},
        )

        summary = EventSummary()
        reader = _EventReader(artifact_dir / "job_events")

        def deliver(final: bool = False) -> None:
            for event in reader.read(final=final):
                summary.feed(event)
                if on_event is not None:
                    try:
                        on_event(event)
                    except Exception:
                        emit(
                            log,
                            logging.ERROR,
                            "Event handler failed",
                            {"job": request.ident},
                            exc_info=True,
                        )

        try:
            # ansible-runner rotates by listing artifacts/ and rmtree-ing the oldest entries;
            # the `latest` symlink among them would crash it, so it is out until the run ends.
            _remove_latest(artifacts)
            artifact_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            proc = await self._spawn(command, env, output_path, marker, lock)
            timed_out, duration = await self._supervise(proc, request, marker, deliver, log)
            if (proc.returncode or 0) < 0 and not timed_out:
                # Killed by a signal (the OOM killer?): what it started must not outlive it.
                await proctree.terminate_run(proc.pid, marker, grace=self.kill_grace)
            elif not timed_out:
                # Ended by itself: a module left running (its worker killed, its run failed)
                # must not outlive it either; an `async` task's job is what the task asked for.
                await proctree.terminate_run(None, marker, grace=self.kill_grace, spare_async=True)
        finally:
            _point_latest(artifacts, request.ident)
        deliver(final=True)

        rc = proc.returncode
        stdout_path = artifact_dir / "stdout"
        abort_reason = None
        if timed_out:
            abort_reason = f"Ansible run timed out after {request.timeout:g}s and was stopped"
        else:
            abort_reason = self._end_reason(proc)
        outcome = summary.outcome(
            stdout_tail=_tail(stdout_path) or _tail(output_path),
            abort_reason=abort_reason,
        )
        if rc == 0:
            emit(log, logging.INFO, "Ansible-runner exited successfully", {"job": request.ident})
        elif not timed_out:
            emit(
                log,
                logging.ERROR,
                f"Ansible-runner exited with status {rc}",
                {"job": request.ident, "rc": rc, "output": _tail(output_path)},
            )
        return RunResult(
            outcome=outcome,
            rc=rc,
            timed_out=timed_out,
            artifact_dir=artifact_dir,
            stdout_path=stdout_path,
            runner_output_path=output_path,
            duration=duration,
        )

    def _end_reason(self, proc: RunProcess) -> str | None:
        """Why the run ended early, if it was killed by a signal (timeouts aside)."""
        rc = proc.returncode
        if rc is None or rc >= 0:
            return None
        name = signal.Signals(-rc).name if -rc in signal.valid_signals() else f"signal {-rc}"
        why = " (the out-of-memory killer sends it)" if -rc == signal.SIGKILL else ""
        return f"the Ansible run's process was killed by {name}{why}"

    async def _spawn(
        self, command: list[str], env: dict[str, str], output_path: Path, marker: str, lock: int
    ) -> RunProcess:
        """Start ansible-runner in a session of its own, its output going to `output_path`,
        holding the run lock `lock` for as long as it lives."""
        with open(output_path, "wb") as output:
            try:
                return await asyncio.create_subprocess_exec(
                    *command,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                    pass_fds=(lock,),
                )
            except FileNotFoundError as err:
                raise AnsibleRunnerNotFound(f"cannot start {self.executable}: {err}") from err
            except OSError as err:
                raise RunnerError(f"cannot start {self.executable}: {err}") from err
            except BaseException:
                proctree.kill_run_now(None, marker)  # in case the child was already forked
                raise

    async def _pause(self, proc: RunProcess, timeout: float) -> None:
        """Wait `timeout` seconds between looks at a running process (or less, if the runner
        can tell sooner that it ended)."""
        await asyncio.sleep(timeout)

    async def _supervise(
        self,
        proc: RunProcess,
        request: RunRequest,
        marker: str,
        deliver: Callable[[], None],
        log: Logger,
    ) -> tuple[bool, float]:
        """Deliver events until the process ends or times out; returns (timed_out, duration).

        On a timeout, and on any exception here (cancellation first of all), every process of
        the run is killed before returning or raising.
        """
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = None if request.timeout is None else started + request.timeout
        pgid = proc.pid  # start_new_session: the child leads its own group
        try:
            # The end of the process is polled, not awaited in a task of its own: a cancelled
            # waiter once passed for the end of the run; the run lives in its caller's task.
            while proc.returncode is None:
                timeout = self.poll_interval
                if deadline is not None:
                    timeout = max(0.0, min(timeout, deadline - loop.time()))
                await self._pause(proc, timeout)
                deliver()
                if proc.returncode is None and deadline is not None and loop.time() >= deadline:
                    emit(
                        log,
                        logging.ERROR,
                        "Ansible run timed out, killing its processes",
                        {"job": request.ident, "timeout": request.timeout},
                    )
                    if not await proctree.terminate_run(pgid, marker, grace=self.kill_grace):
                        emit(
                            log,
                            logging.ERROR,
                            "Processes of a timed-out Ansible run survived SIGKILL",
                            {"job": request.ident},
                        )
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(proc.wait(), self.kill_grace + 5)
                    return True, loop.time() - started
            return False, loop.time() - started
        except BaseException:
            # Shutting down, or the caller gave up: the run must not outlive the request.
            await _kill_after_abort(pgid, marker, self.kill_grace, proc)
            raise


async def _kill_after_abort(pgid: int, marker: str, grace: float, proc: RunProcess) -> None:
    """Kill the run after an abort; a second cancellation only skips the grace period."""
    with contextlib.suppress(asyncio.CancelledError):  # then terminate_run SIGKILLed it all
        await proctree.terminate_run(pgid, marker, grace=grace)
    with contextlib.suppress(asyncio.CancelledError, TimeoutError):
        await asyncio.wait_for(proc.wait(), timeout=grace)


def _remove_latest(artifacts: Path) -> None:
    latest = artifacts / LATEST_LINK
    if latest.is_symlink():
        latest.unlink()


def _point_latest(artifacts: Path, ident: str) -> None:
    """Re-point `artifacts/latest` at this run's dir (relative, so the tree can be copied)."""
    latest = artifacts / LATEST_LINK
    tmp = artifacts / f".{LATEST_LINK}.{ident}"
    try:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        os.symlink(ident, tmp)
        os.replace(tmp, latest)
    except OSError as err:
        _default_logger.warning(f"Cannot update {latest}: {err}")


def _tail(path: Path) -> str:
    """The last lines of a file, bounded in size; empty if it is missing or empty."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - _TAIL_BYTES))
            data = handle.read()
    except OSError:
        return ""
    lines = data.decode("utf-8", errors="replace").splitlines()
    if len(data) == _TAIL_BYTES and size > _TAIL_BYTES:
        lines = lines[1:]  # the first line is cut
    return "\n".join(lines[-_TAIL_LINES:]).strip()
