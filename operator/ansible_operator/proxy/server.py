"""The per-run API proxy: roles reach the API server through it, and their writes get owners.

An aiohttp server on loopback. Each Ansible run gets a token of its own (``register``), which
names the run's owner; a request without a live token is refused with 401, and everything else
is forwarded to the API server with the operator's credentials, response bodies streamed as
they come (watches, logs) and upgraded connections carried as raw bytes (``tunnel``). Nothing is
cached: a GET is the API server's answer. Creates, updates, applies and patches get the owner's
marks on the way (``rewrite``), and objects coming back with those marks are reported to the
dependent watches, so the kinds a run writes, or reads back already owned, get watched.

A run registered with a ``WriteLog`` has its writes recorded there, each with the object before
it (the run's own last read of it) and the API server's answer, for its record. A planned run's
log (``dry_run``) makes each write a dry run (``dryRun=All``, whatever the request asked), its
"before" read by the proxy when the run did not read it, and refuses what cannot be dry-run
(exec, attach, port-forward, a write outside the resource paths) with 403: nothing a planned run
sends can change the cluster through here.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from ansible_operator.core import (
    Mode,
    Owner,
    Watch,
    Write,
    WriteLog,
    injection_mode,
    is_owner_itself,
)
from ansible_operator.kube import (
    ApiError,
    Credentials,
    Discovery,
    KubeClient,
    ResourceInfo,
    ServedResource,
    Unreachable,
    auth_headers,
    jsontext,
)
from ansible_operator.proxy import requestinfo, rewrite, tunnel
from ansible_operator.proxy.headers import end_to_end

log = logging.getLogger("proxy")

INJECTION_OFF_WARNING = "Warning: injection of owner references and dependent watches is turned off"
_SET_HERE = ("host", "authorization", "content-length", "expect")  # by aiohttp or by us
_WRITES = frozenset({"create", "update", "patch"})
_RECORDED = _WRITES | {"delete", "deletecollection"}  # in the run's WriteLog (dry runs, planned)
SEEN_PER_RUN = 64  # objects a run read, kept as the "before" of its writes
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_READS = frozenset({"get", "list"})
MAX_BODY = 32 * 1024 * 1024  # the API server takes 3 MiB objects; this leaves room
INSPECT_LIMIT = 8 * 1024 * 1024  # responses larger than this are streamed but not inspected


class DependentHook(Protocol):
    """Told about each object a run writes or reads (the dependent watches)."""

    def observe(self, watch: Watch, resource: ResourceInfo, obj: Mapping[str, Any]) -> None: ...


class ProxyStartError(Exception):
    """The proxy cannot listen where it was told to (a port in use, say); one line."""


@dataclass(frozen=True)
class Run:
    owner: Owner
    watch: Watch
    writes: WriteLog | None = None  # where its writes are recorded (dry runs, if it says so)
    # The objects it last read, by path, raw: the "before" of a write that follows.
    seen: dict[str, bytes] = field(default_factory=dict)

    def saw(self, path: str, raw: bytes) -> None:
        self.seen.pop(path, None)
        if len(self.seen) >= SEEN_PER_RUN:
            del self.seen[next(iter(self.seen))]  # the oldest
        self.seen[path] = raw

    def before(self, path: str) -> Any:
        raw = self.seen.get(path)
        try:
            return jsontext.loads(raw) if raw else None
        except ValueError:
            return None


def _status(code: int, reason: str, message: str) -> web.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return web.json_response(body, status=code)


class Proxy:
    def __init__(
        self,
        creds: Credentials,
        *,
        client: KubeClient,
        port: int,
        inject_owner_refs: bool = True,
        dependents: DependentHook | None = None,
        discovery: Discovery | None = None,  # None: a cache of its own
        host: str = "127.0.0.1",
    ) -> None:
        self.creds = creds
        self.host = host
        self.port = port  # the bound port once started (port 0 picks a free one)
        self.inject_owner_refs = inject_owner_refs
        self.dependents = dependents if inject_owner_refs else None
        self._client = client
        self._discovery = discovery or Discovery(client)
        self._upstream = URL(creds.server)
        self._runs: dict[str, Run] = {}
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.AppRunner | None = None

    # -- runs -------------------------------------------------------------------------------------

    def register(
        self, owner: Mapping[str, Any], watch: Watch, *, writes: WriteLog | None = None
    ) -> str:
        """A token for one run acting for ``owner``; valid until ``unregister``. With
        ``writes``, the run's writes are recorded there (made dry runs when it says so)."""
        token = secrets.token_urlsafe(32)
        self._runs[token] = Run(Owner.from_object(owner), watch, writes)
        return token

    def unregister(self, token: str) -> None:
        self._runs.pop(token, None)

    def _run_of(self, request: web.BaseRequest) -> Run | None:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        return self._runs.get(token.strip())

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> int:
        if not self.inject_owner_refs:
            log.info(INJECTION_OFF_WARNING)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, ssl=self.creds.tls),
            auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
            skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent", "Content-Type"),
        )
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, self.host, self.port).start()
        except OSError as err:
            await self.stop()
            raise ProxyStartError(
                f"proxy: cannot listen on {self.host}:{self.port}: {err.strerror or err}"
            ) from None
        self.port = int(self._runner.addresses[0][1])
        log.info("Starting proxy server", extra={"address": f"{self.host}:{self.port}"})
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- requests ---------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        run = self._run_of(request)
        if run is None:
            return _status(401, "Unauthorized", "Unauthorized")
        try:
            if run.writes is not None and run.writes.dry_run and not _plannable(request):
                run.writes.refused += 1
                return _status(
                    403,
                    "Forbidden",
                    f"plan: {request.method} {request.path} cannot be a dry run, "
                    "so a planned run may not send it",
                )
            if tunnel.is_upgrade(request):
                return await tunnel.forward_upgrade(
                    request,
                    upstream=self._upstream,
                    ssl_context=self.creds.tls,
                    auth=auth_headers(self.creds),
                )
            return await self._forward(request, run)
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except (aiohttp.ClientError, OSError, TimeoutError, asyncio.IncompleteReadError) as err:
            log.info(
                "API server did not answer",
                extra={"method": request.method, "path": request.path, "error": str(err)},
            )
            return _status(
                502, "ServiceUnavailable", f"proxy: the API server did not answer: {err}"
            )
        except web.HTTPException:
            raise
        except Exception as err:  # a bug here must cost one request, never the proxy
            log.exception(
                "Proxy request failed", extra={"method": request.method, "path": request.path}
            )
            return _status(500, "InternalError", f"proxy: {type(err).__name__}: {err}")

    def _upstream_headers(self, request: web.BaseRequest) -> CIMultiDict[str]:
        headers = CIMultiDict(end_to_end(request.headers.items(), drop=_SET_HERE))
        headers.update(auth_headers(self.creds))
        return headers

    async def _served(self, info: requestinfo.RequestInfo) -> ServedResource | None:
        """The written kind as discovery knows it; None (the body goes untouched) when it is
        not served or discovery failed."""
        try:
            return await self._discovery.by_plural(info.group, info.version, info.resource)
        except (ApiError, Unreachable) as err:
            log.info("Discovery failed", extra={"api_version": info.api_version, "error": str(err)})
            return None

    async def _forward(self, request: web.Request, run: Run) -> web.StreamResponse:
        assert self._session is not None
        started = time.monotonic()
        info = requestinfo.parse(request.method, request.path, request.query)
        body = await request.read() if request.can_read_body else None
        direct = info.is_resource and not info.subresource
        served = None
        if direct and info.verb in _WRITES and self.inject_owner_refs:
            served = await self._served(info)
            if body and served is not None and not served.is_virtual:
                body = await self._inject(run, info, served.info, request, body)
        elif info.verb in _READS:
            log.debug("Skipping cache lookup", extra={"path": request.path})

        url = URL(str(self._upstream).rstrip("/") + request.raw_path, encoded=True)
        writes = run.writes
        recorded = writes is not None and info.is_resource and info.verb in _RECORDED
        dry_run = recorded and writes is not None and writes.dry_run
        where = _object_path(info) if info.is_resource and info.name else ""
        remember = (
            writes is not None
            and info.verb == "get"
            and bool(where)
            and info.subresource in ("", "status")  # the object itself, not its log or scale
        )
        if recorded and served is None:
            served = await self._served(info)
        if served is not None and served.is_virtual:
            recorded = False  # a review (SelfSubjectAccessReview, TokenReview): nothing stored
        before = None
        if recorded and where:
            before = run.before(where)
            if before is None and dry_run:
                before = await self._current(where)
        if dry_run:
            url = url.update_query(dryRun="All")
        inspect = (
            not dry_run
            and self.dependents is not None
            and run.watch.watch_dependent_resources
            and direct
            and info.verb in _WRITES | _READS
        )
        async with self._session.request(
            request.method,
            url,
            headers=self._upstream_headers(request),
            data=body,
            allow_redirects=False,
        ) as upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for name, value in end_to_end(upstream.headers.items(), drop=["content-length"]):
                response.headers.add(name, value)
            if upstream.content_length is not None and not upstream.headers.get(
                "Transfer-Encoding"
            ):
                response.content_length = upstream.content_length
            readable = not upstream.headers.get("Content-Encoding")
            inspect = inspect and upstream.status < 300 and readable
            keep = inspect or (readable and (recorded or remember))
            kept: bytearray | None = bytearray() if keep else None
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
                if kept is not None:
                    kept += chunk
                    if len(kept) > INSPECT_LIMIT:
                        kept = None
            await response.write_eof()
        log.debug(
            "Proxied",
            extra={
                "method": request.method,
                "path": request.path,
                "status": upstream.status,
                "seconds": round(time.monotonic() - started, 4),
            },
        )
        if remember and kept is not None and upstream.status < 300:
            run.saw(where, bytes(kept))
        if recorded and writes is not None:
            writes.add(_write(info, before, upstream.status, kept))
        if inspect and kept:
            self._inspect(run, info, served.info if served else None, bytes(kept))
        return response

    async def _current(self, path: str) -> Any:
        """The object at ``path`` as it is now; None when it cannot be read (the write itself
        will meet the same problem, and report it)."""
        try:
            return await self._client.get(path)
        except (ApiError, Unreachable):
            return None

    async def _inject(
        self,
        run: Run,
        info: requestinfo.RequestInfo,
        resource: ResourceInfo,
        request: web.Request,
        body: bytes,
    ) -> bytes:
        kind = rewrite.body_type(info.verb, request.headers.get("Content-Type", ""))
        if kind is None:
            return body
        owner = run.owner
        namespace = info.namespace if resource.namespaced else ""
        if (
            info.name == owner.name
            and namespace == owner.namespace
            and resource.kind == owner.kind
            and resource.group == owner.gvk.group
        ):
            return body  # a write to the owner itself (its status, its spec)
        mode = injection_mode(
            owner, dependent_namespaced=resource.namespaced, dependent_namespace=namespace
        )
        current = None
        if rewrite.needs_current(body, kind, mode) and info.name:
            current = await self._current(resource.path(namespace or None, info.name))
            if current is None or is_owner_itself(current, owner):
                return body
        new = rewrite.rewrite(body, kind, owner, mode, current=current)
        if new is None:
            return body
        log.debug(
            "Injected owner reference"
            if mode is Mode.OWNER_REFERENCE
            else "Injected owner annotations",
            extra={
                "dependent": f"{resource.kind} {namespace + '/' if namespace else ''}{info.name}",
                "owner": f"{owner.kind} {owner.namespace}/{owner.name}",
                "verb": info.verb,
            },
        )
        return new

    def _inspect(
        self,
        run: Run,
        info: requestinfo.RequestInfo,
        served: ResourceInfo | None,
        raw: bytes,
    ) -> None:
        """Report the objects in a response to the dependent watches."""
        assert self.dependents is not None
        try:
            data = jsontext.loads(raw)
        except ValueError:
            return
        if not isinstance(data, dict) or data.get("apiVersion") != info.api_version:
            return  # a Status, a Table, metadata only: not the objects themselves
        kind = str(data.get("kind") or "")
        items = data.get("items") if kind.endswith("List") else None
        objects = items if isinstance(items, list) else [data]
        if items is not None:
            kind = kind[: -len("List")]
        for obj in objects:
            if not isinstance(obj, dict):
                continue
            meta = obj.get("metadata")
            if not isinstance(meta, dict) or not meta.get("uid"):
                continue  # not a stored object
            namespaced = served.namespaced if served else bool(meta.get("namespace"))
            resource = ResourceInfo(
                info.group, info.version, str(obj.get("kind") or kind), info.resource, namespaced
            )
            self.dependents.observe(run.watch, resource, obj)


