"""A port-forward to a Pod through the API server, ``kubectl port-forward``'s job, for the
command line: a listener on 127.0.0.1 whose every connection is carried to the Pod's port over
its own WebSocket to ``pods/<name>/portforward`` with the user's credentials (``get`` and
``create`` on ``pods/portforward``: a WebSocket opens with a GET, and Kubernetes 1.35 and later
also ask for ``create``, as for kubectl's SPDY).

The protocol is ``v4.channel.k8s.io``, which the API server passes on to the kubelet: every
message starts with its channel's number, 0 for the data and 1 for the kubelet's error text,
and the first message on each channel is the port it belongs to (2 bytes, little-endian).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import quote

import aiohttp

from ansible_operator.kube.client import KubeClient, Unreachable, reason

PROTOCOL = "v4.channel.k8s.io"
DATA, ERROR = 0, 1
PORT_PREFIX = 2  # the bytes of the port number that open each channel
CHUNK = 64 * 1024


@dataclass
class Forward:
    """A forward's local port, and why its last connection failed (None while none has): a
    client of the port sees only a closed connection, this says what closed it."""

    port: int
    failure: str | None = None


@contextlib.asynccontextmanager
async def forward(
    client: KubeClient, namespace: str, pod: str, port: int
) -> AsyncIterator[Forward]:
    """Forward a port of 127.0.0.1 (chosen by the system) to ``port`` of ``pod`` while the
    context lasts."""
    path = f"/api/v1/namespaces/{quote(namespace)}/pods/{quote(pod)}/portforward"
    carrying: set[asyncio.Task[None]] = set()

    async def carry(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        carrying.add(task := asyncio.current_task())  # type: ignore[arg-type]
        try:
            async with client.websocket(path, {"ports": str(port)}, PROTOCOL) as ws:
                await _pipe(ws, reader, writer)
        except aiohttp.WSServerHandshakeError as err:
            found.failure = _refused(err.status, namespace, pod)
        except PortForwardError as err:
            found.failure = str(err)
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            found.failure = f"the port-forward broke: {reason(err)}"
        except Unreachable as err:  # no credentials for the WebSocket
            found.failure = str(err)
        except asyncio.CancelledError:
            pass  # the forward ends: asyncio's server would log a cancelled connection's task
        finally:
            writer.close()
            carrying.discard(task)  # type: ignore[arg-type]

    server = await asyncio.start_server(carry, "127.0.0.1", 0)
    found = Forward(server.sockets[0].getsockname()[1])
    try:
        yield found
    finally:
        server.close()
        for task in list(carrying):
            task.cancel()
        await asyncio.gather(*carrying, return_exceptions=True)
        await server.wait_closed()


class PortForwardError(Exception):
    """The kubelet's word on why it could not forward (its error channel)."""


def _refused(status: int, namespace: str, pod: str) -> str:
    if status == 403:
        return (
            f"you may not port-forward to Pods in namespace {namespace} "
            "(get and create on pods/portforward)"
        )
    if status == 404:
        return f"Pod {pod} is gone from namespace {namespace}"
    return f"the API server refused the port-forward to Pod {pod}: HTTP {status}"


async def _pipe(
    ws: aiohttp.ClientWebSocketResponse[bool],
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    """Carry bytes both ways until either side ends; PortForwardError with the kubelet's
    message when it sends one."""

    async def down() -> None:
        opened: set[int] = set()
        async for message in ws:
            if message.type != aiohttp.WSMsgType.BINARY or not message.data:
                continue
            channel, payload = message.data[0], message.data[1:]
            if channel not in opened:
                opened.add(channel)
                payload = payload[PORT_PREFIX:]
            if channel == ERROR and payload:
                raise PortForwardError(payload.decode(errors="replace").strip())
            if channel == DATA and payload:
                writer.write(payload)
                await writer.drain()

    async def up() -> None:
        while data := await reader.read(CHUNK):
            await ws.send_bytes(bytes([DATA]) + data)

    tasks = [asyncio.ensure_future(down()), asyncio.ensure_future(up())]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:  # the kubelet's word first: a write then fails only because it spoke
        if task in done:
            task.result()
