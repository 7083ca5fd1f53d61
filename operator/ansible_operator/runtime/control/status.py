"""Writing a custom resource's status conditions without losing anybody's changes.

A write is a function of the current status: read the object, compute the new status from it,
and replace ``/status`` with the resourceVersion just read. When the caller has just read the
object itself (the reconciler does, before and after the run), the first attempt starts from
that copy instead of a second GET. A conflict means someone else wrote in between (a role's
``k8s_status``, a user), so the write is recomputed from a fresh read and sent again. A conflict
never re-runs the role, unlike upstream. ``StatusWriter`` is the reconciler's vocabulary on top:
running, the run's outcome, an error before any run.
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import logging
from collections.abc import Callable
from typing import Any

from ansible_operator.core import CRPlan, conditions, exponential_delay, kstatus
from ansible_operator.kube import Api, ApiError, ResourceInfo, Unreachable
from ansible_operator.runner import RunResult
from ansible_operator.runtime.control.reconcile import ReconcileError
from ansible_operator.runtime.observe.tracing import UNTRACED, Tracing, Untraced

CONFLICT_RETRIES = 10
log = logging.getLogger("status")

StatusUpdate = Callable[[dict[str, Any]], dict[str, Any]]
Clock = Callable[[], datetime.datetime]


async def write_status(
    client: Api,
    resource: ResourceInfo,
    namespace: str,
    name: str,
    update: StatusUpdate,
    *,
    read: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """Apply ``update`` to the object's status; the updated object, or None if it is gone.

    ``read`` is the object as the caller has just read it, the first attempt's base (None: GET
    it); a conflict reads it again."""
    path = resource.path(namespace, name)
    for attempt in range(CONFLICT_RETRIES):
        obj: Any
        if attempt == 0 and read is not None:
            obj = copy.deepcopy(read)
        else:
            try:
                obj = await client.get(path)
            except ApiError as err:
                if err.status == 404:
                    return None
                raise
        current = obj.get("status") if isinstance(obj.get("status"), dict) else {}
        new_status = update(dict(current))
        if new_status == current:
            return obj
        obj["status"] = new_status
        try:
            result: dict[str, Any] = await client.request("PUT", path + "/status", body=obj)
            return result
        except ApiError as err:
            if err.status == 404:
                return None
            if err.status != 409:
                raise
            log.debug("status write conflict, retrying", extra={"attempt": attempt})
            await asyncio.sleep(exponential_delay(attempt, base=0.05, cap=1.0))
    raise ApiError(
        409, "Conflict", f"status of {name} kept changing under {CONFLICT_RETRIES} writes"
    )


class StatusWriter:
    """The conditions one reconcile writes on its object, for the generation it read.

    Every write fails as ``ReconcileError``, for the controller to retry with backoff.
    """

    def __init__(
        self,
        client: Api,
        resource: ResourceInfo,
        obj: dict[str, Any],
        *,
        clock: Clock,
        kstatus: bool,  # kstatus's conditions beside upstream's (core.kstatus)
        tracing: Tracing | Untraced = UNTRACED,  # each write a span when traces are on
    ) -> None:
        meta = obj["metadata"]
        self._client = client
        self._resource = resource
        self._namespace = meta.get("namespace") or ""
        self._name = meta["name"]
        self._generation = meta.get("generation")
        self._clock = clock
        self._kstatus = kstatus
        self._tracing = tracing

    async def running(self, read: dict[str, Any]) -> None:
        """``Running``; ``read`` is the object as just read (see ``write_status``)."""
        await self._write(
            "Running",
            lambda s: conditions.mark_running(s, now=self._clock(), generation=self._generation),
            kstatus.Phase.RUNNING,
            read=read,
        )

    async def done(self, result: RunResult, read: dict[str, Any], *, gave_up: str = "") -> None:
        """``Successful`` or ``Failure`` with the run's ``ansibleResult``; ``read`` is the object
        as just read after the run. ``gave_up``: why a failure is not retried (kstatus's
        Stalled), empty when it is."""
        counts = ansible_result(result, now=self._clock())
        if result.ok:
            await self._write(
                "Successful",
                lambda s: conditions.mark_success(
                    s, ansible_result=counts, now=self._clock(), generation=self._generation
                ),
                kstatus.Phase.SUCCEEDED,
                read=read,
            )
            return
        reason = conditions.REASON_FAILED
        message = "\n".join(result.outcome.failure_messages) or "unknown playbook failure"
        if result.timed_out:
            reason, message = conditions.REASON_TIMEOUT, conditions.timeout_message(message)
        await self._write(
            "Failure",
            lambda s: conditions.mark_failure(
                s,
                message=message,
                ansible_result=counts,
                now=self._clock(),
                generation=self._generation,
                reason=reason,
            ),
            kstatus.Phase.STALLED if gave_up else kstatus.Phase.RETRYING,
            reason=reason,
            message=f"{message} ({gave_up})" if gave_up else message,
            read=read,
        )

    async def held(self, plan: CRPlan, message: str) -> None:
        """The CR is held for review: its run was planned (``plan``), nothing applied; kstatus's
        Stalled, as it waits for a person."""
        await self._write(
            "Held",
            lambda s: conditions.mark_held(
                s,
                message=message,
                pending=plan.outcome != "Unchanged",
                now=self._clock(),
                generation=self._generation,
            ),
            kstatus.Phase.STALLED,
            reason=conditions.REASON_HELD,
            message=message,
        )

    async def interrupted(self, cause: str) -> None:
        """The run was stopped (shutdown, a lost lease), not failed: it will be run again."""
        await self._write(
            "Interrupted",
            lambda s: conditions.mark_interrupted(
                s, cause=cause, now=self._clock(), generation=self._generation
            ),
            kstatus.Phase.INTERRUPTED,
            message=conditions.interrupted_message(cause),
        )

    async def error(
        self, message: str, *, terminal: bool, reason: str = conditions.REASON_FAILED
    ) -> None:
        """Upstream's markError: no run happened; written even when the watch does not manage
        status. ``terminal``: nothing is retried until the object changes (kstatus's Stalled)."""
        await self._write(
            "Error",
            lambda s: conditions.mark_error(
                s, message=message, now=self._clock(), generation=self._generation, reason=reason
            ),
            kstatus.Phase.STALLED if terminal else kstatus.Phase.RETRYING,
            reason=reason,
            message=message,
        )

    async def _write(
        self,
        what: str,
        update: StatusUpdate,
        phase: kstatus.Phase,
        *,
        reason: str = "",
        message: str = "",
        read: dict[str, Any] | None = None,
    ) -> None:
        """Write ``update`` and, when kstatus conditions are on, theirs for ``phase``."""
        if self._kstatus:
            upstream = update

            def update(s: dict[str, Any]) -> dict[str, Any]:
                return kstatus.apply(
                    upstream(s),
                    phase,
                    now=self._clock(),
                    generation=self._generation,
                    reason=reason,
                    message=message,
                )

        with self._tracing.status(what):
            await self._write_once(update, read=read)

    async def _write_once(self, update: StatusUpdate, *, read: dict[str, Any] | None) -> None:
        try:
            await write_status(
                self._client, self._resource, self._namespace, self._name, update, read=read
            )
        except (ApiError, Unreachable) as err:
            raise ReconcileError(f"writing status: {err}") from err


def ansible_result(result: RunResult, *, now: datetime.datetime) -> dict[str, Any] | None:
    """The ``ansibleResult`` of a run's conditions; None when no stats event arrived."""
    if not result.outcome.stats_received:
        return None
    counts = result.outcome.ansible_result
    completion = conditions.parse_runner_time(counts.completion) if counts.completion else now
    return {
        "ok": counts.ok,
        "changed": counts.changed,
        "skipped": counts.skipped,
        "failures": counts.failures,
        "completion": conditions.format_completion(completion),
    }
