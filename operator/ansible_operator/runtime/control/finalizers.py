"""Adding and removing the watch's finalizer on a custom resource, as JSON patches.

Each patch is guarded by a ``test`` operation (the resourceVersion read, or the finalizer at its
index), so it never overwrites a change it did not see: a failed test comes back as 422 and the
reconcile is retried from a fresh read, which is what an update with a stale resourceVersion
would do, without sending the whole object.
"""

from __future__ import annotations

import logging
from typing import Any

from ansible_operator.kube import Api, ApiError, ResourceInfo, Unreachable
from ansible_operator.runtime.control.reconcile import ReconcileError

log = logging.getLogger("reconciler")


def has_finalizer(obj: dict[str, Any], finalizer: str) -> bool:
    return finalizer in (obj["metadata"].get("finalizers") or [])


async def add_finalizer(
    client: Api, resource: ResourceInfo, obj: dict[str, Any], finalizer: str
) -> dict[str, Any]:
    """Add ``finalizer`` to ``obj``; the patched object."""
    meta = obj["metadata"]
    ops: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]}
    ]
    if meta.get("finalizers"):
        ops.append({"op": "add", "path": "/metadata/finalizers/-", "value": finalizer})
    else:
        ops.append({"op": "add", "path": "/metadata/finalizers", "value": [finalizer]})
    return await _json_patch(client, resource, meta, ops, "adding the finalizer")


async def remove_finalizer(
    client: Api, resource: ResourceInfo, obj: dict[str, Any], finalizer: str
) -> None:
    """Remove ``finalizer`` from ``obj`` if it is there."""
    meta = obj["metadata"]
    finalizers = meta.get("finalizers") or []
    if finalizer not in finalizers:
        return
    index = finalizers.index(finalizer)
    ops = [
        {"op": "test", "path": f"/metadata/finalizers/{index}", "value": finalizer},
        {"op": "remove", "path": f"/metadata/finalizers/{index}"},
    ]
    await _json_patch(client, resource, meta, ops, "removing the finalizer")
    log.info("Removed finalizer", extra={"finalizer": finalizer})


async def _json_patch(
    client: Api, resource: ResourceInfo, meta: dict[str, Any], ops: list[dict[str, Any]], what: str
) -> dict[str, Any]:
    path = resource.path(meta.get("namespace") or "", meta["name"])
    try:
        patched: dict[str, Any] = await client.request(
            "PATCH", path, body=ops, content_type="application/json-patch+json"
        )
        return patched
    except (ApiError, Unreachable) as err:
        raise ReconcileError(f"{what}: {err}") from err
