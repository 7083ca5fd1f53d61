"""``ansible-playbook`` for molecule's playbooks, with module tasks on localhost kept warm.

``dev molecule`` puts this first on molecule's PATH as ``ansible-playbook``. It is Ansible's own CLI
with two differences, both taken from the warm runner: the Kubernetes client and the other slow
imports of kubernetes.core are imported once, before Ansible forks its workers, and Python module
tasks on the local connection run in forks of the worker (`runner.warm.modules`) instead of a new
interpreter each, where the warm runner's patches were tested on the installed releases (one line
says which are left off). A kubernetes.core task or lookup then costs a fork and its API calls, not
a Python start and the client's imports (about a second each). What the playbooks do and report is
unchanged; plain ``molecule test`` runs the same playbooks with the stock ``ansible-playbook``."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from ansible_operator.runner import warm_playbook_process

PROGRAM = "ansible-playbook"


def install(bin_dir: Path) -> Path:
    """Write the ``ansible-playbook`` program into ``bin_dir`` (to go first on PATH)."""
    program = bin_dir / PROGRAM
    program.write_text(
        f"#!{sys.executable}\nfrom ansible_operator.dev.playbook import main\nmain()\n"
    )
    program.chmod(program.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return program


def main() -> None:
    if "--version" not in sys.argv[1:]:
        off = warm_playbook_process()
        if off:
            untested = ", ".join(sorted(off))
            print(
                f"ansible-operator: warm patches off (untested here): {untested}", file=sys.stderr
            )
    # Ansible reports and re-executes itself under this name: the stock one beside this Python.
    sys.argv[0] = os.path.join(os.path.dirname(sys.executable), PROGRAM)
    from ansible.cli.playbook import main as playbook

    playbook()
