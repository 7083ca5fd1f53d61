"""The port-forward's protocol (kube/portforward.py) against a fake API server speaking
``v4.channel.k8s.io`` on loopback: bytes both ways, the kubelet's error as the forward's
failure, a refused WebSocket in words. The real API server and kubelet (kwok) are in
tests/e2e/test_runs.py."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable

from aiohttp import WSMsgType, web

from ansible_operator.kube import Credentials, KubeClient, portforward

PORT = 8443
Kubelet = Callable[[web.WebSocketResponse], Awaitable[None]]


async def opened(ws: web.WebSocketResponse) -> None:
    """What a kubelet sends first: each channel's port."""
    for channel in (portforward.DATA, portforward.ERROR):
        await ws.send_bytes(bytes([channel]) + struct.pack("<H", PORT))


async def echo(ws: web.WebSocketResponse) -> None:
    await opened(ws)
    async for message in ws:
        if message.type == WSMsgType.BINARY and message.data[:1] == bytes([portforward.DATA]):
            await ws.send_bytes(bytes([portforward.DATA]) + message.data[1:].upper())


async def no_such_port(ws: web.WebSocketResponse) -> None:
    await opened(ws)
    await ws.send_bytes(bytes([portforward.ERROR]) + b"no forward found for port 8443")
    await ws.close()


def through(kubelet: Kubelet | None, exchange: Callable[[int], Awaitable[bytes]]):
    """Run ``exchange`` (given the forward's local port) against a fake API server whose
    port-forward is ``kubelet`` (None: it refuses with 403); what it got, the forward's failure
    and the requests the server saw."""
    seen: list[web.Request] = []

    async def portforward_route(request: web.Request) -> web.StreamResponse:
        seen.append(request)
        if kubelet is None:
            return web.Response(status=403, text="forbidden")
        ws = web.WebSocketResponse(protocols=(portforward.PROTOCOL,))
        await ws.prepare(request)
        await kubelet(ws)
        return ws

    async def go():
        app = web.Application()
        app.router.add_get("/api/v1/namespaces/{ns}/pods/{pod}/portforward", portforward_route)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        server = f"http://127.0.0.1:{runner.addresses[0][1]}"
        client = KubeClient(Credentials(server=server, token="sekret"))
        try:
            async with portforward.forward(client, "ops", "op-a", PORT) as forward:
                got = await asyncio.wait_for(exchange(forward.port), 30)
                return got, forward.failure
        finally:
            await client.close()
            await runner.cleanup()

    got, failure = asyncio.run(go())
    return got, failure, seen


async def say_hello(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"hello")
    await writer.drain()
    got = await reader.readexactly(5)
    writer.close()
    return got


async def read_to_end(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    got = await reader.read()
    writer.close()
    return got


def test_bytes_go_both_ways_with_the_users_credentials():
    got, failure, seen = through(echo, say_hello)
    assert (got, failure) == (b"HELLO", None)
    (request,) = seen
    assert request.query["ports"] == str(PORT)
    assert request.headers["Authorization"] == "Bearer sekret"
    assert request.headers["Sec-WebSocket-Protocol"] == portforward.PROTOCOL
    assert "application/json" not in request.headers.get("Accept", "")  # the API server: 406


def test_the_kubelets_error_is_the_forwards_failure():
    got, failure, _ = through(no_such_port, read_to_end)
    assert got == b""  # the connection closed
    assert failure == "no forward found for port 8443"


def test_a_refused_port_forward_says_what_is_needed():
    got, failure, _ = through(None, read_to_end)
    assert got == b""
    assert failure == (
        "you may not port-forward to Pods in namespace ops (get and create on pods/portforward)"
    )
