"""The fork server of the warm runner: a long-lived process that forks one child per run.

It is started by `WarmRunner` (warm.py) as `python -m ansible_operator.runner.forkserver`, imports
once what is slow to import and reads no per-run configuration (ansible-runner, pexpect, jinja2,
yaml, the Kubernetes client, cryptography...), and then waits. Nothing of Ansible's controller is
imported here: `ansible.constants` and the plugin loaders read the environment and ansible.cfg
when imported, so each run imports them itself, in its own environment (see warmrun.py).

Its second argument is the directory where its runs keep what they reuse (kept.py), removed when
it exits. Protocol, over the SOCK_SEQPACKET socket given as the first argument (its descriptor
number): each message carries three descriptors, a stream socket for the run, its output file
and its run lock. The run socket brings one JSON line (argv, env, cwd, marker); the server
forks, answers with `{"pid": N}` and, when the child ends, `{"status": <wait status>}`. End of
file on stdin (the operator let it go, or is gone) stops the server once the runs it forked have
ended.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import selectors
import shutil
import signal
import socket
import sys
import traceback
from dataclasses import dataclass
from typing import Any

from ansible_operator.runner import kept, parsedyaml

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
REQUEST_READ_TIMEOUT = 10.0  # seconds for the operator to send a request it announced
_MAX_REQUEST = 64 * 1024 * 1024
_FDS_PER_REQUEST = 3


@dataclass
class _Child:
    pid: int
    conn: socket.socket


def preload() -> None:
    for name in PRELOAD:
        with contextlib.suppress(Exception):  # missing or broken: the run imports it, or fails
            importlib.import_module(name)
    parsedyaml.install()


def serve(control: socket.socket) -> None:
    """Answer requests until stdin closes, then report the runs under way as they end."""
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is for the operator to handle
    selector = selectors.DefaultSelector()
    selector.register(0, selectors.EVENT_READ, "stdin")
    selector.register(control, selectors.EVENT_READ, "control")
    running = 0
    accepting = True
    while accepting or running:
        for key, _ in selector.select():
            if key.data == "stdin":
                if not os.read(0, 4096):  # the operator let this server go, or is gone
                    accepting = False
                    selector.unregister(0)
                    selector.unregister(control)
            elif key.data == "control":
                child = _accept(control)
                if child is not None:
                    selector.register(os.pidfd_open(child.pid), selectors.EVENT_READ, child)
                    running += 1
            else:
                child = key.data
                selector.unregister(key.fd)
                os.close(key.fd)
                _, status = os.waitpid(child.pid, 0)
                _reply(child.conn, {"status": status})
                child.conn.close()
                running -= 1


def _accept(control: socket.socket) -> _Child | None:
    """Receive one request and fork its run; None if the request was unusable."""
    fds: list[int] = []
    with contextlib.suppress(OSError):
        _, fds, _, _ = socket.recv_fds(control, 16, _FDS_PER_REQUEST)
    if len(fds) != _FDS_PER_REQUEST:
        for fd in fds:
            os.close(fd)
        return None
    conn = socket.socket(fileno=fds[0])
    output, lock = fds[1], fds[2]
    try:
        request = _read_request(conn)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request, output, lock)  # never returns
        _reply(conn, {"pid": pid})
        return _Child(pid, conn)
    except (OSError, ValueError) as err:
        _reply(conn, {"error": str(err)})
        conn.close()
        return None
    finally:
        os.close(output)
        os.close(lock)


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
    """The run's process: alone in a session, with the run's descriptors only, then the run."""
    code = 1
    atexit._clear()  # the server's; the run's own run at its end, as in a new interpreter
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        # Everything else of the server's goes (its sockets stay referenced, never closed twice:
        # the child ends with os._exit).
        os.closerange(3, lock)
        os.closerange(lock + 1, os.sysconf("SC_OPEN_MAX"))
        from ansible_operator.runner import warmrun

        code = warmrun.run(request, lock)
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    preload()
    # What this server's runs keep for each other (kept.py); gone with the server.
    kept.directory = sys.argv[2]
    try:
        serve(control)
    finally:
        shutil.rmtree(kept.directory, ignore_errors=True)


if __name__ == "__main__":
    main()
