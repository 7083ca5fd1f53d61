"""Development commands around the runtime: the operator launcher, ``dev run`` and ``dev molecule``,
and ``runs`` (the operator's run records in the terminal).

They sit above ``devcluster`` (they start the local cluster) and never load in the operator.
The command lines' parts (``command.add_parser``, ``runs_command.add_parser``) are what others
use.
"""

from ansible_operator.dev import command, runs_command

__all__ = ["command", "runs_command"]
