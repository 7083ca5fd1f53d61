"""The fork server of the warm runner: a long-lived process that forks one child per run.

It is started by `WarmRunner` (client.py) as `python -P -m ansible_operator.runner.warm.server`
(-P: the operator's working directory is not on sys.path), imports once what is slow to import
and reads no per-run configuration (ansible-runner, pexpect, jinja2, yaml, the Kubernetes
client, cryptography...), and then waits. Nothing of Ansible's controller is imported here:
`ansible.constants` and the plugin loaders read the environment and ansible.cfg when imported,
which `self_check` asserts at start. A run imports them itself, in its own environment (see
child.py), or starts from the zygote of its kind, a fork of this server that has imported them
in that kind's configuration (zygote.py); the server starts, hands runs to, and lets go of its
zygotes.

Arguments: the control socket's descriptor, the directory where runs keep what they reuse
(cachedir.py, removed when the server exits), the seconds after which an unused zygote goes,
the patches that stay off (patches/, comma-separated), and the file of notices (notices.py).
Protocol, over the SOCK_SEQPACKET control socket: each message is the run's kind and carries
three descriptors, a stream socket for the run, its output file and its run lock. The run socket
brings one JSON line (argv, env, cwd, marker); the server, or the zygote it passes the message
to, forks, answers with `{"pid": N}` and, when the child ends, `{"status": <wait status>}`. End
of file on stdin (the operator let it go, or is gone) stops the server and its zygotes once the
runs they forked have ended.
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import json
import os
import selectors
import shutil
import signal
import socket
import sys
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ansible_operator.runner.warm import cachedir, notices, patches, zygote
from ansible_operator.runner.warm.program import run_as_program

# Slow to import, read no configuration when imported, used by every run (each may be absent).
PRELOAD = (
    "ansible_runner.__main__",
    "ansible_runner.interface",
    "ansible_runner.runner",
    "ansible_runner.config.runner",
    "ansible_runner.streaming",
    "pexpect",
    "jinja2",
    "yaml",
    "cryptography.hazmat.bindings.openssl.binding",
    "packaging.specifiers",
    "configparser",
    "tarfile",
    "curses",
    "difflib",
    "getpass",
    "multiprocessing.queues",
    # Target-side code (module utilities), which reads no configuration.
    "ansible.module_utils.basic",
    "ansible.module_utils.facts.compat",
    "ansible.module_utils.facts.default_collectors",
    "ansible.module_utils.urls",  # kubernetes.core's and operator_sdk.util's modules import it
    "urllib3",
    "requests",
    "kubernetes.client",
    "kubernetes.config",
    "kubernetes.dynamic",
    "kubernetes.stream",
    "jsonpatch",
)
# Modules that read Ansible's configuration (environment, ansible.cfg) when imported: a run, or a
# zygote, imports them in its own; imported here, every run would have the server's.
CONFIGURED_WHEN_IMPORTED = (
    "ansible.constants",
    "ansible.plugins.loader",
    "ansible.cli",
    "ansible.executor.task_queue_manager",
    "ansible.utils.display",
)
REQUEST_READ_TIMEOUT = 10.0  # seconds for the operator to send a request it announced
_MAX_REQUEST = 64 * 1024 * 1024
_FDS_PER_REQUEST = 3
MAX_ZYGOTES = 4  # kinds of run with a zygote at once; the least recently used goes first
MAX_MISFITS = 3  # zygotes of a kind whose runs found them not fitting; then that kind gets none
_PR_SET_PDEATHSIG = 1


@dataclass
class _Child:
    pid: int
    conn: socket.socket
    kind: str


@dataclass
class _Zygote:
    kind: str
    pid: int
    control: socket.socket  # the server's end
    stamp: tuple[int, int, int]  # of the record it was started from
    digest: str
    ready: bool = False
    used: float = 0.0  # time.monotonic() of its last run, or of its start


def preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name is None or not (name == err.name or name.startswith(err.name + ".")):
                # present, but what it imports is not: broken
                notices.tell("preload-failed", f"{name}: {err!r}")
        except Exception as err:  # the run imports it again, or fails as it would cold
            notices.tell("preload-failed", f"{name}: {err!r}")
    if patches.on("module-exec"):  # before the config manager's import sets the controller's
        from ansible_operator.runner.warm.patches import module_exec

        module_exec.keep_module_side()
    patches.install("parsed-yaml")
    self_check()


def self_check(modules: Collection[str] | None = None) -> None:
    """Exit, in one line, if this server imported what reads Ansible's configuration."""
    loaded = sys.modules if modules is None else modules
    found = [name for name in CONFIGURED_WHEN_IMPORTED if name in loaded]
    if found:
        raise SystemExit(
            f"the warm runner's fork server imported {', '.join(found)}, which read Ansible's "
            "configuration when imported: its runs would not read their own (a bug; use "
            "--runner=cold)"
        )


