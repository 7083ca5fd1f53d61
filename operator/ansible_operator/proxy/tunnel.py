"""Upgraded connections (exec, attach, port-forward) carried through the proxy as raw bytes.

The request goes to the API server over a socket of its own with the operator's credentials in
place of the run's token; once the server answers ``101 Switching Protocols`` the proxy relays
that answer and then copies bytes both ways without reading them, so WebSocket and SPDY work
alike. An answer other than 101 (a refusal, an error) is relayed as an ordinary response.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from typing import Any, cast

from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from ansible_operator.proxy.headers import UPGRADE, end_to_end

log = logging.getLogger("proxy")

_SET_HERE = ("host", "authorization", "content-length")  # written by _head or by aiohttp
_MAX_HEAD = 64 * 1024
_MAX_ERROR_BODY = 16 * 1024 * 1024
_HIGH_WATER = 1024 * 1024


def is_upgrade(request: web.BaseRequest) -> bool:
    connection = {t.strip().lower() for t in request.headers.get("Connection", "").split(",")}
    return "upgrade" in connection and bool(request.headers.get("Upgrade"))


class _ToUpstream:
    """Stands where aiohttp puts a WebSocket reader: every byte the client sends after the
    upgrade is written to the API server's socket; reading from the client pauses while the
    server is slow to take them."""

    def __init__(self, writer: asyncio.StreamWriter, client: asyncio.Transport | None) -> None:
        self._writer = writer
        self._client = client
        self.closed = asyncio.Event()
        self._draining = False

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        if self._writer.is_closing():
            return False, b""
        self._writer.write(data)
        transport = self._writer.transport
        if (
            not self._draining
            and self._client is not None
            and transport.get_write_buffer_size() > _HIGH_WATER
        ):
            self._draining = True
            self._client.pause_reading()
            asyncio.get_running_loop().create_task(self._drain())
        return False, b""

    async def _drain(self) -> None:
        try:
            with contextlib.suppress(ConnectionError):
                await self._writer.drain()
        finally:
            self._draining = False
            if self._client is not None and not self._client.is_closing():
                self._client.resume_reading()

    def feed_eof(self) -> None:
        self.closed.set()


def _head(request: web.BaseRequest, upstream: URL, auth: dict[str, str]) -> bytes:
    target = upstream.raw_path.rstrip("/") + request.raw_path
    lines = [f"{request.method} {target} HTTP/1.1", f"Host: {upstream.raw_authority}"]
    for name, value in end_to_end(request.headers.items(), keep=UPGRADE, drop=_SET_HERE):
        lines.append(f"{name}: {value}")
    lines += [f"{k}: {v}" for k, v in auth.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _parse_head(raw: bytes) -> tuple[int, str, CIMultiDict[str]]:
    status_line, *header_lines = raw.decode("latin-1").split("\r\n")
    _, status, *reason = status_line.split(" ", 2)
    headers: CIMultiDict[str] = CIMultiDict()
    for line in header_lines:
        if ":" in line:
            name, value = line.split(":", 1)
            headers.add(name.strip(), value.strip())
    return int(status), (reason[0] if reason else ""), headers


async def _read_body(reader: asyncio.StreamReader, headers: CIMultiDict[str]) -> bytes:
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        body = b""
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readuntil(b"\r\n")  # no trailers from the API server
                return body
            if len(body) + size > _MAX_ERROR_BODY:
                raise ValueError("response body too large")
            body += await reader.readexactly(size)
            await reader.readexactly(2)
    if "Content-Length" in headers:
        return await reader.readexactly(min(int(headers["Content-Length"]), _MAX_ERROR_BODY))
    return await reader.read(_MAX_ERROR_BODY)


async def forward_upgrade(
    request: web.Request,
    *,
    upstream: URL,
    ssl_context: ssl.SSLContext | bool,
    auth: dict[str, str],
    connect_timeout: float = 30.0,
) -> web.StreamResponse:
    """Carry an upgrade request to the API server and, after a 101, its bytes both ways."""
    host = upstream.host or "localhost"
    port = upstream.port or (443 if upstream.scheme == "https" else 80)
    context = ssl_context if isinstance(ssl_context, ssl.SSLContext) else None
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection(
            host, port, ssl=context, server_hostname=host if context else None, limit=_MAX_HEAD
        ),
        connect_timeout,
    )
    try:
        writer.write(_head(request, upstream, auth))
        if request.can_read_body:
            writer.write(await request.read())
        await writer.drain()
        status, reason, headers = _parse_head(await reader.readuntil(b"\r\n\r\n"))
        if status != 101:
            body = await _read_body(reader, headers)
            relayed = CIMultiDict(end_to_end(headers.items(), drop=["content-length"]))
            return web.Response(status=status, reason=reason, headers=relayed, body=body)

        response = web.StreamResponse(status=101, reason=reason or "Switching Protocols")
        for name, value in end_to_end(headers.items(), keep=UPGRADE, drop=["content-length"]):
            response.headers.add(name, value)
        response.force_close()
        await response.prepare(request)
        protocol = request.protocol
        protocol.keep_alive(False)
        to_upstream = _ToUpstream(writer, request.transport)
        # aiohttp hands every later byte of this connection to the parser set here.
        protocol.set_parser(cast(Any, to_upstream))

        async def to_client() -> None:
            while data := await reader.read(65536):
                await response.write(data)

        copy = asyncio.create_task(to_client())
        closed = asyncio.create_task(to_upstream.closed.wait())
        try:
            await asyncio.wait([copy, closed], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (copy, closed):
                task.cancel()
            for task in (copy, closed):
                with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                    await task
        return response
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
