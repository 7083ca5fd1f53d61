"""List, then watch, one kind in one scope: the one way the operator follows objects.

An ``Informer`` does what client-go's reflector and informer do, minus the object cache: it
lists the kind in pages and hands every object to its handler as ``ADDED``, then watches from the
list's resourceVersion with bookmarks, and resumes a dropped watch from the last resourceVersion
it saw. A 410 Gone (the version was compacted away) makes it list again and deliver what changed
across the gap, as client-go's Replace does: unknown objects as ``ADDED``, changed ones as
``MODIFIED``, vanished ones as ``DELETED`` (an object that names only its key). It keeps the key
and resourceVersion of each object for that, never the object. Failures wait out ``core.backoff``
(a watch that brings no event counts as one, so nothing spins), ``synced`` is set once the first
list is complete, and ``count`` is told of every event delivered. The extra list and watch
parameters (a ``shardSelector``, say) are asked for at each (re)connection.

One object the handler cannot take never stops the others: an object nested deeper than
``core.objects.MAX_OBJECT_DEPTH``, or one whose handling raises, is skipped (its version counts as
seen, so it is not delivered again until it changes), said in a warning and told to ``skipped``;
the watch goes on. A deleted one's handler gets a stand-in that names only its key.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ansible_operator.core import GVK, Backoff, Key, objects
from ansible_operator.kube.client import (
    ApiError,
    KubeClient,
    ResourceInfo,
    Unreachable,
    list_pages,
)
from ansible_operator.kube.discovery import Discovery

log = logging.getLogger("informer")

Handler = Callable[[str, dict[str, Any]], None]  # (ADDED, MODIFIED or DELETED, the object)
Skipped = Callable[[dict[str, Any], str], None]  # (an object not handled, why)


class Gone(Exception):
    """The resourceVersion watched from is too old (410): list again."""


def relist_changes(
    known: dict[Key, str], seen: set[Key], items: Iterable[dict[str, Any]]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The events one page of a (re)list stands for, against ``known`` (key → resourceVersion
    of what was delivered before): ``ADDED`` for an unknown object, ``MODIFIED`` for a changed
    one, nothing for an unchanged one. ``known`` is updated and ``seen`` collects the keys, for
    ``vanished`` once the last page is in."""
    for obj in items:
        key = objects.key(obj)
        version = str(objects.metadata(obj).get("resourceVersion") or "")
        seen.add(key)
        before = known.get(key)
        known[key] = version
        if before is None:
            yield "ADDED", obj
        elif before != version:
            yield "MODIFIED", obj


