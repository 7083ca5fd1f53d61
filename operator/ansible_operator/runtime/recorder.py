"""Kubernetes Events on the custom resources: a Warning when a reconcile fails, a Normal when it
succeeds again. Upstream posts none; ``kubectl describe`` is where operators look first.

Posting an Event is best effort: a failure to post is logged and never fails the reconcile.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from typing import Any

from ansible_operator.kube.client import ApiError, KubeClient, Unreachable

COMPONENT = "ansible-operator"
MESSAGE_LIMIT = 1024  # the API server refuses Event messages beyond this many bytes
log = logging.getLogger("events")


def build_event(
    obj: dict[str, Any], *, type_: str, reason: str, message: str, now: datetime.datetime
) -> dict[str, Any]:
    meta = obj["metadata"]
    namespace = meta.get("namespace") or "default"
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    encoded = message.encode()
    if len(encoded) > MESSAGE_LIMIT:
        message = encoded[: MESSAGE_LIMIT - 3].decode(errors="ignore") + "..."
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
        "message": message,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


async def post_event(
    client: KubeClient, obj: dict[str, Any], *, type_: str, reason: str, message: str
) -> None:
    event = build_event(
        obj, type_=type_, reason=reason, message=message, now=datetime.datetime.now(datetime.UTC)
    )
    namespace = event["metadata"]["namespace"]
    try:
        await client.request("POST", f"/api/v1/namespaces/{namespace}/events", body=event)
    except (ApiError, Unreachable) as err:
        log.error("could not post Event", extra={"reason": reason, "error": str(err)})
