"""A forked child run as a whole program: a fresh interpreter's signals, streams and exit.

The fork server's runs, its zygotes, a run's ansible-playbook and in-process modules are forks of
processes that did other work first; each runs here as a new Python would run it: default signal
dispositions, its own sys.std* on descriptors 0 to 2, its own exit hooks only, and its exit
status from its SystemExit.
"""

from __future__ import annotations

import io
import os
import signal
import sys
from collections.abc import Callable
from typing import NoReturn

from ansible_operator.runner.warm.patches import fork_exit


def run_as_program(program: Callable[[], object]) -> NoReturn:
    """Run `program` as the whole of a forked child: its `SystemExit` is the exit status, any
    other exception is printed and exits 1. Never returns: `os._exit`, so nothing
    of the parent (atexit hooks, buffered output, the event loop) runs again in the child. The
    atexit hooks the program itself registers do run at its end, as at a new interpreter's exit
    (Ansible removes its local temporary directory in one)."""
    code = 1
    fork_exit.forget_inherited()  # the parent's
    try:
        try:
            program()
            code = 0
        except SystemExit as exit_:
            code = exit_code(exit_)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            fork_exit.run_own()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def as_new_interpreter() -> None:
    """Signal dispositions and sys.std* objects as a new Python has them, in a fresh fork."""
    for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), errors="surrogateescape")
    sys.stdout = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False), line_buffering=True, errors="surrogateescape"
    )
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), line_buffering=True, errors="backslashreplace"
    )


def exit_code(exit_: SystemExit) -> int:
    """The process exit status `sys.exit()` would give for this SystemExit."""
    if exit_.code is None:
        return 0
    if isinstance(exit_.code, int):
        return exit_.code
    print(exit_.code, file=sys.stderr)
    return 1
