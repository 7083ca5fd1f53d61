"""One Ansible run for one custom resource: its proxy token, kubeconfig and runner input.

A run acts for its CR only: the proxy hands it a token of its own, which the kubeconfig written
for this run carries, and both are gone when the run returns, however it ends. The runner's
input (extra vars, verbosity, artifacts to keep, ``--ansible-args``, timeout, environment) is
assembled here from the watch, the flags and the CR's annotations; its observers (its log lines,
metrics, record and span: ``run_observers``) are told of it as it goes. The CR's input directory
lives until the CR is gone.

Every run's writes are recorded (``WriteLog``, by the proxy) for its record. A planned run
(``plan``: ``ansible-operator plan``, a CR held for review) is the same run in Ansible's check
and diff modes, its log one whose writes the proxy makes dry runs, so a task that ignores check
mode still cannot write.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from ansible_operator.core import (
    MAX_VERBOSITY,
    PLAN_ANSIBLE_ARGS,
    VERBOSITY_ANNOTATION,
    CRPlan,
    SpecError,
    TaskChange,
    Watch,
    WriteLog,
    build_extra_vars,
    cr_plan,
    log_verbosity,
    max_runner_artifacts,
    triggers,
    verbosity,
)
from ansible_operator.kube import kubeconfig
from ansible_operator.runner import (
    DEFAULT_BASE_DIR,
    Runner,
    RunnerError,
    RunRequest,
    RunResult,
    input_dir_path,
    new_ident,
    remove_input_dir,
    strip_ansible_args,
)
from ansible_operator.runtime.config.settings import RunSettings
from ansible_operator.runtime.observe.run_observers import Observers, Run, RunEnd

log = logging.getLogger("reconciler")


class RunProxy(Protocol):
    """The part of the API proxy a run needs: where it listens, and a token per run."""

    port: int

    def register(
        self, owner: Mapping[str, Any], watch: Watch, *, writes: WriteLog | None = None
    ) -> str: ...

    def unregister(self, token: str) -> None: ...


class RunSession:
    """Runs one watch's role or playbook (or its finalizer's) for one object at a time."""

    def __init__(
        self,
        watch: Watch,
        *,
        runner: Runner,
        proxy: RunProxy,
        settings: RunSettings,
        observers: Observers,
        runner_base: Path = DEFAULT_BASE_DIR,
        extra_env: Callable[[], Mapping[str, str]] = dict,
    ) -> None:
        self.watch = watch
        self.runner = runner
        self.proxy = proxy
        self.settings = settings
        self.observers = observers
        self.runner_base = runner_base
        self._extra_env = extra_env  # read at each run: e.g. the user metrics URL, once bound
        self._cap_said = False

    async def run(
        self,
        obj: dict[str, Any],
        trigger: triggers.Trigger,
        *,
        finalizing: bool,
        writes: WriteLog | None = None,
    ) -> RunResult:
        """Run Ansible for ``obj``, woken by ``trigger``; RunnerError when the run could not
        start, SpecError when the CR cannot be its variables (`core.extravars`: checked again
        here, and the document's size as it is written). Its writes are recorded in ``writes``
        (a new log when not given): a planned run when that log says ``dry_run``."""
        writes = WriteLog() if writes is None else writes
        meta = obj["metadata"]
        namespace, name = meta.get("namespace") or "", meta["name"]
        annotations = meta.get("annotations") or {}
        gvk = self.watch.gvk
        own_verbosity = self.settings.ansible_verbosity_for(gvk)
        run_verbosity, note = verbosity(annotations, own_verbosity)
        if note:
            log.error(note)
        annotated = VERBOSITY_ANNOTATION in annotations
        if annotated:
            run_verbosity = self._capped(run_verbosity, own_verbosity, namespace, name)
        rotate, note = max_runner_artifacts(annotations, self.watch.max_runner_artifacts)
        if note:
            log.error(note)

        playbook, role = self.watch.playbook, self.watch.role
        finalizer = self.watch.finalizer
        if finalizing and finalizer is not None and finalizer.has_own_ansible:
            playbook, role = finalizer.playbook, finalizer.role
        if playbook:
            role = None

        ident = new_ident()
        fd, kubeconfig_path = tempfile.mkstemp(prefix="kubeconfig-")
        os.close(fd)
        token = self.proxy.register(obj, self.watch, writes=writes)
        ansible_args = self.settings.ansible.ansible_args
        if writes.dry_run:
            ansible_args = f"{strip_ansible_args(ansible_args)} {PLAN_ANSIBLE_ARGS}".strip()
        try:
            kubeconfig.write(
                Path(kubeconfig_path), port=self.proxy.port, token=token, owner_namespace=namespace
            )
            extravars = build_extra_vars(obj, self.watch, finalizing=finalizing)
            request = RunRequest(
                ident=ident,
                private_data_dir=self._input_dir(namespace, name),
                extravars=extravars,
                kubeconfig=kubeconfig_path,
                playbook=playbook,
                role=role,
                verbosity=run_verbosity,
                rotate_artifacts=rotate,
                ansible_args=ansible_args,
                timeout=self.watch.run_timeout or self.settings.ansible.ansible_run_timeout,
                extra_env=dict(self._extra_env()),
            )
            run = Run(
                gvk=gvk,
                obj=obj,
                ident=ident,
                input_dir=request.private_data_dir,
                ansible=playbook or role or "",
                trigger=trigger,
                finalizing=finalizing,
                writes=writes,
                log_verbosity=min(
                    log_verbosity(annotations, self.settings.environ.get("ANSIBLE_VERBOSITY")),
                    run_verbosity if annotated else MAX_VERBOSITY,
                ),
            )
            return await self._observed(run, request)
        finally:
            self.proxy.unregister(token)
            with contextlib.suppress(OSError):
                os.unlink(kubeconfig_path)

    async def plan(
        self, obj: dict[str, Any], trigger: triggers.Trigger, *, finalizing: bool
    ) -> CRPlan:
        """What a run for ``obj`` (woken by ``trigger``) would change, from a planned run of
        it; a run that could not start or whose CR cannot be its variables is a plan that would
        fail."""
        log = WriteLog(dry_run=True)
        try:
            result = await self.run(obj, trigger, finalizing=finalizing, writes=log)
        except (RunnerError, SpecError) as err:
            return cr_plan(obj, log, failed=str(err))
        if result.ok:
            return cr_plan(obj, log, failed=None)
        why = "; ".join(result.outcome.failure_messages) or "the run failed"
        return cr_plan(obj, log, failed=why)

    def _capped(self, requested: int, own: int, namespace: str, name: str) -> int:
        """The verbosity a CR's annotation asked for, at most the watch's `maxVerbosity` (by
        default its own verbosity): how much of a run's output is kept is not the CR author's
        to decide. Said once, the first time it caps."""
        cap = own if self.watch.max_verbosity is None else self.watch.max_verbosity
        if requested <= cap:
            return requested
        if not self._cap_said:
            self._cap_said = True
            log.warning(
                f"The verbosity annotation of {namespace}/{name} asks for {requested}, more than "
                f"{self.watch.gvk.kind}'s maximum {cap}: its runs use {cap} (maxVerbosity in "
                "watches.yaml allows more); said once for this kind",
                extra={"gvk": str(self.watch.gvk)},
            )
        return cap

    async def _observed(self, run: Run, request: RunRequest) -> RunResult:
        """The run, its observers told as it starts, of each event, and as it ends."""
        listeners = self.observers.started(run)
        result = None
        outcome, error = "Interrupted", ""  # unless the run ends or fails: cancelled by a stop
        try:
            result = await self.runner.run(request, on_event=listeners.event)
            outcome = "Succeeded" if result.ok else "Failed"
            return result
        except Exception as err:
            outcome, error = "Failed", str(err)
            raise
        finally:
            if run.writes.dry_run:  # before the observers hear the end: the record keeps it
                run.writes.tasks = [
                    TaskChange(task.name, task.role, task.status)
                    for task in run.timeline.tasks
                    if task.status in ("changed", "failed")
                ]
            listeners.finished(RunEnd(result, outcome, error))

    def forget(self, namespace: str, name: str) -> None:
        """The object is gone: its runner input dir, artifacts and run records go with it."""
        remove_input_dir(self._input_dir(namespace, name), base=self.runner_base)
        self.observers.forget(self.watch.gvk, namespace, name)

    def _input_dir(self, namespace: str, name: str) -> Path:
        gvk = self.watch.gvk
        return input_dir_path(
            gvk.group, gvk.version, gvk.kind, namespace, name, base=self.runner_base
        )
