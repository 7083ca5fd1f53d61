"""Module tasks on localhost without a new interpreter: the warm runs' `local` connection.

With pipelining, Ansible runs a Python module on the local connection as `/bin/sh -c '[VAR=value
...] <python> && sleep 0'` (ansible-core 2.21 leaves out the `&& sleep 0`) with the AnsiballZ
payload on stdin. When `<python>` is this very
interpreter (the inventory's default: Ansible's own Python), the payload runs in a fork of the
calling Ansible worker instead: that process has imported Ansible and the Kubernetes client.
Collections' module utilities (kubernetes.core's) are imported in each module's fork, from code
compiled once (patches/code_cache.py): a worker is a new fork for each task, and importing them once
per run in ansible-playbook instead saved about 2% of a memcached run's CPU (measured), and would
cost a run that uses none. The fork gets the payload's stdin, stdout and stderr on pipes and its
exit status goes back as the command's; it is a copy, so nothing a module changes (its arguments in
`basic._ANSIBLE_ARGS`, caches, the environment, the working directory) outlives it. Anything else
(become, other commands, another Python) goes to the builtin local connection unchanged.

patches/module_exec.py routes the `local` connection's commands here, in the process of a warm run
only.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shlex
import sys
from collections.abc import Callable

from ansible_operator.runner.warm import proctitle
from ansible_operator.runner.warm.patches import run_environment
from ansible_operator.runner.warm.program import as_new_interpreter, run_as_program

_ASSIGNMENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
IN_PROCESS_ENV = "ANSIBLE_OPERATOR_WARM_MODULE"
"""Set in the environment of a module run in-process, so a test can tell how it ran."""


def in_process_command(cmd: str | bytes, python: str) -> dict[str, str] | None:
    """The variables to set if `cmd` is a pipelined run of `python`, else None.

    Accepts exactly `/bin/sh -c '[NAME=value ...] <python>'`, with or without a trailing
    `&& sleep 0` (ansible-core 2.20 and older append it, 2.21 no longer does), in any shell, where
    `<python>` names the same file as `python` in the same directory (a venv's python3 beside its
    python, not another venv's).
    """
    if isinstance(cmd, bytes):
        cmd = cmd.decode("utf-8", errors="surrogateescape")
    try:
        outer = shlex.split(cmd)
        if len(outer) != 3 or outer[1] != "-c":
            return None
        inner = shlex.split(outer[2])
    except ValueError:
        return None
    if inner[-3:] == ["&&", "sleep", "0"]:
        inner = inner[:-3]
    if not inner:
        return None
    *assignment_words, interpreter = inner
    assignments: dict[str, str] = {}
    for word in assignment_words:
        name, sep, value = word.partition("=")
        if not sep or not name or not set(name) <= _ASSIGNMENT_CHARS or name[0].isdigit():
            return None
        assignments[name] = value
    if not same_python(interpreter, python):
        return None
    return assignments


def same_python(interpreter: str, python: str) -> bool:
    """Whether `interpreter` is `python`: the same file, in the same directory (a venv's python3
    beside its python, not another venv's; a directory reached through a link is itself: the
    `.venv` link to `.venv-py3.12`)."""
    if not os.path.isabs(interpreter):
        return False
    if _directory(interpreter) != _directory(python):
        return False
    try:
        return os.path.samefile(interpreter, python)
    except OSError:
        return False


def _directory(executable: str) -> str:
    """The real directory of `executable` (the file itself may be a link: a venv's python is)."""
    return os.path.realpath(os.path.dirname(os.path.abspath(executable)))


def run_payload(
    payload: bytes, assignments: dict[str, str], module_side: Callable[[], None]
) -> tuple[int, bytes, bytes]:
    """Run an AnsiballZ payload in a fork of this process; returns (status, stdout, stderr).

    The child's stdin is empty, as for `python -` once it has read the payload; `module_side`
    puts back, in the child, what Ansible's controller changed for modules (patches/module_exec).
    """
    stdin_r, stdin_w = os.pipe()
    os.close(stdin_w)
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _payload_child(payload, assignments, module_side, (stdin_r, stdout_w, stderr_w))
    for fd in (stdin_r, stdout_w, stderr_w):
        os.close(fd)
    stdout, stderr = _read_both(stdout_r, stderr_r)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), stdout, stderr


def _payload_child(
    payload: bytes,
    assignments: dict[str, str],
    module_side: Callable[[], None],
    fds: tuple[int, int, int],
) -> None:
    """The module's process (never returns); `fds` become its stdin, stdout and stderr."""
    stdin, stdout, stderr = fds

    def module() -> None:
        os.dup2(stdin, 0)
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        as_new_interpreter()
        os.environ.update(assignments)
        os.environ[IN_PROCESS_ENV] = "1"
        run_environment.reread()
        with contextlib.suppress(RuntimeError):  # then /proc shows the worker's: same marker
            proctitle.show_as([sys.executable], os.environ)
        sys.argv = ["-"]  # as `python -`; two arguments would select AnsiballZ's debug mode
        _as_in_a_new_interpreter()
        module_side()
        namespace = {"__name__": "__main__", "__builtins__": __builtins__}
        exec(compile(payload, "<AnsiballZ>", "exec"), namespace)

    run_as_program(module)


def _as_in_a_new_interpreter() -> None:
    """Leave the module nothing of its worker's that a new interpreter would not have: the
    collections' module code the worker imported (kubernetes.core's pool of API clients with
    it) and the Kubernetes client's default configuration. The worker's descriptors (its
    sockets) are closed already."""
    for name in [n for n in sys.modules if _collection_code(n)]:
        del sys.modules[name]
    configuration = getattr(sys.modules.get("kubernetes.client"), "Configuration", None)
    if configuration is not None:
        configuration.set_default(None)


def _collection_code(name: str) -> bool:
    """Whether `name` is a collection's module utility or module (its packages, which the
    collection loader made for the worker and announced to the controller, stay)."""
    parts = name.split(".")
    return parts[0] == "ansible_collections" and parts[3:5] in (
        ["plugins", "module_utils"],
        ["plugins", "modules"],
    )


def _read_both(stdout: int, stderr: int) -> tuple[bytes, bytes]:
    """Read the child's stdout and stderr to their ends."""
    out: dict[int, list[bytes]] = {stdout: [], stderr: []}
    with selectors.DefaultSelector() as selector:
        selector.register(stdout, selectors.EVENT_READ)
        selector.register(stderr, selectors.EVENT_READ)
        while selector.get_map():
            for key, _ in selector.select():
                chunk = os.read(key.fd, 65536)
                if chunk:
                    out[key.fd].append(chunk)
                else:
                    selector.unregister(key.fd)
                    os.close(key.fd)
    return b"".join(out[stdout]), b"".join(out[stderr])
