"""Writing a custom resource's status without losing anybody's changes.

A write is a function of the current status: read the object, compute the new status from it,
and replace ``/status`` with the resourceVersion just read. A conflict means someone else wrote
in between (a role's ``k8s_status``, a user), so the write is recomputed from the fresh object
and sent again. A conflict never re-runs the role, unlike upstream.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ansible_operator.core.backoff import exponential_delay
from ansible_operator.kube.client import ApiError, KubeClient, ResourceInfo

CONFLICT_RETRIES = 10
log = logging.getLogger("status")

StatusUpdate = Callable[[dict[str, Any]], dict[str, Any]]


async def write_status(
    client: KubeClient,
    resource: ResourceInfo,
    namespace: str,
    name: str,
    update: StatusUpdate,
) -> dict[str, Any] | None:
    """Apply ``update`` to the object's status; the updated object, or None if it is gone."""
    path = resource.path(namespace, name)
    for attempt in range(CONFLICT_RETRIES):
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
