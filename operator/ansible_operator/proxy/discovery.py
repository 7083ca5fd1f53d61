"""Which kinds a group-version serves, with their scope and verbs, for the writes the proxy sees.

The proxy needs a write's kind (patch bodies rarely say), whether it lives in a namespace, and
whether it is a real stored kind or a "virtual" one such as TokenReview, which has no get, list
or watch and is never marked. Listings are fetched for the group-versions that receive writes
only, kept, and fetched again on a miss (a CRD installed later) at most every ``refresh_after``
seconds, so a role cannot make the proxy hammer discovery.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from ansible_operator.kube.client import ApiError, KubeClient, ResourceInfo, Unreachable

log = logging.getLogger("proxy")


@dataclass(frozen=True)
class ServedResource:
    info: ResourceInfo
    verbs: frozenset[str]

    @property
    def is_virtual(self) -> bool:
        """No get, list or watch: not a stored object (TokenReview, SubjectAccessReview...)."""
        return not {"get", "list", "watch"} <= self.verbs


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
        self._listings: dict[tuple[str, str], tuple[float, dict[str, ServedResource]]] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    async def lookup(self, group: str, version: str, plural: str) -> ServedResource | None:
        """The served resource ``plural`` of ``group/version``; None if unknown or unreachable."""
        key = (group, version)
        cached = self._listings.get(key)
        if cached is not None and plural in cached[1]:
            return cached[1][plural]
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            cached = self._listings.get(key)
            if cached is not None and (
                plural in cached[1] or self._clock() - cached[0] < self._refresh_after
            ):
                return cached[1].get(plural)
            listing = await self._fetch(group, version)
            if listing is None:
                return None
            self._listings[key] = (self._clock(), listing)
            return listing.get(plural)

    async def _fetch(self, group: str, version: str) -> dict[str, ServedResource] | None:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            data = await self._client.get(path)
        except ApiError as err:
            if err.status == 404:
                return {}
            log.info("Discovery failed", extra={"path": path, "error": str(err)})
            return None
        except Unreachable as err:
            log.info("Discovery failed", extra={"path": path, "error": str(err)})
            return None
        resources: dict[str, ServedResource] = {}
        for item in (data or {}).get("resources") or []:
            name = item.get("name")
            if not isinstance(name, str) or "/" in name or not item.get("kind"):
                continue
            info = ResourceInfo(group, version, item["kind"], name, bool(item.get("namespaced")))
            resources[name] = ServedResource(info, frozenset(item.get("verbs") or ()))
        return resources
