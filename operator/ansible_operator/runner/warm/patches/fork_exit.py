"""A forked process's exit hooks: its parent's dropped, its own run (CPython's private atexit API).

A fork inherits the exit hooks its parent registered (the operator's, the fork server's, the
worker's); they must not run again in the child, and the hooks the child itself registers must
run at its end, as at a new interpreter's exit (Ansible removes its local temporary directory in
one). The atexit module has no public call for either.

One hook a new interpreter would have is not the child's own: multiprocessing's, registered when
the parent imported it, which removes the directory multiprocessing makes under TMPDIR (2.21's
ansible-playbook puts its RPC server's socket there). Running that hook in the child would also
run multiprocessing's finalizers and join its children, which the fork's parent owns; so only the
directory is removed here, when this process made it.
"""

from __future__ import annotations

import atexit
import shutil
import sys

_inherited_tempdir: object = None


def forget_inherited() -> None:
    global _inherited_tempdir
    atexit._clear()
    _inherited_tempdir = _mp_tempdir()


def run_own() -> None:
    """Run the hooks registered since `forget_inherited`, then remove multiprocessing's
    directory if this process made one; prints a hook's exception, as the interpreter does."""
    atexit._run_exitfuncs()
    made = _mp_tempdir()
    if isinstance(made, str) and made != _inherited_tempdir:
        shutil.rmtree(made, ignore_errors=True)


def _mp_tempdir() -> object:
    """multiprocessing's directory under TMPDIR for this process, if it made or inherited one."""
    if "multiprocessing.process" not in sys.modules:
        return None
    from multiprocessing import process

    return process.current_process()._config.get("tempdir")  # type: ignore[attr-defined]
