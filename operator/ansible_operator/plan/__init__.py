"""``ansible-operator plan``: what the operator would change, without changing it.

It sits beside ``dev`` above the runtime: each CR's role runs as the operator would run it
(``runtime.control.session``, the same extra vars, flags and environment), in Ansible's check
and diff modes, through a proxy that makes every write a server-side dry run (``proxy``), and
what those writes would have done is read by ``core.plan``. ``command.add_parser`` is what the
CLI uses.
"""

from ansible_operator.plan import command

__all__ = ["command"]
