"""Development commands around the runtime: the operator launcher, ``dev run`` and ``dev molecule``.

They sit above ``devcluster`` (they start the local cluster) and never load in the operator.
The command line's part (``command.add_parser``) is what others use.
"""

from ansible_operator.dev import command

__all__ = ["command"]