def vanished(known: dict[Key, str], seen: set[Key]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``DELETED`` for each known object a complete (re)list did not return; forgotten."""
    for key in [k for k in known if k not in seen]:
        del known[key]
        yield "DELETED", stand_in(key)


def stand_in(key: Key) -> dict[str, Any]:
    """An object that names only its key: for a deletion whose object is not at hand."""
    namespace, name = key
    return {"metadata": {"namespace": namespace, "name": name} if namespace else {"name": name}}


class Informer:
    def __init__(
        self,
        client: KubeClient,
        discovery: Discovery,
        gvk: GVK,
        *,
        namespace: str | None,  # None: every namespace (or a cluster-scoped kind)
        handler: Handler,
        count: Callable[[], None] | None = None,  # None: events are not counted
        skipped: Skipped | None = None,  # None: a skipped object is only logged
        params: Callable[[], Mapping[str, str]] | None = None,  # None: no more list options
        server_timeout: int = 300,
        max_backoff: float = 30.0,
        page_size: int = 500,
    ) -> None:
        self.gvk = gvk
        self.namespace = namespace
        self.synced = asyncio.Event()
        self._client = client
        self._discovery = discovery
        self._handler = handler
        self._count = count
        self._skipped = skipped
        self._params = params
        self._server_timeout = server_timeout
        self._max_backoff = max_backoff
        self._page_size = page_size
        self._known: dict[Key, str] = {}
        self._fields = {"gvk": str(gvk), "namespace": namespace or ""}

    async def run(self) -> None:
        """List and watch until cancelled."""
        backoff = Backoff(base=1.0, cap=self._max_backoff)
        version: str | None = None
        while True:
            error: Exception | None = None
            try:
                resource = await self._discovery.resource(self.gvk.api_version, self.gvk.kind)
                if version is None:
                    version = await self._list(resource)
                    self.synced.set()
                version, delivered = await self._watch(resource, version)
                if delivered:  # resumed at once; a stream that brought nothing waits below
                    backoff.reset()
                    continue
            except Gone:  # the server answers: relisted after the base delay
                log.info("Watch expired, listing again", extra=self._fields)
                version = None
                backoff.reset()
            except ApiError as err:
                if err.status == 410:  # an expired continue token
                    version = None
                error = err
            except (Unreachable, ValueError) as err:  # ValueError: a line that is not JSON
                error = err
            except Exception:  # a bug here (a handler's is _deliver's): said loudly, watched again
                log.exception("Watch crashed", extra=self._fields)
            delay = backoff.next_delay()
            if isinstance(error, ApiError):
                log.warning(
                    "Cannot list or watch a watched kind",
                    extra={**self._fields, "error": str(error), "retry_in": delay},
                )
            elif error is not None:
                log.info(
                    "Watch interrupted",
                    extra={**self._fields, "error": str(error), "retry_in": delay},
                )
            await asyncio.sleep(delay)

    def _params_now(self) -> dict[str, str]:
        return dict(self._params()) if self._params is not None else {}

    def _path(self, resource: ResourceInfo) -> str:
        return resource.path(self.namespace)

    async def _list(self, resource: ResourceInfo) -> str:
        """List every page; deliver what changed since the last list; return its version."""
        seen: set[Key] = set()
        version = ""
        path, params = self._path(resource), self._params_now()
        pages = list_pages(self._client, path, self._page_size, params=params)
        async for page in pages:
            for event_type, obj in relist_changes(self._known, seen, page.get("items") or []):
                self._deliver(event_type, obj)
            version = str((page.get("metadata") or {}).get("resourceVersion") or "")
        for event_type, obj in vanished(self._known, seen):
            self._deliver(event_type, obj)
        return version

    async def _watch(self, resource: ResourceInfo, version: str) -> tuple[str, bool]:
        """Watch from ``version`` until the server ends the stream; return the last version
        seen and whether any event (a bookmark included) came."""
        params = {
            **self._params_now(),
            "resourceVersion": version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(self._server_timeout),
        }
        stream = self._client.watch(
            self._path(resource), params, read_timeout=self._server_timeout + 60
        )
        delivered = False
        async for event in stream:
            event_type, obj = event.get("type"), event.get("object") or {}
            if event_type == "ERROR":
                if obj.get("code") == 410:
                    raise Gone
                raise ApiError(
                    int(obj.get("code") or 500), str(obj.get("reason")), str(obj.get("message"))
                )
            delivered = True
            version = str(objects.metadata(obj).get("resourceVersion") or version)
            if event_type in ("ADDED", "MODIFIED"):
                self._known[objects.key(obj)] = version
                self._deliver(event_type, obj)
            elif event_type == "DELETED":
                self._known.pop(objects.key(obj), None)
                self._deliver(event_type, obj)
        return version, delivered

    def _deliver(self, event_type: str, obj: dict[str, Any]) -> None:
        if self._count is not None:
            self._count()
        if objects.too_deep(obj, objects.MAX_OBJECT_DEPTH) is not None:
            if event_type == "DELETED":
                obj = stand_in(objects.key(obj))
            else:
                self._skip(obj, f"nested more than {objects.MAX_OBJECT_DEPTH} levels deep")
                return
        try:
            self._handler(event_type, obj)
        except Exception as err:  # a bug, said loudly: the other objects go on
            log.exception("Handling a watched object failed", extra=self._fields)
            self._skip(obj, f"handling it failed: {type(err).__name__}: {err}"[:300])

    def _skip(self, obj: dict[str, Any], why: str) -> None:
        namespace, name = objects.key(obj)
        version = objects.metadata(obj).get("resourceVersion")
        log.warning(
            "Skipped a watched object the operator cannot handle",
            extra={
                **self._fields,
                "object": f"{namespace}/{name}".lstrip("/"),
                "resourceVersion": version,
                "why": why,
            },
        )
        if self._skipped is not None:
            self._skipped(obj, why)
