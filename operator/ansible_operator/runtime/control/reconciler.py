"""Reconciling one custom resource: read it, run its role, write the outcome back.

The reconciler is a function of the object's identity (see ``reconcile``). It re-reads the
object, adds the watch's finalizer, marks the status Running, runs the role or playbook with the
object as variables (``session``), reads the object again and writes ``Successful`` or
``Failure`` (``status``), removes the finalizer after a successful finalizer run
(``finalizers``), and posts an Event when a reconcile fails or recovers (``recorder``), or when
the CR's runs keep waking themselves through its dependents (``core.loops``).
Queueing, retries and watching happen outside, in ``controller``.

Differences from upstream, on purpose: ``requeue_after`` does not cut the reconcile short; a
status write conflict is retried as a write, not by re-running the role; the run has a timeout;
conditions carry the generation they describe; failures and recoveries are posted as Events; a
bad reconcile-period annotation is a terminal error, not retried until the object changes.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

from ansible_operator.core import (
    HOLD_ANNOTATION,
    SpecError,
    Watch,
    check_spec,
    conditions,
    hold,
    loops,
    object_var_name,
    plan,
    reconcile_period,
    reserved_vars,
    triggers,
)
from ansible_operator.kube import Api, ApiError, ResourceInfo, Unreachable
from ansible_operator.runner import RunnerError, RunResult
from ansible_operator.runtime.control.finalizers import (
    add_finalizer,
    has_finalizer,
    remove_finalizer,
)
from ansible_operator.runtime.control.gate import Interrupted, RunGate
from ansible_operator.runtime.control.reconcile import (
    Key,
    ReconcileError,
    Request,
    Result,
    TerminalError,
)
from ansible_operator.runtime.control.session import RunSession
from ansible_operator.runtime.control.status import StatusWriter
from ansible_operator.runtime.observe.metrics import OperatorMetrics
from ansible_operator.runtime.observe.recorder import EventRecorder
from ansible_operator.runtime.observe.tracing import UNTRACED, Tracing, Untraced

log = logging.getLogger("reconciler")
DELETED_DURING_RUN_REQUEUE = 0.0  # run the finalizer at once rather than upstream's 5 s later

ResolveResource = Callable[[], Awaitable[ResourceInfo]]


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class Reconciler:
    """The reconcile of one watch's kind; ``resource`` finds the kind's API path (discovery)."""

    def __init__(
        self,
        watch: Watch,
        *,
        client: Api,
        session: RunSession,
        resource: ResolveResource,
        reconcile_period: float,
        clock: Callable[[], datetime.datetime] = utc_now,
        gate: RunGate | None = None,
        ansible_names: frozenset[str] = frozenset(),
        metrics: OperatorMetrics,
        kstatus_conditions: bool = True,  # --kstatus-conditions (the watch's wins)
        tracing: Tracing | Untraced = UNTRACED,
    ) -> None:
        self.watch = watch
        self.client = client
        self.session = session
        self._resource = resource
        self.reconcile_period = reconcile_period  # --reconcile-period
        self.clock = clock
        self.events = EventRecorder(client, clock=clock)
        self.gate = gate or RunGate()  # shared by all reconcilers: closed at shutdown
        self.ansible_names = ansible_names  # ansible-core's magic names, keywords and globals
        self._shadowing_warned: set[str] = set()
        self.loops = loops.LoopDetector()
        # Failed runs in a row, by key, of the generation they ran (the watch's stallAfterFailures).
        self._failures: dict[Key, tuple[object, int]] = {}
        self.metrics = metrics
        self.tracing = tracing
        # Written with upstream's conditions, so not when the role manages the status.
        wanted = watch.kstatus_conditions
        self.kstatus = watch.manage_status and (kstatus_conditions if wanted is None else wanted)

    async def __call__(self, request: Request) -> Result:
        with self.tracing.reconcile(self.watch.gvk, request.key, request.trigger):
            return await self._reconcile_key(request)

    async def _reconcile_key(self, request: Request) -> Result:
        key = request.key
        try:
            resource = await self._resource()
        except (ApiError, Unreachable) as err:
            raise ReconcileError(f"discovery of {self.watch.gvk.kind}: {err}") from err
        obj = await self._read(resource, key, "reading the object")
        if obj is None:
            return Result()
        return await self._reconcile(resource, request, obj)

    async def _reconcile(
        self, resource: ResourceInfo, request: Request, obj: dict[str, Any]
    ) -> Result:
        key, why = request.key, request.trigger
        meta = obj["metadata"]
        status = StatusWriter(
            self.client,
            resource,
            obj,
            clock=self.clock,
            kstatus=self.kstatus,
            tracing=self.tracing,
        )
        period, problem = reconcile_period(
            meta.get("annotations"), self.watch.reconcile_period, self.reconcile_period
        )
        if problem:
            await status.error(problem, terminal=True)
            await self.events.failed(obj, problem)
            raise TerminalError(problem)

        finalizer = self.watch.finalizer.name if self.watch.finalizer is not None else None
        deleting = bool(meta.get("deletionTimestamp"))
        if deleting and (finalizer is None or not has_finalizer(obj, finalizer)):
            log.info("Resource is terminated, skipping reconciliation")
            return Result()
        await self._refuse_spec(obj, status)
        if finalizer is not None and not deleting and not has_finalizer(obj, finalizer):
            obj = await add_finalizer(self.client, resource, obj, finalizer)

        held, note = hold(meta.get("annotations"), self.watch.hold)
        if note:
            log.error(note)
        if held and not deleting:
            return await self._hold(obj, why, status, period)

        was_failing = conditions.condition_true(obj, conditions.FAILURE)
        if self.watch.manage_status:
            await status.running(obj)
        try:
            result = await self.gate.run(self.session.run(obj, why, finalizing=deleting))
        except Interrupted as stop:
            log.info("Reconciliation interrupted", extra={"cause": stop.cause})
            if self.watch.manage_status:
                await status.interrupted(stop.cause)
            return Result()  # this process runs nothing more; the next one runs it again
        except SpecError as err:  # the extra vars document past its limit
            await self._refused(obj, status, err)
        except RunnerError as err:
            message = f"Unable to run reconciliation: {err}"
            await status.error(message, terminal=False)
            raise ReconcileError(message) from err

        live = await self._read(resource, key, "reading the object after the run")
        if live is None:
            return Result()
        await self._report_loop(request, meta.get("generation"), live)
        if deleting and result.ok and finalizer is not None:
            await remove_finalizer(self.client, resource, live, finalizer)
            return Result()
        gave_up = self._count(key, meta.get("generation"), result.ok)
        if self.watch.manage_status:
            await status.done(result, live, gave_up=gave_up)

        if not result.ok:
            summary = failure_summary(result)
            await self.events.failed(live, summary)
            if gave_up:
                raise TerminalError(f"{summary} ({gave_up})")
            raise ReconcileError(summary)
        if was_failing:
            await self.events.recovered(live)
        if not deleting and live["metadata"].get("deletionTimestamp"):
            deleted = triggers.Trigger(triggers.DELETED, "marked for deletion during the run")
            return Result(requeue_after=DELETED_DURING_RUN_REQUEUE, reason=deleted)
        if result.outcome.requeue_after is not None:
            requeue = result.outcome.requeue_after
            return Result(requeue_after=requeue, reason=triggers.requeue(requeue))
        if period is None:
            return Result()
        return Result(requeue_after=period, reason=triggers.periodic(period))

    async def _hold(
        self,
        obj: dict[str, Any],
        why: triggers.Trigger,
        status: StatusWriter,
        period: float | None,
    ) -> Result:
        """A CR held for review: its run planned, nothing applied; the condition says what
        would change, the run's record holds the plan. Released, it runs as usual."""
        try:
            planned = await self.gate.run(self.session.plan(obj, why, finalizing=False))
        except Interrupted as stop:
            log.info("Reconciliation interrupted", extra={"cause": stop.cause})
            return Result()
        message = plan.held_message(planned, HOLD_ANNOTATION)
        log.info(
            "Held for review",
            extra={"outcome": planned.outcome, "pending": planned.pending, "condition": message},
        )
        if self.watch.manage_status:
            await status.held(planned, message)
        if period is None:
            return Result()
        return Result(requeue_after=period, reason=triggers.periodic(period))

    def _count(self, key: Key, generation: object, ok: bool) -> str:
        """Count a run's failure; why the operator gives up on this generation once the watch's
        ``stallAfterFailures`` is reached, else empty."""
        bound = self.watch.stall_after_failures
        if ok or bound is None:
            self._failures.pop(key, None)
            return ""
        seen, count = self._failures.get(key, (generation, 0))
        count = count + 1 if seen == generation else 1
        self._failures[key] = (generation, count)
        if count < bound:
            return ""
        return f"{count} failed runs in a row of generation {generation}: stallAfterFailures"

    async def _refuse_spec(self, obj: dict[str, Any], status: StatusWriter) -> None:
        """No run for a CR that Ansible could not take as data (`check_spec`: a reserved variable,
        a marker key, too deep): a Failure and a Warning Event that name the field, and no retry
        until the object changes (TerminalError)."""
        try:
            spec_vars = check_spec(obj, self.watch)
        except SpecError as err:
            await self._refused(obj, status, err)
        for shadow in reserved_vars.shadowing(spec_vars, self.ansible_names):
            if shadow.variable not in self._shadowing_warned:
                self._shadowing_warned.add(shadow.variable)
                log.warning(
                    f"spec.{shadow.field} becomes the variable {shadow.variable}, a name "
                    "ansible-core also gives a meaning (magic variable, play keyword or template "
                    "global): a role may not see the CR's value under it; the CR's spec is also "
                    f"{object_var_name(self.watch.gvk)}_spec",
                    extra={"gvk": str(self.watch.gvk)},
                )

    async def _refused(self, obj: dict[str, Any], status: StatusWriter, err: SpecError) -> NoReturn:
        await status.error(str(err), terminal=True, reason=err.reason)
        await self.events.failed(obj, str(err), reason=err.reason)
        raise TerminalError(str(err)) from None

    async def _report_loop(
        self, request: Request, generation: object, live: dict[str, Any]
    ) -> None:
        """Once an episode, runs that keep waking themselves through the CR's dependents
        (``core.loops``): a log line, a Warning Event and the metric say so."""
        loop = self.loops.observe(request.key, request.trigger, generation)
        if loop is None:
            return
        message = loop.message()
        log.warning(
            f"Dependent loop: {message}",
            extra={
                "dependents": [str(ref) for ref, _ in loop.dependents],
                "fields": sorted({f for _, fields in loop.dependents for f in fields}),
                "runs": loop.runs,
                "seconds": round(loop.seconds, 1),
            },
        )
        await self.events.dependent_loop(live, message)
        self.metrics.dependent_loop(str(self.watch.gvk))

    async def _read(self, resource: ResourceInfo, key: Key, what: str) -> dict[str, Any] | None:
        """The object as it is now; None (and its input dir removed) when it is gone."""
        namespace, name = key
        try:
            obj: dict[str, Any] = await self.client.get(resource.path(namespace, name))
            return obj
        except ApiError as err:
            if err.status == 404:
                self.session.forget(namespace, name)
                self.loops.forget(key)
                self._failures.pop(key, None)
                return None
            raise ReconcileError(f"{what}: {err}") from err
        except Unreachable as err:
            raise ReconcileError(str(err)) from err


def failure_summary(result: RunResult) -> str:
    """One line for Events and logs: which task failed and why."""
    failures = result.outcome.failures
    if not failures:
        return "Ansible run failed"
    parts = []
    for failure in failures:
        where = f"task {failure.task!r}" if failure.task else "run"
        parts.append(f"{where} failed: {failure.message}")
    return "; ".join(parts)