class Server:
    """Forks runs, or hands them to the zygote of their kind (zygote.py); a zygote serves its
    runs with `zygotes=False`."""

    def __init__(
        self, control: socket.socket, *, zygotes: bool = True, zygote_idle: float = 0.0
    ) -> None:
        self.control = control
        self.zygote_idle = zygote_idle  # seconds unused after which a zygote goes
        self.selector = selectors.DefaultSelector()
        self.running = 0  # runs and zygotes forked, not yet ended
        self.accepting = True
        self.with_zygotes = zygotes and patches.on("zygote")
        self.zygotes: dict[str, _Zygote] = {}  # by kind, least recently used first
        self.refused: set[str] = set()  # digests of the records whose zygote refused
        # By kind: zygotes a run found not fitting (it removed their record). Runs whose
        # configuration keeps changing (a relative path in a setting, each CR's own directory)
        # would otherwise pay a new ansible-playbook every other run.
        self.misfits: collections.Counter[str] = collections.Counter()

    def serve(self) -> None:
        """Answer requests until stdin or the control socket closes, then wait for the runs and
        zygotes under way to end."""
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is for the operator to handle
        self.selector.register(0, selectors.EVENT_READ, "stdin")
        self.selector.register(self.control, selectors.EVENT_READ, "control")
        while self.accepting or self.running:
            for key, _ in self.selector.select(self._until_a_zygote_idles()):
                if key.data == "stdin":
                    if not os.read(0, 4096):  # the operator let this server go, or is gone
                        self._stop_accepting()
                elif key.data == "control":
                    self._accept()
                elif isinstance(key.data, _Zygote):  # it says it is ready, or it ended
                    ready = key.data
                    with contextlib.suppress(OSError):
                        ready.ready = ready.control.recv(16) == b"ready"
                    if not ready.ready:
                        self._let_go(ready)
                else:
                    self._ended(key.fd, key.data)

    def _until_a_zygote_idles(self) -> float | None:
        """Let go the zygotes idle for `zygote_idle` seconds; seconds until the next one is."""
        now = time.monotonic()
        for idle in [z for z in self.zygotes.values() if now - z.used >= self.zygote_idle]:
            self._let_go(idle)
        if not self.zygotes:
            return None
        return min(z.used for z in self.zygotes.values()) + self.zygote_idle - now

    def _stop_accepting(self) -> None:
        if self.accepting:
            self.accepting = False
            self.selector.unregister(0)
            self.selector.unregister(self.control)
            for started in list(self.zygotes.values()):
                self._let_go(started)

    def _ended(self, pidfd: int, what: _Child | tuple[str, _Zygote]) -> None:
        self.selector.unregister(pidfd)
        os.close(pidfd)
        self.running -= 1
        if isinstance(what, _Child):
            _, status = os.waitpid(what.pid, 0)
            _reply(what.conn, {"status": status})
            what.conn.close()
            if self.with_zygotes:  # its run may have just recorded its kind: start the zygote
                self._zygote_for(what.kind)
            return
        _, ended = what
        _, status = os.waitpid(ended.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            self.refused.add(ended.digest)
            notices.tell(
                "zygote-refused",
                f"exit status {os.waitstatus_to_exitcode(status)} (its output is above)",
            )
        self._let_go(ended)

    def _accept(self) -> None:
        """Receive one request (its kind, and three descriptors) and fork its run, or hand it
        to its kind's zygote."""
        message, fds = b"", list[int]()
        with contextlib.suppress(OSError):
            message, fds, _, _ = socket.recv_fds(self.control, 64, _FDS_PER_REQUEST)
        if not message and not fds:  # the other end closed
            self._stop_accepting()
            return
        try:
            if len(fds) != _FDS_PER_REQUEST:
                return
            kind = message.decode(errors="replace")
            ready = self._zygote_for(kind) if self.with_zygotes else None
            if ready is not None:
                try:
                    socket.send_fds(ready.control, [message], fds)
                    return
                except OSError:
                    self._let_go(ready)
            self._fork_run(kind, fds)
        finally:
            for fd in fds:
                os.close(fd)

    def _fork_run(self, kind: str, fds: list[int]) -> None:
        conn = socket.socket(fileno=os.dup(fds[0]))
        try:
            request = _read_request(conn)
            request["kind"] = kind
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(request, fds[1], fds[2])  # never returns
            _reply(conn, {"pid": pid})
        except (OSError, ValueError) as err:
            _reply(conn, {"error": str(err)})
            conn.close()
            return
        self.selector.register(os.pidfd_open(pid), selectors.EVENT_READ, _Child(pid, conn, kind))
        self.running += 1

    def _zygote_for(self, kind: str) -> _Zygote | None:
        """The ready zygote of this kind; starts one if the kind has a usable record."""
        stamp = _stamp(zygote.record_path(kind))
        current = self.zygotes.get(kind)
        if current is not None and current.stamp != stamp:  # its record was removed or replaced
            self._let_go(current)
            current = None
            if stamp is None:  # its run found it not fitting (zygote.fits)
                self.misfits[kind] += 1
                if self.misfits[kind] == MAX_MISFITS:
                    notices.tell("zygote-given-up", f"kind {kind}, after {MAX_MISFITS} misfits")
        if current is not None:
            self.zygotes[kind] = self.zygotes.pop(kind)  # now the most recently used
            current.used = time.monotonic()
            return current if current.ready else None
        if stamp is None or not self.accepting or self.misfits[kind] >= MAX_MISFITS:
            return None
        record = zygote.read_record(kind)
        if record is None or record.digest in self.refused:
            return None
        while len(self.zygotes) >= MAX_ZYGOTES:
            self._let_go(next(iter(self.zygotes.values())))
        self._start_zygote(kind, record, stamp)
        return None

    def _start_zygote(self, kind: str, record: zygote.Record, stamp: tuple[int, int, int]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _zygote_process(record, theirs)  # never returns
        theirs.close()
        started = _Zygote(kind, pid, ours, stamp, record.digest, used=time.monotonic())
        self.zygotes[kind] = started
        self.selector.register(ours, selectors.EVENT_READ, started)
        self.selector.register(os.pidfd_open(pid), selectors.EVENT_READ, ("zygote", started))
        self.running += 1

    def _let_go(self, started: _Zygote) -> None:
        """Hand no more runs to a zygote; it exits once the runs it forked have ended."""
        if self.zygotes.get(started.kind) is started:
            del self.zygotes[started.kind]
        if started.control.fileno() != -1:
            self.selector.unregister(started.control)
            started.control.close()


def _stamp(path: Path | None) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path) if path is not None else None
    except OSError:
        return None
    return None if info is None else (info.st_mtime_ns, info.st_size, info.st_ino)


def _zygote_process(record: zygote.Record, control: socket.socket) -> None:
    """A new zygote: the controller imported as `record`'s run did, then the runs of its kind
    forked on request. It dies with the server, and its runs are then reported lost, as the
    server's are. Never returns; exits with zygote.REFUSED if its imports printed or failed."""

    def zygote_program() -> None:
        _die_with_parent()
        os.closerange(3, control.fileno())
        os.closerange(control.fileno() + 1, os.sysconf("SC_OPEN_MAX"))
        zygote.prepare(record)
        try:
            control.send(b"ready")
        except OSError:  # the server went while this zygote prepared (the operator stopped)
            return
        Server(control, zygotes=False).serve()

    run_as_program(zygote_program)  # its own atexit hooks (its local temporary directory) run


def _die_with_parent() -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:  # the server died before that took effect
        os._exit(zygote.REFUSED)


def _read_request(conn: socket.socket) -> dict[str, Any]:
    conn.settimeout(REQUEST_READ_TIMEOUT)
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk or len(data) > _MAX_REQUEST:
            raise ValueError("incomplete run request")
        data += chunk
    request = json.loads(data)
    if not isinstance(request, dict):
        raise ValueError("a run request must be a JSON object")
    return request


def _reply(conn: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the operator gave up on the run
        conn.sendall(json.dumps(message).encode() + b"\n")


def _child(request: dict[str, Any], output: int, lock: int) -> None:
    """The run's process: alone in a session, with the run's descriptors only, then the run.
    Never returns."""

    def run() -> None:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        # Everything else of the server's goes (its sockets stay referenced, never closed twice:
        # the child ends with os._exit).
        os.closerange(3, lock)
        os.closerange(lock + 1, os.sysconf("SC_OPEN_MAX"))
        from ansible_operator.runner.warm import child

        sys.exit(child.run(request, lock))

    run_as_program(run)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    patches.off = frozenset(name for name in sys.argv[4].split(",") if name)
    notices.path = sys.argv[5]
    # What this server's runs keep for each other (cachedir.py); gone with the server.
    cachedir.directory = sys.argv[2]
    try:
        preload()
        Server(control, zygote_idle=float(sys.argv[3])).serve()
    finally:
        shutil.rmtree(cachedir.directory, ignore_errors=True)


if __name__ == "__main__":
    main()
