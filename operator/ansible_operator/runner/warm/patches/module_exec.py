"""Module tasks on localhost in forks of their worker: Ansible's `local` connection patched.

`install()` makes the builtin `local` connection's `exec_command` run a pipelined module of this
very interpreter through warm/modules.py, in the process of a warm run only; anything else
(become, other commands, another Python) goes to the builtin unchanged.
"""

from __future__ import annotations

import sys
from typing import Any

from ansible_operator.runner.warm.modules import in_process_command, run_payload


def install() -> None:
    """Make the builtin `local` connection run this interpreter's Python modules in forks."""
    from ansible.plugins.connection import local

    builtin = local.Connection.exec_command
    if getattr(builtin, "warm", False):
        return

    def exec_command(
        self: Any, cmd: str, in_data: bytes | None = None, sudoable: bool = True
    ) -> tuple[int, bytes, bytes]:
        assignments = in_process_command(cmd, sys.executable)
        if assignments is None or not in_data or (self.become is not None and sudoable):
            return builtin(self, cmd, in_data=in_data, sudoable=sudoable)
        # What the builtin does before running anything (connect, display the command).
        super(local.Connection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)
        local.display.vvv(f"EXEC (in-process) {cmd}", host=self._play_context.remote_addr)
        return run_payload(in_data, assignments)

    exec_command.warm = True  # type: ignore[attr-defined]
    local.Connection.exec_command = exec_command
