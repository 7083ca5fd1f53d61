"""A `Runner` that returns scripted outcomes instead of running Ansible, for unit tests.

Each run takes the next item of the script: a `RunResult` to return or an exception to raise.
``during`` is called while the run "goes on", with the request, so a test can change the
world mid-run (delete the CR, write its status) the way a role or a user would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from ansible_operator.runner import (
    AnsibleResult,
    EventCallback,
    FailedTask,
    RunOutcome,
    RunRequest,
    RunResult,
)


class ScriptedRunner:
    def __init__(
        self,
        script: Iterable[RunResult | Exception],
        *,
        during: Callable[[RunRequest], None] | None = None,
    ) -> None:
        self._script = iter(script)
        self.during = during
        self.requests: list[RunRequest] = []

    async def run(
        self, request: RunRequest, on_event: EventCallback | None = None, *, logger: object = None
    ) -> RunResult:
        self.requests.append(request)
        if self.during is not None:
            self.during(request)
        step = next(self._script)
        if isinstance(step, Exception):
            raise step
        return step


def result(
    *,
    failures: Iterable[FailedTask] = (),
    requeue_after: float | None = None,
    warnings: Iterable[str] = (),
    stats_received: bool = True,
    timed_out: bool = False,
) -> RunResult:
    failed = list(failures)
    counts = AnsibleResult(
        ok=2, changed=1, skipped=0, failures=len(failed), completion="2026-01-02T03:04:05.5"
    )
    outcome = RunOutcome(
        ok=stats_received and not failed,
        failures=failed,
        stats={"localhost": {"ok": 2, "changed": 1, "failures": len(failed)}},
        ansible_result=counts if stats_received else AnsibleResult(),
        requeue_after=requeue_after,
        stats_received=stats_received,
        artifact_data={},
        warnings=list(warnings),
    )
    artifacts = Path("/nonexistent/artifacts/1")
    return RunResult(
        outcome=outcome,
        rc=0 if outcome.ok else 2,
        timed_out=timed_out,
        artifact_dir=artifacts,
        stdout_path=artifacts / "stdout",
        runner_output_path=artifacts / "runner-output",
        duration=1.5,
    )


def succeeded(*, requeue_after: float | None = None, warnings: Iterable[str] = ()) -> RunResult:
    return result(requeue_after=requeue_after, warnings=warnings)


def failed(task: str = "create thing", message: str = "quota exceeded") -> RunResult:
    return result(failures=[FailedTask(task, message, "localhost")])
