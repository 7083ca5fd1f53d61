"""Reconciling one custom resource: read it, run its role, write the outcome back.

The reconciler is a function of the object's identity. It re-reads the object (level-based: the
event that woke it is not trusted), adds the watch's finalizer, marks the status Running, runs
the role or playbook with the object as variables, and reads the object again before it writes
``Successful`` or ``Failure``, removes the finalizer after a successful finalizer run, and posts
an Event when a reconcile fails or recovers. It returns when the object should run again; a
failure is raised as ``ReconcileError`` for the controller to back off. Queueing, retries and
watching happen outside, in ``controller``.

Differences from upstream, on purpose: ``requeue_after`` does not cut the reconcile short; a
status write conflict is retried as a write, not by re-running the role; the run has a timeout;
conditions carry the generation they describe; failures and recoveries are posted as Events.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ansible_operator.core import conditions
from ansible_operator.core.extravars import build_extra_vars
from ansible_operator.core.watches import Watch
from ansible_operator.kube import kubeconfig
from ansible_operator.kube.client import ApiError, KubeClient, ResourceInfo, Unreachable
from ansible_operator.proxy import Proxy
from ansible_operator.runner import (
    EventLogger,
    LogEventsMode,
    Runner,
    RunnerError,
    RunRequest,
    RunResult,
    input_dir_path,
    log_debug_result,
    log_stats_stdout,
    new_ident,
    remove_input_dir,
)
from ansible_operator.runner.inputdir import DEFAULT_BASE_DIR
from ansible_operator.runtime import backoff, recorder
from ansible_operator.runtime.controller import Key, ReconcileError, Result
from ansible_operator.runtime.flags import RunSettings
from ansible_operator.runtime.metrics import OperatorMetrics
from ansible_operator.runtime.shutdown import Interrupted, RunGate
from ansible_operator.runtime.status import write_status

log = logging.getLogger("reconciler")
DELETED_DURING_RUN_REQUEUE = 0.0  # run the finalizer at once rather than upstream's 5 s later


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class Reconciler:
    def __init__(
        self,
        watch: Watch,
        *,
        client: KubeClient,
        runner: Runner,
        settings: RunSettings,
        proxy: Proxy,
        resource: Callable[[], ResourceInfo],
        metrics: OperatorMetrics | None = None,
        runner_base: Path = DEFAULT_BASE_DIR,
        clock: Callable[[], datetime.datetime] = utc_now,
        gate: RunGate | None = None,
    ) -> None:
        self.watch = watch
        self.client = client
        self.runner = runner
        self.settings = settings
        self.proxy = proxy  # runs reach the API through it, with a token of their own
        self._resource = resource
        self.metrics = metrics
        self.runner_base = runner_base
        self.clock = clock
        self.gate = gate or RunGate()  # shared by all reconcilers: closed at shutdown
        try:
            self.log_events = LogEventsMode.parse(settings.ansible_log_events)
        except ValueError:
            self.log_events = LogEventsMode.TASKS

    # -- the reconcile ---------------------------------------------------------------------------

    async def __call__(self, key: Key) -> Result:
        namespace, name = key
        resource = self._resource()
        try:
            obj = await self.client.get(resource.path(namespace, name))
        except ApiError as err:
            if err.status == 404:
                self.forget(key)
                return Result()
            raise ReconcileError(f"reading the object: {err}") from err
        except Unreachable as err:
            raise ReconcileError(str(err)) from err
        return await self._reconcile(resource, obj)

    def forget(self, key: Key) -> None:
        """The object is gone: its runner input dir and artifacts go with it."""
        namespace, name = key
        gvk = self.watch.gvk
        path = input_dir_path(
            gvk.group, gvk.version, gvk.kind, namespace, name, base=self.runner_base
        )
        remove_input_dir(path, base=self.runner_base)

    async def _reconcile(self, resource: ResourceInfo, obj: dict[str, Any]) -> Result:
        meta = obj["metadata"]
        namespace, name = meta.get("namespace") or "", meta["name"]
        annotations = meta.get("annotations") or {}
        period, problem = backoff.requeue_delay(
            annotations, self.watch.reconcile_period, self.settings.reconcile_period
        )
        if problem:
            await self._mark_error(resource, obj, problem)
            raise ReconcileError(problem)

        finalizer = self.watch.finalizer
        deleting = bool(meta.get("deletionTimestamp"))
        has_finalizer = finalizer is not None and finalizer.name in (meta.get("finalizers") or [])
        if finalizer is not None and not deleting and not has_finalizer:
            obj = await self._add_finalizer(resource, obj, finalizer.name)
            has_finalizer = True
        if deleting and not has_finalizer:
            log.info("Resource is terminated, skipping reconciliation")
            return Result()

        generation = meta.get("generation")
        was_failing = _condition_true(obj, conditions.FAILURE)
        if self.watch.manage_status:
            await self._write_status(
                resource,
                namespace,
                name,
                lambda s: conditions.mark_running(s, now=self.clock(), generation=generation),
            )

        try:
            result = await self.gate.run(self._run(obj, finalizing=deleting))
        except Interrupted as stop:
            await self._mark_interrupted(resource, namespace, name, stop.cause, generation)
            return Result()  # this process runs nothing more; the next one runs it again
        except RunnerError as err:
            message = f"Unable to run reconciliation: {err}"
            await self._mark_error(resource, obj, message)
            raise ReconcileError(message) from err

        live = await self._get_live(resource, namespace, name)
        if live is None:
            return Result()
        if deleting and result.ok and finalizer is not None:
            await self._remove_finalizer(resource, live, finalizer.name)
            return Result()

        outcome = result.outcome
        ansible_result = self._ansible_result(result)
        if self.watch.manage_status:
            if result.ok:

                def update(s: dict[str, Any]) -> dict[str, Any]:
                    return conditions.mark_success(
                        s, ansible_result=ansible_result, now=self.clock(), generation=generation
                    )
            else:
                reason = conditions.REASON_FAILED
                message = "\n".join(outcome.failure_messages) or "unknown playbook failure"
                if result.timed_out:
                    reason, message = conditions.REASON_TIMEOUT, conditions.timeout_message(message)

                def update(s: dict[str, Any]) -> dict[str, Any]:
                    return conditions.mark_failure(
                        s,
                        message=message,
                        ansible_result=ansible_result,
                        now=self.clock(),
                        generation=generation,
                        reason=reason,
                    )

            await self._write_status(resource, namespace, name, update)

        if not result.ok:
            await recorder.post_event(
                self.client,
                live,
                type_="Warning",
                reason="ReconcileFailed",
                message=_failure_summary(result),
            )
            raise ReconcileError(_failure_summary(result))
        if was_failing:
            await recorder.post_event(
                self.client,
                live,
                type_="Normal",
                reason="ReconcileSucceeded",
                message="Reconciliation succeeded again after failing",
            )
        if not deleting and live["metadata"].get("deletionTimestamp"):
            return Result(requeue_after=DELETED_DURING_RUN_REQUEUE)
        if outcome.requeue_after is not None:
            return Result(requeue_after=outcome.requeue_after)
        return Result(requeue_after=period)

    # -- running Ansible -------------------------------------------------------------------------

    async def _run(self, obj: dict[str, Any], *, finalizing: bool) -> RunResult:
        meta = obj["metadata"]
        namespace, name = meta.get("namespace") or "", meta["name"]
        annotations = meta.get("annotations") or {}
        gvk = self.watch.gvk
        verbosity, note = backoff.verbosity(annotations, self.settings.ansible_verbosity_for(gvk))
        if note:
            log.error(note)
        rotate, note = backoff.max_runner_artifacts(annotations, self.watch.max_runner_artifacts)
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
        token = self.proxy.register(obj, self.watch)
        try:
            kubeconfig.write(
                Path(kubeconfig_path), port=self.proxy.port, token=token, owner_namespace=namespace
            )
            request = RunRequest(
                ident=ident,
                private_data_dir=input_dir_path(
                    gvk.group, gvk.version, gvk.kind, namespace, name, base=self.runner_base
                ),
                extravars=build_extra_vars(obj, self.watch, finalizing=finalizing),
                kubeconfig=kubeconfig_path,
                playbook=playbook,
                role=role,
                verbosity=verbosity,
                rotate_artifacts=rotate,
                ansible_args=self.settings.ansible_args,
                timeout=self.watch.run_timeout or self.settings.ansible_run_timeout,
            )
            event_logger = EventLogger(
                self.log_events,
                logger=logging.getLogger("runner"),
                ident=ident,
                gvk=str(gvk),
                verbosity=_log_verbosity(annotations),
            )
            result = await self.runner.run(request, on_event=event_logger)
            if self.metrics is not None:
                self.metrics.observe_run(str(gvk), result.duration, result.ok)
        finally:
            self.proxy.unregister(token)
            with contextlib.suppress(OSError):
                os.unlink(kubeconfig_path)
        log_stats_stdout(
            logging.getLogger("runner"),
            result.outcome.stats_stdout,
            gvk=str(gvk),
            name=name,
            namespace=namespace,
            ident=ident,
        )
        if self.settings.ansible_debug_logs:
            log_debug_result(
                logging.getLogger("runner"),
                result.stdout_path,
                gvk=str(gvk),
                name=name,
                namespace=namespace,
                ident=ident,
            )
        return result

    def _ansible_result(self, result: RunResult) -> dict[str, Any] | None:
        counts = result.outcome.ansible_result
        if not result.outcome.stats_received:
            return None
        completion = (
            conditions.parse_runner_time(counts.completion) if counts.completion else self.clock()
        )
        return {
            "ok": counts.ok,
            "changed": counts.changed,
            "skipped": counts.skipped,
            "failures": counts.failures,
            "completion": conditions.format_completion(completion),
        }

    # -- talking to the API server ---------------------------------------------------------------

    async def _get_live(
        self, resource: ResourceInfo, namespace: str, name: str
    ) -> dict[str, Any] | None:
        try:
            live: dict[str, Any] = await self.client.get(resource.path(namespace, name))
            return live
        except ApiError as err:
            if err.status == 404:
                self.forget((namespace, name))
                return None
            raise ReconcileError(f"reading the object after the run: {err}") from err
        except Unreachable as err:
            raise ReconcileError(str(err)) from err

    async def _write_status(
        self,
        resource: ResourceInfo,
        namespace: str,
        name: str,
        update: Callable[[dict[str, Any]], dict[str, Any]],
    ) -> None:
        try:
            await write_status(self.client, resource, namespace, name, update)
        except (ApiError, Unreachable) as err:
            raise ReconcileError(f"writing status: {err}") from err

    async def _mark_interrupted(
        self, resource: ResourceInfo, namespace: str, name: str, cause: str, generation: int | None
    ) -> None:
        log.info("Reconciliation interrupted", extra={"cause": cause})
        if self.watch.manage_status:
            await self._write_status(
                resource,
                namespace,
                name,
                lambda s: conditions.mark_interrupted(
                    s, cause=cause, now=self.clock(), generation=generation
                ),
            )

    async def _mark_error(self, resource: ResourceInfo, obj: dict[str, Any], message: str) -> None:
        """Upstream's markError: written even when the watch does not manage status."""
        meta = obj["metadata"]
        generation = meta.get("generation")
        await self._write_status(
            resource,
            meta.get("namespace") or "",
            meta["name"],
            lambda s: conditions.mark_error(
                s, message=message, now=self.clock(), generation=generation
            ),
        )

    async def _add_finalizer(
        self, resource: ResourceInfo, obj: dict[str, Any], finalizer: str
    ) -> dict[str, Any]:
        meta = obj["metadata"]
        ops: list[dict[str, Any]] = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]}
        ]
        if meta.get("finalizers"):
            ops.append({"op": "add", "path": "/metadata/finalizers/-", "value": finalizer})
        else:
            ops.append({"op": "add", "path": "/metadata/finalizers", "value": [finalizer]})
        return await self._json_patch(resource, meta, ops, "adding the finalizer")

    async def _remove_finalizer(
        self, resource: ResourceInfo, obj: dict[str, Any], finalizer: str
    ) -> None:
        meta = obj["metadata"]
        finalizers = meta.get("finalizers") or []
        if finalizer not in finalizers:
            return
        index = finalizers.index(finalizer)
        ops = [
            {"op": "test", "path": f"/metadata/finalizers/{index}", "value": finalizer},
            {"op": "remove", "path": f"/metadata/finalizers/{index}"},
        ]
        await self._json_patch(resource, meta, ops, "removing the finalizer")
        log.info("Removed finalizer", extra={"finalizer": finalizer})

    async def _json_patch(
        self, resource: ResourceInfo, meta: dict[str, Any], ops: list[dict[str, Any]], what: str
    ) -> dict[str, Any]:
        path = resource.path(meta.get("namespace") or "", meta["name"])
        try:
            patched: dict[str, Any] = await self.client.request(
                "PATCH", path, body=ops, content_type="application/json-patch+json"
            )
            return patched
        except (ApiError, Unreachable) as err:
            # A failed test (the object changed) comes back as 422: the retry re-reads it.
            raise ReconcileError(f"{what}: {err}") from err


def _log_verbosity(annotations: dict[str, str]) -> int:
    """As upstream's event log handler: raw task stdout in the log only when the CR's verbosity
    annotation, else the ANSIBLE_VERBOSITY variable, asks for it (not --ansible-verbosity)."""
    value, _ = backoff.verbosity(annotations, 0)
    if backoff.VERBOSITY_ANNOTATION in annotations:
        return value
    try:
        return int(os.environ.get("ANSIBLE_VERBOSITY", "0"))
    except ValueError:
        return 0


def _condition_true(obj: dict[str, Any], ctype: str) -> bool:
    condition = conditions.get_condition(obj.get("status"), ctype)
    return bool(condition and condition.get("status") == conditions.TRUE)


def _failure_summary(result: RunResult) -> str:
    """One line for Events and logs: which task failed and why."""
    failures = result.outcome.failures
    if not failures:
        return "Ansible run failed"
    parts = []
    for failure in failures:
        where = f"task {failure.task!r}" if failure.task else "run"
        parts.append(f"{where} failed: {failure.message}")
    return "; ".join(parts)
