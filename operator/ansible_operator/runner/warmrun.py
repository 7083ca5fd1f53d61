"""One warm run, inside the child the fork server forked for it: `ansible-runner run` in-process.

The child takes the run's environment, working directory and process marker, then calls
ansible-runner's own command-line entry point with the cold runner's arguments, so the input dir,
`job_events`, artifacts and rotation are ansible-runner's own work, as in a cold run. Only its
start of `ansible-playbook` changes: pexpect still forks the child on a pseudo-terminal, but
that child runs ansible-playbook's CLI in-process instead of exec-ing a new interpreter. Ansible
itself is first imported there, in the run's environment, so ansible.cfg and every ANSIBLE_*
variable are read per run. Module tasks on localhost then run in forks of Ansible's worker
processes (warmexec.py), from packages kept across runs (ansiballzcache.py); plugin
documentation is parsed (plugindocs.py), collection code compiled (codecache.py) and templates
compiled (templatecache.py) once for all runs, and the strategy takes task results as they arrive
(resultwait.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from ansible_operator.runner import (
    ansiballzcache,
    codecache,
    plugindocs,
    proctitle,
    resultwait,
    templatecache,
    warmexec,
    zygote,
)
from ansible_operator.runner.warmexec import as_new_interpreter, exit_code, run_as_program


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
    import pexpect

    kind = str(request.get("kind") or "")
    pexpect.spawn = _in_process_spawn_class(pexpect.spawn, kind)  # type: ignore[misc]
    from ansible_runner.__main__ import main

    sys.argv = argv
    try:
        return int(main(argv[1:]) or 0)
    except SystemExit as exit_:
        return exit_code(exit_)


def _take_environment(env: Mapping[str, str]) -> None:
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in env.items()})
    warmexec.reread_environment()


def _in_process_spawn_class(base: type, kind: str) -> type:
    """pexpect.spawn, but `ansible-playbook` runs in the forked child instead of being exec-ed."""

    class InProcessSpawn(base):  # type: ignore[valid-type,misc]
        def _spawn(
            self,
            command: str,
            args: list[str] | None = None,
            preexec_fn: Any = None,
            dimensions: Any = None,
        ) -> Any:
            args = list(args or [])
            if os.path.basename(command) == "ansible-playbook":
                argv = [command, *args]
                env = self.env if self.env is not None else os.environ
                previous = preexec_fn

                def run_playbook() -> None:
                    if previous is not None:
                        previous()
                    _playbook_child(argv, dict(env), kind)

                preexec_fn = run_playbook
            return super()._spawn(command, args, preexec_fn, dimensions)

        def close(self, force: bool = True) -> None:
            # ptyprocess pauses 100 ms after closing the terminal, for a child still to notice the
            # hangup; a playbook that has already ended (every run's case) has nothing to notice.
            if not self.isalive():
                self.ptyproc.delayafterclose = 0
            super().close(force)

    return InProcessSpawn


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
        warmexec.install()
        ansiballzcache.install()
        plugindocs.install()
        codecache.install()
        templatecache.install()
        resultwait.install()
        from ansible.cli.playbook import main

        try:
            main(argv)
        finally:
            if zygote.snapshot is None and kind:
                zygote.write_record(kind, env, cwd)

    run_as_program(playbook)
