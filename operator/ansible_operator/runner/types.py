"""The contract between the reconciler and whatever runs Ansible: a request in, a result out.

A `Runner` has one coroutine, `run(request, on_event=None)`. The request carries plain values
(paths, variables, limits) and nothing about watches or Kubernetes, so the cold implementation
(one ansible-runner process per run) and the warm one (forks of a process that has imported what
runs need) are swapped without touching the caller. Events stream to `on_event` while the run
goes on, for live logs; the verdict comes back in `RunResult.outcome`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ansible_operator.runner.events import RunOutcome

EventCallback = Callable[[dict[str, Any]], None]
"""Called once per job event, in counter order, while the run goes on. Must not block."""

Logger = logging.Logger | logging.LoggerAdapter[Any]


class RunnerError(Exception):
    """A run could not be started at all (as opposed to a run that failed); one clear line."""


class AnsibleRunnerNotFound(RunnerError):
    """The `ansible-runner` executable is missing."""


@dataclass(frozen=True)
class RunRequest:
    """One Ansible run for one custom resource.

    Exactly one of `playbook` (a file) and `role` (a role directory) is set; relative paths are
    taken from the current directory. `rotate_artifacts` is how many artifact dirs to keep
    (0 keeps all). `skip_facts` applies to role runs; None means "skip when ANSIBLE_GATHERING is
    explicit" in the run's environment, as upstream. `timeout` is in seconds (None: no limit).
    `extra_env` is added to the operator's environment for this run only. `ansible_args` is
    `--ansible-args` as given: the input dir strips one surrounding pair of single quotes.
    """

    ident: str
    private_data_dir: Path
    extravars: Mapping[str, Any]
    kubeconfig: str
    playbook: str | None = None
    role: str | None = None
    verbosity: int = 0
    rotate_artifacts: int = 20
    skip_facts: bool | None = None
    ansible_args: str = ""
    timeout: float | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.playbook is None) == (self.role is None):
            raise ValueError("RunRequest needs exactly one of playbook and role")
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError(f"RunRequest timeout must be positive, not {self.timeout}")


@dataclass(frozen=True)
class RunResult:
    """How a run ended. `outcome.ok` is the verdict; the rest says how the process ended.

    `rc` is ansible-runner's exit status (negative: killed by that signal). A timed-out run has
    `timed_out=True` and a failure saying so in `outcome.failures`. `duration` is the wall time
    of the Ansible process alone, in seconds. The paths point into the artifacts of this run;
    `stdout_path` may not exist if Ansible never started.
    """

    outcome: RunOutcome
    rc: int | None
    timed_out: bool
    artifact_dir: Path
    stdout_path: Path
    runner_output_path: Path
    duration: float

    @property
    def ok(self) -> bool:
        return self.outcome.ok and not self.timed_out


class Runner(Protocol):
    """Runs Ansible for one request; implementations must leave no process behind on return,
    on timeout and on cancellation, and never run two requests for one `private_data_dir` at
    once, even from two operator processes (see runlock.py)."""

    async def run(
        self,
        request: RunRequest,
        on_event: EventCallback | None = None,
        *,
        logger: Logger | None = None,
    ) -> RunResult: ...
