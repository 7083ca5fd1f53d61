"""Kubernetes Events on the custom resources: a Warning when a reconcile fails, a Normal when it
succeeds again, a Warning when its runs keep waking themselves through its dependents. Upstream
posts none; ``kubectl describe`` is where operators look first.

Posting an Event is best effort: a failure to post is logged and never fails the reconcile.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from collections.abc import Callable
from typing import Any

from ansible_operator.core import EVENT_NOTE_BYTES, cap
from ansible_operator.kube import Api, ApiError, Unreachable

COMPONENT = "ansible-operator"
log = logging.getLogger("events")

FAILED = "ReconcileFailed"
SUCCEEDED = "ReconcileSucceeded"
DEPENDENT_LOOP = "DependentLoop"
SKIPPED = "ObjectSkipped"
RECOVERED_MESSAGE = "Reconciliation succeeded again after failing"


def build_event(
    obj: dict[str, Any], *, type_: str, reason: str, message: str, now: datetime.datetime
) -> dict[str, Any]:
    meta = obj["metadata"]
    namespace = meta.get("namespace") or "default"
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
        "involvedObject": {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "name": meta["name"],
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "type": type_,
        "reason": reason,
        "message": cap(message, EVENT_NOTE_BYTES),
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


class EventRecorder:
    """Posts the reconcile's Events on the objects it reconciles."""

    def __init__(self, client: Api, *, clock: Callable[[], datetime.datetime]) -> None:
        self._client = client
        self._clock = clock

    async def failed(self, obj: dict[str, Any], message: str, *, reason: str = FAILED) -> None:
        await self.post(obj, type_="Warning", reason=reason, message=message)

    async def recovered(self, obj: dict[str, Any]) -> None:
        await self.post(obj, type_="Normal", reason=SUCCEEDED, message=RECOVERED_MESSAGE)

    async def dependent_loop(self, obj: dict[str, Any], message: str) -> None:
        """The CR's runs wake themselves through its dependents (``core.loops``)."""
        await self.post(obj, type_="Warning", reason=DEPENDENT_LOOP, message=message)

    async def skipped(self, obj: dict[str, Any], why: str) -> None:
        """The watches skip the object (``kube.informer``): it is not reconciled as it is."""
        message = f"The operator skips this object: {why}"
        await self.post(obj, type_="Warning", reason=SKIPPED, message=message)

    async def post(self, obj: dict[str, Any], *, type_: str, reason: str, message: str) -> None:
        event = build_event(obj, type_=type_, reason=reason, message=message, now=self._clock())
        namespace = event["metadata"]["namespace"]
        try:
            await self._client.request("POST", f"/api/v1/namespaces/{namespace}/events", body=event)
        except (ApiError, Unreachable) as err:
            log.error("could not post Event", extra={"reason": reason, "error": str(err)})
