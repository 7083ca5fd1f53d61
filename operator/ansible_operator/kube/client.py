"""A small asynchronous Kubernetes API client on aiohttp.

The operator needs a handful of verbs on arbitrary kinds: get, replace, patch, create, delete
and watch (``discovery`` and ``informer`` build on them). The official client would cost tens
of MiB in the operator process for that, so this module speaks JSON over HTTPS directly. Errors
are typed: ``ApiError`` carries the status, reason and message the API server returned;
``Unreachable`` means no answer at all. Each request is tallied by method and status code
(``responses``; ``<error>`` for no answer), as client-go counts its requests for
``rest_client_requests_total``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp

from ansible_operator.core import GVK
from ansible_operator.kube import jsontext
from ansible_operator.kube.config import Credentials
from ansible_operator.kube.exec_plugin import ExecPluginError

NO_ANSWER = "<error>"  # the code of a request that got no response, as client-go says it


class ApiError(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message


class Unreachable(Exception):
    """The API server did not answer (refused, reset, timed out)."""


def reason(err: BaseException) -> str:
    """Why a connection failed, in words: the operating system's reason for a failed connect
    (aiohttp's own text shows the SSL context's repr), else the error's text or its name."""
    if isinstance(err, aiohttp.ClientConnectorError):
        cause = err.os_error
        if not isinstance(cause, socket.gaierror) and cause.errno and cause.errno > 0:
            return os.strerror(cause.errno)  # "Connection refused"
        return cause.strerror or str(cause) or type(cause).__name__  # "Name or service not known"
    if isinstance(err, TimeoutError):
        return "timed out"
    return str(err) or type(err).__name__


class UntrustedServer(Exception):
    """The API server's certificate is not signed by the CA the credentials name."""


def group_version_path(group: str, version: str) -> str:
    """The API path of a group-version: ``/apis/<group>/<version>``, ``/api/<version>`` for the
    core group."""
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


@dataclass(frozen=True)
class ResourceInfo:
    """What discovery says about a kind: its plural name and whether it lives in namespaces."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def gvk(self) -> GVK:
        return GVK(self.group, self.version, self.kind)

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = group_version_path(self.group, self.version)
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace)}"
        base += f"/{self.plural}"
        return base + (f"/{quote(name)}" if name else "")


def auth_headers(creds: Credentials) -> dict[str, str]:
    """The Authorization header for ``creds`` (a client certificate goes in the TLS context);
    Unreachable when an exec plugin gives no token (it may next time: a login, a network)."""
    try:
        token = creds.bearer_token()
    except ExecPluginError as err:
        raise Unreachable(str(err)) from None
    if token:
        return {"Authorization": f"Bearer {token}"}
    if creds.username is not None:
        return {"Authorization": aiohttp.BasicAuth(creds.username, creds.password or "").encode()}
    return {}


def _decode(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return jsontext.loads(raw)
    except ValueError:
        return raw.decode(errors="replace").strip()


def _api_error(resp: aiohttp.ClientResponse, payload: Any) -> ApiError:
    """The API server's refusal: its Status object's reason and message where it sent one."""
    data = payload if isinstance(payload, dict) else {}
    return ApiError(
        resp.status, str(data.get("reason") or resp.reason), str(data.get("message") or payload)
    )


class KubeClient:
    def __init__(self, creds: Credentials, *, timeout: float = 30) -> None:
        self.creds = creds
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        # Requests by (method, status code or "<error>"), a watch counted once when it starts.
        self.responses: Counter[tuple[str, str]] = Counter()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        """The connection pool, made at first use (inside the event loop). Uncapped: every
        watch and WebSocket holds a connection for as long as it lasts, and aiohttp's default
        cap of 100 would leave an operator with 100 watches (kinds by namespaces) waiting for a
        connection for each request after them, status updates and Lease renewals included."""
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=self._timeout, connector=aiohttp.TCPConnector(limit=0)
            )
        return self._session

    async def _auth_headers(self) -> dict[str, str]:
        plugin = self.creds.exec_plugin
        if plugin is not None and plugin.due():  # a plugin may take a second: not on the loop
            return await asyncio.to_thread(auth_headers, self.creds)
        return auth_headers(self.creds)

    async def _headers(self) -> dict[str, str]:
        return {"Accept": "application/json", **(await self._auth_headers())}

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        headers = {**(await self._headers()), **(headers or {})}
        if body is not None:
            headers["Content-Type"] = content_type
        code = NO_ANSWER
        try:
            async with self.session.request(
                method,
                self.creds.server + path,
                json=body,
                params=params,
                headers=headers,
                ssl=self.creds.tls,
            ) as resp:
                code = str(resp.status)
                payload = _decode(await resp.read())
                if resp.status >= 400:
                    raise _api_error(resp, payload)
                return payload
        except aiohttp.ClientConnectorCertificateError as err:
            raise UntrustedServer(
                f"{self.creds.server}: the server's certificate is not trusted by the configured "
                f"CA: {err.certificate_error}"
            ) from err
        except (TimeoutError, aiohttp.ClientConnectionError) as err:
            raise Unreachable(f"{method} {self.creds.server}{path}: {reason(err)}") from err
        finally:
            self.responses[method, code] += 1

    async def get(self, path: str, params: dict[str, str] | None = None) -> Any:
        return await self.request("GET", path, params=params)

    @contextlib.asynccontextmanager
    async def websocket(
        self, path: str, params: dict[str, str], protocol: str
    ) -> AsyncIterator[aiohttp.ClientWebSocketResponse[bool]]:
        """A WebSocket to ``path`` with the credentials, speaking ``protocol``; aiohttp's
        WSServerHandshakeError carries the status of a refusal."""
        async with self.session.ws_connect(
            self.creds.server + path,
            params=params,
            protocols=(protocol,),
            headers=await self._auth_headers(),  # an Accept of JSON is refused (406)
            ssl=self.creds.tls,
            timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=10),
            autoping=True,
        ) as ws:
            yield ws

    async def watch(
        self, path: str, params: dict[str, str], *, read_timeout: float
    ) -> AsyncIterator[dict[str, Any]]:
        """The events of a watch request (``watch=true`` is added), one dict each, until the
        server ends the stream; ApiError when it refuses to start one, Unreachable on a
        broken connection, including no bytes at all for ``read_timeout`` seconds."""
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=read_timeout)
        started = False
        try:
            async with self.session.get(
                self.creds.server + path,
                params={**params, "watch": "true"},
                headers=await self._headers(),
                ssl=self.creds.tls,
                timeout=timeout,
            ) as resp:
                started = True
                self.responses["GET", str(resp.status)] += 1
                if resp.status >= 400:
                    raise _api_error(resp, _decode(await resp.read()))
                buffer = b""
                async for chunk in resp.content.iter_any():
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if line.strip():
                            yield jsontext.loads(line)
        except (TimeoutError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as err:
            if not started:
                self.responses["GET", NO_ANSWER] += 1
            raise Unreachable(f"watch {self.creds.server}{path}: {reason(err)}") from err


async def list_pages(
    client: KubeClient,
    path: str,
    limit: int,
    *,
    accept: str | None = None,
    params: dict[str, str] | None = None,  # more list options (a shardSelector, say)
) -> AsyncIterator[dict[str, Any]]:
    """A paginated list, ``limit`` objects a page, following each page's ``continue`` token."""
    params = {**(params or {}), "limit": str(limit)}
    headers = {"Accept": accept} if accept else None
    while True:
        page: dict[str, Any] = await client.request("GET", path, params=params, headers=headers)
        yield page
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return
        params = {**params, "continue": token}
