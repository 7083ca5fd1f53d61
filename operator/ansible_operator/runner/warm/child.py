"""One warm run, inside the child the fork server forked for it: `ansible-runner run` in-process.

The child takes the run's environment, working directory and process marker, then calls
ansible-runner's own command-line entry point with the cold runner's arguments, so the input dir,
`job_events`, artifacts and rotation are ansible-runner's own work, as in a cold run. Only its
start of `ansible-playbook` changes (patches/playbook_in_process.py): pexpect still forks the
child on a pseudo-terminal, but that child runs ansible-playbook's CLI in-process instead of
exec-ing a new interpreter. Ansible itself is first imported there, in the run's environment, so
ansible.cfg and every ANSIBLE_* variable are read per run, unless a zygote of the run's kind
(zygote.py) imported it in the same configuration. There the patches of patches/ that are on are
installed: module tasks on localhost in forks of Ansible's workers (modules.py), what runs keep
for each other (cachedir.py), results taken as they arrive.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from ansible_operator.runner.warm import patches, proctitle, zygote
from ansible_operator.runner.warm.patches import run_environment
from ansible_operator.runner.warm.program import as_new_interpreter, exit_code, run_as_program

IN_PLAYBOOK = (
    "module-exec",
    "module-packages",
    "plugin-docs",
    "code-cache",
    "template-cache",
    "result-wait",
)
"""The patches a run's ansible-playbook installs (those that are on), in this order."""


def run(request: Mapping[str, Any], lock: int) -> int:
    """Run ansible-runner for `request` (argv, env, cwd) here; returns its exit status.

    `lock` is the run lock's descriptor, held open for the whole run, as ansible-runner holds it
    in a cold run."""
    del lock  # held by being open; inherited by nothing but this process, as in a cold run
    argv = [str(a) for a in request["argv"]]
    _take_environment(request["env"])
    proctitle.show_as(argv, os.environ)  # after os.environ let go of the exec-time strings
    os.chdir(str(request["cwd"]))
    as_new_interpreter()
    kind = str(request.get("kind") or "")
    if patches.on("playbook-in-process"):
        from ansible_operator.runner.warm.patches import playbook_in_process

        playbook_in_process.install(lambda argv, env: _playbook_child(argv, env, kind))
    from ansible_runner.__main__ import main

    sys.argv = argv
    try:
        return int(main(argv[1:]) or 0)
    except SystemExit as exit_:
        return exit_code(exit_)


def _take_environment(env: Mapping[str, str]) -> None:
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in env.items()})
    run_environment.reread()


def _playbook_child(argv: list[str], env: dict[str, str], kind: str) -> None:
    """In the pseudo-terminal's child: ansible-playbook's CLI, then exit (never returns).

    Forked from a zygote (zygote.py) whose controller does not fit this run, it execs a new
    ansible-playbook instead; not forked from one, it records its kind's for the fork server."""

    def playbook() -> None:
        # ptyprocess's child left open its pipe that reports a failed exec; a run never execs,
        # so it closes here and the parent carries on.
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        as_new_interpreter()  # SIGHUP stays ignored, as pexpect asked
        _take_environment(env)
        cwd = os.getcwd()
        if zygote.snapshot is not None and not zygote.fits():
            zygote.forget(kind)
            os.execvpe(argv[0], argv, env)
        proctitle.show_as(argv, os.environ)
        sys.argv = argv
        patches.install(*IN_PLAYBOOK)
        from ansible.cli.playbook import main

        try:
            main(argv)
        finally:
            if zygote.snapshot is None and kind and patches.on("zygote"):
                zygote.write_record(kind, env, cwd)

    run_as_program(playbook)
