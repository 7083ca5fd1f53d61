"""The warm runner: runs forked from a process that has already imported what runs need.

`client` (WarmRunner, in the operator) asks `server` (the fork server) for each run; the run is a
`child` of it, or of a `zygote` that imported Ansible's controller for its kind of run; module
tasks on localhost run in forks of their worker (`modules`); `program` makes each fork behave as a
new interpreter, `proctitle` shows its own command line and environment, `cachedir` holds what
runs keep for each other. Everything that touches other projects' private parts is in `patches`.
"""

from __future__ import annotations


def warm_playbook_process() -> frozenset[str]:
    """Make this process an ``ansible-playbook`` with what the warm runs have, for `dev molecule`:
    the slow imports done once, and module tasks on localhost run in forks of their worker
    where the patches were tested. The patches left off (untested here) are returned."""
    from ansible_operator.runner.warm import patches, server

    patches.off = frozenset(patches.check(patches.installed()))
    server.preload()
    if not patches.falls_back(patches.off):
        patches.install("module-exec")
    return patches.off
