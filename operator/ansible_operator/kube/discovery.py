"""API discovery: which kinds the API server serves, their plural names, scope and verbs.

One cache for the whole operator: the reconcilers resolve their kind's path here, the proxy the
kind and scope of each write it sees, the dependent watches the owner kinds' scope and, after a
restart, every kind that can be listed and watched. A group-version's listing is fetched when
first needed and kept; a name missing from it (a CRD installed later) fetches it again, at most
every ``refresh_after`` seconds, so a role cannot make the operator hammer discovery. Failures
are not cached: ``ApiError`` and ``Unreachable`` reach the caller, which decides.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from ansible_operator.kube.client import ApiError, KubeClient, ResourceInfo, group_version_path


@dataclass(frozen=True)
class ServedResource:
    info: ResourceInfo
    verbs: frozenset[str]

    @property
    def is_virtual(self) -> bool:
        """No get, list or watch: not a stored object (TokenReview, SubjectAccessReview...)."""
        return not {"get", "list", "watch"} <= self.verbs


@dataclass
class _Listing:
    fetched: float  # when, on the discovery clock
    by_plural: dict[str, ServedResource]


class Discovery:
    def __init__(
        self,
        client: KubeClient,
        *,
        refresh_after: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._refresh_after = refresh_after
        self._clock = clock
        self._listings: dict[tuple[str, str], _Listing] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    async def by_plural(self, group: str, version: str, plural: str) -> ServedResource | None:
        """The resource ``plural`` of ``group/version``; None when it is not served."""
        listing = await self._listing(group, version, lambda r: r.info.plural == plural)
        return listing.get(plural)

    async def resource(self, api_version: str, kind: str) -> ResourceInfo:
        """The resource of ``kind`` in ``api_version``; ApiError 404 when it is not served."""
        group, _, version = api_version.rpartition("/")
        listing = await self._listing(group, version, lambda r: r.info.kind == kind)
        for served in listing.values():
            if served.info.kind == kind:
                return served.info
        raise ApiError(404, "NotFound", f"{kind} is not served by {api_version}")

    async def listable(self) -> list[ServedResource]:
        """Every resource that can be listed and watched, in each group's preferred version;
        a group-version that fails to answer (an aggregated API that is down) is left out."""
        group_versions: list[tuple[str, str]] = []
        core = await self._client.get("/api")
        group_versions += [("", v) for v in core.get("versions") or []]
        groups = await self._client.get("/apis")
        for group in groups.get("groups") or []:
            preferred = (group.get("preferredVersion") or {}).get("version")
            if preferred:
                group_versions.append((group["name"], preferred))
        found: list[ServedResource] = []
        for group, version in group_versions:
            try:
                listing = await self._listing(group, version, lambda r: True)
            except ApiError:
                continue
            found += [r for r in listing.values() if {"list", "watch"} <= r.verbs]
        return found

    async def _listing(
        self, group: str, version: str, wanted: Callable[[ServedResource], bool]
    ) -> dict[str, ServedResource]:
        """The listing of ``group/version``, fetched again when nothing in it is ``wanted`` and
        the kept one is older than ``refresh_after``."""
        key = (group, version)
        kept = self._listings.get(key)
        if kept is not None and any(wanted(r) for r in kept.by_plural.values()):
            return kept.by_plural
        async with self._locks.setdefault(key, asyncio.Lock()):
            kept = self._listings.get(key)
            if kept is not None and (
                any(wanted(r) for r in kept.by_plural.values())
                or self._clock() - kept.fetched < self._refresh_after
            ):
                return kept.by_plural
            fetched = _Listing(self._clock(), await self._fetch(group, version))
            self._listings[key] = fetched
            return fetched.by_plural

    async def _fetch(self, group: str, version: str) -> dict[str, ServedResource]:
        try:
            data = await self._client.get(group_version_path(group, version))
        except ApiError as err:
            if err.status == 404:
                return {}  # the group-version is not served (yet)
            raise
        resources: dict[str, ServedResource] = {}
        for item in (data or {}).get("resources") or []:
            name = item.get("name")
            if not isinstance(name, str) or "/" in name or not item.get("kind"):
                continue  # a subresource
            info = ResourceInfo(group, version, item["kind"], name, bool(item.get("namespaced")))
            resources[name] = ServedResource(info, frozenset(item.get("verbs") or ()))
        return resources
