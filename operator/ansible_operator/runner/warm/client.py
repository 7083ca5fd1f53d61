"""The warm runner: each run is a fork of a process that has already imported what runs need.

`WarmRunner` is the cold runner (process.py) with one step changed: instead of starting a new
`ansible-runner` process, it asks a fork server (server.py) to fork one child for the run,
which calls ansible-runner's entry point in-process with the same arguments, environment and
working directory (child.py). The input dir, the run lock, the events read from `job_events`,
the outcome, the timeout and the kill of the whole process tree are the cold runner's own code.

The server is replaced when it dies, when it does not answer a request in time, and after
`max_runs` runs or once its resident memory passes `max_rss` bytes; a replaced server finishes
the runs it forked before it exits. A run whose server dies under it is stopped (its processes
carry the run's marker) and reported as a Failure saying so.

What a warm run changes in other projects' private parts is in patches/, with the releases each
patch was tested on: the runner turns off those the installed releases were not tested with,
and runs cold when one it cannot do without is off (`patches_off`, `cold`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ansible_operator.runner import proctree, versions
from ansible_operator.runner.logging_events import emit
from ansible_operator.runner.process import ColdRunner
from ansible_operator.runner.types import RunnerError, RunRequest, RunResult
from ansible_operator.runner.warm import notices, patches, proctitle, zygote
from ansible_operator.runner.warm.modules import same_python

MAX_RUNS_PER_SERVER = 500
MAX_SERVER_RSS = 512 * 1024 * 1024
ZYGOTE_IDLE = 60.0  # seconds: a zygote (zygote.py) no run used for so long goes, and its memory
REPLY_TIMEOUT = 120.0  # seconds for a (possibly just started, importing) server to fork a run
PIPELINING_ENV = "ANSIBLE_PIPELINING"  # set for warm runs unless the environment sets it
NOTICES_FILE = "notices.jsonl"  # in the server's kept directory (notices.py)


class ForkServerLost(RunnerError):
    """The fork server did not answer or died; one clear line."""


class ForkedRun:
    """A run forked by the fork server, with the parts of asyncio's Process the runner uses.

    The server reports the run's end on `conn`; `returncode` reads it without blocking (negative:
    killed by that signal). If the server goes away first, the run's processes are killed and
    `server_lost` is set.
    """

    def __init__(self, conn: socket.socket, pid: int, marker: str, buffer: bytes) -> None:
        self.conn = conn
        self.pid = pid
        self.marker = marker
        self.server_lost = False
        self._buffer = buffer
        self._returncode: int | None = None

    @property
    def returncode(self) -> int | None:
        if self._returncode is None:
            self._poll()
        return self._returncode

    def _poll(self) -> None:
        closed = False
        try:
            while chunk := self.conn.recv(4096):
                self._buffer += chunk
            closed = True
        except BlockingIOError:
            pass
        except OSError:
            closed = True
        if b"\n" in self._buffer:
            reply = json.loads(self._buffer.split(b"\n", 1)[0])
            self._returncode = os.waitstatus_to_exitcode(int(reply["status"]))
            self.conn.close()
        elif closed:
            self._lost()

    def _lost(self) -> None:
        self.server_lost = True
        proctree.kill_run_now(self.pid, self.marker)
        self._returncode = -signal.SIGKILL
        self.conn.close()

    async def ended(self, timeout: float | None) -> None:
        """Return once the run has ended, or after `timeout` seconds (None: no limit)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self.returncode is None:
            left = None if deadline is None else max(0.0, deadline - loop.time())
            if not await _readable(self.conn, left):
                return

    async def wait(self) -> int:
        await self.ended(None)
        return self._returncode  # type: ignore[return-value]


