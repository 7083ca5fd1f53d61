"""A forked process's exit hooks: its parent's dropped, its own run (CPython's private atexit API).

A fork inherits the exit hooks its parent registered (the operator's, the fork server's, the
worker's); they must not run again in the child, and the hooks the child itself registers must
run at its end, as at a new interpreter's exit (Ansible removes its local temporary directory in
one). The atexit module has no public call for either.
"""

from __future__ import annotations

import atexit


def forget_inherited() -> None:
    atexit._clear()


def run_own() -> None:
    """Run the hooks registered since `forget_inherited`; prints a hook's exception, as the
    interpreter does."""
    atexit._run_exitfuncs()
