"""Who may read which run records, with ``--metrics-require-rbac``.

A request allowed ``get`` on its ``/runs`` path as a non-resource URL (the ``runs-reader``
ClusterRole) reads every record, as before. Any other user the API server authenticates reads
the records of the CRs they may read themselves, so a namespace's users see their runs and
nobody else's: one CR's runs need ``get`` on that CR, a list shows the CRs of the namespaces
where they may ``list`` the kind. Each is a SubjectAccessReview of the resource, cached as the
metrics' reviews are (``MetricsAuth``). Without ``--metrics-require-rbac`` the records are served
on loopback only (``Manager``), to whoever reaches it.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from aiohttp import web

from ansible_operator.kube import ApiError, Discovery, MetricsAuth, ReviewFailed, Unreachable, User
from ansible_operator.runs.history import RunHistory, Summary

log = logging.getLogger("metrics")

# The request's RunsAccess, set by the metrics middleware when the path's own review denied it.
SCOPE = web.RequestKey("runs_access", object)


class RunsAccess(Protocol):
    async def may_get(
        self, group: str, version: str, kind: str, namespace: str, name: str
    ) -> bool: ...

    async def may_list(self, group: str, version: str, kind: str, namespace: str) -> bool: ...


class Everything:
    """No RBAC (loopback), or a request its path's review allowed."""

    async def may_get(self, group: str, version: str, kind: str, namespace: str, name: str) -> bool:
        return True

    async def may_list(self, group: str, version: str, kind: str, namespace: str) -> bool:
        return True


EVERYTHING = Everything()


class AsUser:
    """What one authenticated user may read: the API server's answer for the CR itself."""

    def __init__(self, auth: MetricsAuth, discovery: Discovery, user: User) -> None:
        self._auth = auth
        self._discovery = discovery
        self._user = user

    async def may_get(self, group: str, version: str, kind: str, namespace: str, name: str) -> bool:
        return await self._may("get", group, version, kind, namespace, name)

    async def may_list(self, group: str, version: str, kind: str, namespace: str) -> bool:
        return await self._may("list", group, version, kind, namespace, "")

    async def _may(
        self, verb: str, group: str, version: str, kind: str, namespace: str, name: str
    ) -> bool:
        try:
            info = await self._discovery.resource(f"{group}/{version}" if group else version, kind)
            decision = await self._auth.authorize_resource(
                self._user, verb, group, version, info.plural, namespace, name
            )
        except (ApiError, Unreachable, ReviewFailed) as err:  # not served, or no answer: no
            log.warning(f"Cannot check who may read {kind} runs: {err}")
            return False
        return decision.allowed


def scoped(auth: MetricsAuth, discovery: Discovery) -> None:
    """Let users whose review of a ``/runs`` path denies them go on, as themselves."""

    def for_runs(request: web.Request, user: User) -> bool:
        if request.path != "/runs" and not request.path.startswith("/runs/"):
            return False
        request[SCOPE] = AsUser(auth, discovery, user)
        return True

    auth.scoped = for_runs


def access_of(request: web.Request) -> RunsAccess:
    found = request.get(SCOPE)
    return found if isinstance(found, AsUser) else EVERYTHING


class ReadableHistory:
    """This replica's run records as one request may read them (``access``)."""

    def __init__(self, history: RunHistory, access: RunsAccess) -> None:
        self.history = history
        self.access = access

    async def kinds(self) -> list[dict[str, Any]]:
        """Each kind with runs, and each of its CRs the request may list, with its last run."""
        readable = []
        for entry in self.history.kinds():
            group, _, version = str(entry["apiVersion"]).rpartition("/")
            allowed = {
                namespace: await self.access.may_list(group, version, entry["kind"], namespace)
                for namespace in {r["namespace"] for r in entry["resources"]}
            }
            resources = [r for r in entry["resources"] if allowed[r["namespace"]]]
            if resources:
                readable.append({**entry, "resources": resources})
        return readable

    async def runs(
        self, group: str, version: str, kind: str, namespace: str | None = None, name: str = ""
    ) -> list[Summary]:
        """The runs of a kind in the namespaces the request may list it in, or of one CR it may
        get (none otherwise), newest first."""
        if namespace is not None:
            if not await self.access.may_get(group, version, kind, namespace, name):
                return []
            return self.history.runs(group, version, kind, namespace, name)
        found = self.history.runs(group, version, kind)
        allowed = {
            ns: await self.access.may_list(group, version, kind, ns)
            for ns in {str(s.get("namespace") or "") for s in found}
        }
        return [s for s in found if allowed[str(s.get("namespace") or "")]]

    async def record(
        self, group: str, version: str, kind: str, namespace: str, name: str, run_id: str
    ) -> dict[str, Any] | None:
        """One run of a CR the request may get; None as for a run there is not."""
        if not await self.access.may_get(group, version, kind, namespace, name):
            return None
        return self.history.record(group, version, kind, namespace, name, run_id)
