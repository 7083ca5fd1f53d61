"""A run's ansible-playbook as a fork of its ansible-runner: pexpect's spawn patched.

ansible-runner starts ansible-playbook through pexpect, which forks a child on a pseudo-terminal
and execs the command there. `install(run_playbook)` replaces `pexpect.spawn` with a subclass
whose child calls `run_playbook(argv, env)` instead of exec-ing `ansible-playbook` (any other
command is exec-ed as usual), in the process of a warm run only.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


def install(run_playbook: Callable[[list[str], dict[str, str]], None]) -> None:
    import pexpect

    pexpect.spawn = _in_process_spawn_class(pexpect.spawn, run_playbook)  # type: ignore[misc]


def _in_process_spawn_class(
    base: type, run_playbook: Callable[[list[str], dict[str, str]], None]
) -> type:
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

                def in_child() -> None:
                    if previous is not None:
                        previous()
                    run_playbook(argv, dict(env))

                preexec_fn = in_child
            return super()._spawn(command, args, preexec_fn, dimensions)

        def close(self, force: bool = True) -> None:
            # ptyprocess pauses 100 ms after closing the terminal, for a child still to notice the
            # hangup; a playbook that has already ended (every run's case) has nothing to notice.
            if not self.isalive():
                self.ptyproc.delayafterclose = 0
            super().close(force)

    return InProcessSpawn