async def _readable(conn: socket.socket, timeout: float | None) -> bool:
    """Whether `conn` has something to read (or has closed) within `timeout` seconds.

    A future woken by the event loop, not a task of its own: a run's supervision lives in its
    caller's task alone, so nothing but cancelling that task cuts it short."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(conn.fileno(), wake)
    try:
        done, _ = await asyncio.wait({ready}, timeout=timeout)
    finally:
        loop.remove_reader(conn.fileno())
        ready.cancel()
    return bool(done)


class ForkServer:
    """Starts, feeds and replaces the fork server process; one per WarmRunner."""

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        *,
        python: str = sys.executable,
        max_runs: int = MAX_RUNS_PER_SERVER,
        max_rss: int = MAX_SERVER_RSS,
        reply_timeout: float = REPLY_TIMEOUT,
        zygote_idle: float = ZYGOTE_IDLE,
    ) -> None:
        self.environ = dict(os.environ if environ is None else environ)
        self.python = python
        self.max_runs = max_runs
        self.max_rss = max_rss
        self.reply_timeout = reply_timeout
        self.zygote_idle = zygote_idle
        self.patches_off: list[str] = []  # patches/ that its runs leave off (WarmRunner's)
        self.process: subprocess.Popen[bytes] | None = None
        self.control: socket.socket | None = None
        self.runs = 0  # forked by the current server
        self.started = 0  # servers started so far
        self.kept_directory: str | None = None  # the current server's, which removes it on exit
        self._notices: notices.Reader | None = None  # the current server's (in kept_directory)
        self._unread: list[notices.Notice] = []  # those of servers let go, not yet taken

    def start(self) -> None:
        """Start the server now if none is usable (it imports in the background)."""
        if self.process is not None and self.process.poll() is None and not self._worn_out():
            return
        self.close()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        kept_directory = tempfile.mkdtemp(prefix="ansible-operator-kept-")
        command = [
            self.python,
            "-P",  # not the operator's working directory first on sys.path
            "-m",
            "ansible_operator.runner.warm.server",
            str(theirs.fileno()),
            kept_directory,
            str(self.zygote_idle),
            ",".join(self.patches_off),
            os.path.join(kept_directory, NOTICES_FILE),
        ]
        try:
            with theirs:
                self.process = subprocess.Popen(
                    [*command, proctitle.room_arg()],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    env=proctitle.room_environ(self.environ),
                    pass_fds=(theirs.fileno(),),
                    start_new_session=True,
                )
        except OSError as err:
            ours.close()
            shutil.rmtree(kept_directory, ignore_errors=True)
            raise RunnerError(f"cannot start the warm runner's fork server: {err}") from err
        self.control = ours
        self.kept_directory = kept_directory
        self._notices = notices.Reader(os.path.join(kept_directory, NOTICES_FILE))
        self.runs = 0
        self.started += 1

    def notices(self) -> list[notices.Notice]:
        """What the servers' processes could not do warm since the last call (notices.py)."""
        found, self._unread = self._unread, []
        return found + (self._notices.read() if self._notices is not None else [])

    def close(self) -> None:
        """Let the server go: it exits once the runs it forked have ended."""
        if self._notices is not None:  # before it removes its kept directory
            self._unread += self._notices.read()
            self._notices = None
        if self.process is not None and self.process.stdin is not None:
            self.process.stdin.close()
        if self.process is not None and self.process.poll() is not None and self.kept_directory:
            shutil.rmtree(self.kept_directory, ignore_errors=True)  # dead: it could not remove it
        if self.control is not None:
            self.control.close()
        self.process = None
        self.control = None

    def kill(self) -> None:
        """Kill the server at once (its runs are reported lost by their ForkedRun)."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            self.process.wait()
        self.close()

    async def fork(
        self, argv: list[str], env: Mapping[str, str], marker: str, output: int, lock: int
    ) -> ForkedRun:
        """Fork one run; a server that does not answer is replaced and asked once more."""
        cwd = os.getcwd()
        request = json.dumps({"argv": argv, "env": dict(env), "cwd": cwd, "marker": marker})
        kind = zygote.routing_key(argv, env, cwd).encode()
        for attempt in (1, 2):
            self.start()
            try:
                return await self._fork_once(kind, request.encode() + b"\n", marker, output, lock)
            except ForkServerLost:
                self.kill()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def _fork_once(
        self, kind: bytes, request: bytes, marker: str, output: int, lock: int
    ) -> ForkedRun:
        assert self.control is not None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with theirs:
            try:
                socket.send_fds(self.control, [kind], [theirs.fileno(), output, lock])
            except OSError as err:
                ours.close()
                raise ForkServerLost(f"the warm runner's fork server is gone: {err}") from err
        ours.setblocking(False)
        try:
            loop = asyncio.get_running_loop()
            await asyncio.wait_for(loop.sock_sendall(ours, request), self.reply_timeout)
            buffer = await self._read_line(ours)
        except BaseException:
            ours.close()
            proctree.kill_run_now(None, marker)  # in case it was forked already
            raise
        line, _, rest = buffer.partition(b"\n")
        reply = json.loads(line)
        if "pid" not in reply:
            ours.close()
            raise RunnerError(f"the warm runner's fork server refused a run: {reply.get('error')}")
        self.runs += 1
        return ForkedRun(ours, int(reply["pid"]), marker, rest)

    async def _read_line(self, conn: socket.socket) -> bytes:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.reply_timeout
        buffer = b""
        while b"\n" not in buffer:
            try:
                chunk = conn.recv(4096)
            except BlockingIOError:
                if not await _readable(conn, max(0.0, deadline - loop.time())):
                    raise ForkServerLost(
                        f"the warm runner's fork server did not answer in {self.reply_timeout:g}s"
                    ) from None
                continue
            except OSError as err:
                raise ForkServerLost(f"the warm runner's fork server is gone: {err}") from err
            if not chunk:
                raise ForkServerLost("the warm runner's fork server closed the connection")
            buffer += chunk
        return buffer

    def _worn_out(self) -> bool:
        if self.runs >= self.max_runs:
            return True
        assert self.process is not None
        return _rss(self.process.pid) > self.max_rss


def _rss(pid: int) -> int:
    """Resident memory of a process in bytes (0 if unknown)."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class WarmRunner(ColdRunner):
    """A `Runner` whose runs are forks of a warm fork server; see the module docstring.

    Takes the ColdRunner's arguments; `server` is the ForkServer to use (None: a new one whose
    runs start from `environ`'s settings). `installed` is the release of each project the
    patches touch (None: this Python's, which the fork server runs). `patches_off` are those of
    patches/ that stay off, with why; `cold` is whether runs are cold for want of one of them.
    Call `close()` when done with it.
    """

    def __init__(
        self,
        *,
        server: ForkServer | None = None,
        installed: Mapping[str, str] | None = None,
        on_notice: Callable[[notices.Notice], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.on_notice = on_notice or self._log_notice
        self.patches_off = patches.check(patches.installed() if installed is None else installed)
        self.cold = patches.falls_back(self.patches_off)
        self.server = server or ForkServer(self.environ)
        self.server.patches_off = sorted(self.patches_off)

    def check_installation(self, ansible: versions.AnsibleVersions) -> None:
        """Refuse warm runs, in one line, unless the ansible-runner and ansible-playbook that
        the start-up probe asked (and a cold run would start) run on the fork server's Python:
        a warm run uses the ansible-runner and ansible-core that Python imports."""
        if self.cold:
            return  # cold runs start those very executables
        for executable in (self.executable, ansible.playbook):
            command = versions.script_interpreter(executable)
            if command[:1] and os.path.basename(command[0]) == "env":
                found = shutil.which(command[1]) if len(command) > 1 else None
                command = [found] if found else []
            if not command or not same_python(command[0], self.server.python):
                runs_on = command[0] if command else "no Python of its own"
                raise RunnerError(
                    f"--runner=warm runs Ansible in-process in {self.server.python}, but "
                    f"{executable} is another installation's (it runs on {runs_on}): install "
                    "ansible-runner and ansible-core in the operator's Python, or use "
                    "--runner=cold"
                )

    async def run(self, request: RunRequest, *args: Any, **kwargs: Any) -> RunResult:
        """The cold runner's run; then what the fork server's processes could not do warm
        during it (notices.py) goes to `on_notice`, one call each."""
        try:
            return await super().run(request, *args, **kwargs)
        finally:
            for notice in self.server.notices():
                self.on_notice(notice)

    def _log_notice(self, notice: notices.Notice) -> None:
        emit(
            self.logger,
            logging.WARNING,
            f"Warm runner: {notices.REASONS[notice.reason]}",
            {"reason": notice.reason, "detail": notice.detail},
        )

    def start(self) -> None:
        """Start the fork server ahead of the first run (none when runs are cold)."""
        if not self.cold:
            self.server.start()

    def close(self) -> None:
        self.server.close()

    async def _spawn(
        self, command: list[str], env: dict[str, str], output_path: Path, marker: str, lock: int
    ) -> Any:
        if self.cold:
            return await super()._spawn(command, env, output_path, marker, lock)
        # Modules reach modules.py only when pipelined (their payload on stdin).
        env = {PIPELINING_ENV: "True", **env}
        with open(output_path, "wb") as output:
            return await self.server.fork(command, env, marker, output.fileno(), lock)

    async def _pause(self, proc: Any, timeout: float) -> None:
        if not isinstance(proc, ForkedRun):
            await super()._pause(proc, timeout)
            return
        # The server's end-of-run message wakes the supervision at once.
        await proc.ended(timeout)

    def _end_reason(self, proc: Any) -> str | None:
        if isinstance(proc, ForkedRun) and proc.server_lost:
            return "the warm runner's fork server died during the Ansible run, which was stopped"
        return super()._end_reason(proc)
