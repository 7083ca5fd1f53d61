"""A forked process's exit hooks: its parent's dropped, its own run (CPython's private atexit API).

A fork inherits the exit hooks its parent registered (the operator's, the fork server's, the
worker's); they must not run again in the child, and the hooks the child itself registers must
run at its end, as at a new interpreter's exit (Ansible removes its local temporary directory in
one). The atexit module has no public call for either.
"""

from __future__ import annotations

import atexit
import sys


def forget_inherited() -> None:
    """Drop the parent's hooks, keeping those a new interpreter's imports would register: a module
    the parent imported (the fork server preloads them) registers its hook only once, in the
    parent. multiprocessing's removes the directory of 2.21's RPC socket (pymp-*) and runs only
    this process's finalizers; it also stops and joins the process's multiprocessing children,
    so the parent's are forgotten first, as multiprocessing's own children do."""
    atexit._clear()
    mp_util = sys.modules.get("multiprocessing.util")
    if mp_util is not None:
        from multiprocessing import process  # imported with multiprocessing.util

        process._children = set()  # type: ignore[attr-defined]
        atexit.register(mp_util._exit_function)


def run_own() -> None:
    """Run the hooks registered since `forget_inherited`; prints a hook's exception, as the
    interpreter does."""
    atexit._run_exitfuncs()