def _plannable(request: web.BaseRequest) -> bool:
    """Whether a planned run may send this: reads, and writes to resources (made dry runs)."""
    if tunnel.is_upgrade(request):
        return False
    if request.method in _SAFE_METHODS:
        return True
    info = requestinfo.parse(request.method, request.path, request.query)
    return info.is_resource and info.verb in _RECORDED


def _object_path(info: requestinfo.RequestInfo) -> str:
    """The API path of the object a request names, without its subresource."""
    return "/".join(
        part
        for part in (
            "/api" if not info.group else f"/apis/{info.group}",
            info.version,
            f"namespaces/{info.namespace}" if info.in_namespace_path else "",
            info.resource,
            info.name,
        )
        if part
    )


def _write(info: requestinfo.RequestInfo, before: Any, code: int, raw: bytearray | None) -> Write:
    """A write as its record reads it: the object before, the API server's answer after."""
    try:
        answer = jsontext.loads(bytes(raw)) if raw else None
    except ValueError:
        answer = None
    answer = answer if isinstance(answer, dict) else None
    message = ""
    if code >= 300:
        message = str((answer or {}).get("message") or f"HTTP {code}")
        answer = None
    kind = str((answer or before or {}).get("kind") or info.resource)
    return Write(
        verb=info.verb,
        api_version=info.api_version,
        kind=kind,
        namespace=info.namespace if info.in_namespace_path else "",
        name=info.name or str(((answer or {}).get("metadata") or {}).get("name") or ""),
        subresource=info.subresource,
        before=before if isinstance(before, dict) else None,
        after=None if info.verb == "delete" else answer,
        code=code,
        message=message,
    )
