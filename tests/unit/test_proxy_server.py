"""The proxy against a fake API server of bare sockets: tokens, forwarding with the operator's
credentials, owner marks on writes, streaming, upgraded connections, and bad input."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest

from ansible_operator.core.watches import GVK, Watch
from ansible_operator.kube.client import KubeClient, ResourceInfo
from ansible_operator.kube.config import Credentials
from ansible_operator.proxy import INJECTION_OFF_WARNING, Proxy, ProxyStartError

OPERATOR_TOKEN = "operator-token"
MC = GVK("cache.example.com", "v1alpha1", "Memcached")
CR = {
    "apiVersion": "cache.example.com/v1alpha1",
    "kind": "Memcached",
    "metadata": {"name": "mc", "namespace": "shop", "uid": "cr-uid"},
}
REF = {
    "apiVersion": "cache.example.com/v1alpha1",
    "kind": "Memcached",
    "name": "mc",
    "uid": "cr-uid",
}
OTHER = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "other-uid"}
DISCOVERY = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [
        {
            "name": "configmaps",
            "kind": "ConfigMap",
            "namespaced": True,
            "verbs": ["create", "get", "list", "watch", "patch"],
        },
        {
            "name": "namespaces",
            "kind": "Namespace",
            "namespaced": False,
            "verbs": ["create", "get", "list", "watch"],
        },
        {"name": "pods", "kind": "Pod", "namespaced": True, "verbs": ["get", "list", "watch"]},
        {
            "name": "pods/exec",
            "kind": "PodExecOptions",
            "namespaced": True,
            "verbs": ["create", "get"],
        },
        {"name": "reviews", "kind": "Review", "namespaced": False, "verbs": ["create"]},
    ],
}
CR_DISCOVERY = {
    "kind": "APIResourceList",
    "resources": [
        {
            "name": "memcacheds",
            "kind": "Memcached",
            "namespaced": True,
            "verbs": ["get", "list", "watch", "patch"],
        }
    ],
}


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


def _response(status: int, body: Any, headers: dict[str, str] | None = None) -> bytes:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    head = [
        f"HTTP/1.1 {status} X",
        "Content-Type: application/json",
        f"Content-Length: {len(data)}",
        "Connection: close",
    ]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


@dataclass
class FakeApiServer:
    """Just enough of an API server, written on bare sockets so that the proxy meets real HTTP."""

    requests: list[Seen] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    current: dict[str, Any] = field(default_factory=dict)
    port: int = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        self._server.close()

    def seen(self, method: str) -> list[Seen]:
        return [r for r in self.requests if r.method == method]

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            first, *lines = head.rstrip("\r\n").split("\r\n")
            method, target, _ = first.split(" ")
            headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
            body = b""
            if "content-length" in headers:
                body = await reader.readexactly(int(headers["content-length"]))
            elif headers.get("transfer-encoding") == "chunked":
                while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
                    body += await reader.readexactly(size)
                    await reader.readexactly(2)
                await reader.readexactly(2)
            url = urlsplit(target)
            seen = Seen(method, url.path, parse_qs(url.query), headers, body)
            self.requests.append(seen)
            await self._answer(seen, reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _answer(
        self, r: Seen, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if r.headers.get("authorization") != f"Bearer {OPERATOR_TOKEN}":
            writer.write(_response(401, {"kind": "Status", "code": 401}))
            return
        if r.headers.get("upgrade"):
            if r.path.endswith("/refused"):
                writer.write(
                    _response(403, {"kind": "Status", "code": 403, "message": "exec refused"})
                )
                return
            writer.write(
                b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                b"Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n"
            )
            while data := await reader.read(65536):
                writer.write(data.upper())
                await writer.drain()
            return
        if r.path == "/api/v1":
            writer.write(_response(200, DISCOVERY))
        elif r.path == "/apis/cache.example.com/v1alpha1":
            writer.write(_response(200, CR_DISCOVERY))
        elif r.path == "/version":
            writer.write(_response(200, {"gitVersion": "v1.36.0"}, {"X-Upstream": "yes"}))
        elif "watch" in r.query or r.path.endswith("/log"):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
            writer.write(b"Transfer-Encoding: chunked\r\n\r\n")
            for i, line in enumerate((b'{"type":"ADDED"}\n', b'{"type":"DELETED"}\n')):
                if i:
                    await self.release.wait()
                writer.write(b"%x\r\n%s\r\n" % (len(line), line))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
        elif r.method == "GET" and r.path in self.current:
            writer.write(_response(200, self.current[r.path]))
        elif r.method == "GET" and r.path == "/api/v1/namespaces/shop/configmaps":
            item = {
                "metadata": {
                    "name": "l",
                    "namespace": "shop",
                    "uid": "l-uid",
                    "ownerReferences": [REF],
                }
            }
            writer.write(
                _response(200, {"apiVersion": "v1", "kind": "ConfigMapList", "items": [item]})
            )
        elif r.method in ("POST", "PUT", "PATCH"):
            try:
                obj = json.loads(r.body)
            except ValueError:
                writer.write(
                    _response(
                        400,
                        {
                            "kind": "Status",
                            "code": 400,
                            "message": "json parse error: invalid character",
                        },
                    )
                )
                return
            if isinstance(obj, dict):
                obj.setdefault("apiVersion", "v1")
                obj.setdefault("kind", "ConfigMap")
                obj.setdefault("metadata", {}).update(uid="dep-uid", namespace="shop")
            writer.write(_response(201, obj))
        else:
            writer.write(_response(404, {"kind": "Status", "code": 404}))


class Hook:
    def __init__(self) -> None:
        self.observed: list[tuple[Watch, ResourceInfo, dict]] = []

    def observe(self, watch: Watch, resource: ResourceInfo, obj: Any) -> None:
        self.observed.append((watch, resource, obj))


@dataclass
class Env:
    api: FakeApiServer
    proxy: Proxy
    hook: Hook
    session: aiohttp.ClientSession
    token: str

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.proxy.port}"

    async def call(self, method: str, path: str, *, token: str | None = None, **kwargs: Any):
        headers = kwargs.pop("headers", {})
        if token is None:
            token = self.token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        async with self.session.request(
            method, self.base + path, headers=headers, **kwargs
        ) as resp:
            return resp.status, await resp.read(), resp.headers


def run(scenario: Callable[[Env], Awaitable[None]], *, inject: bool = True) -> None:
    async def main() -> None:
        api = FakeApiServer()
        await api.start()
        creds = Credentials(server=f"http://127.0.0.1:{api.port}", token=OPERATOR_TOKEN)
        client = KubeClient(creds)
        hook = Hook()
        proxy = Proxy(creds, client=client, port=0, inject_owner_refs=inject, dependents=hook)
        await proxy.start()
        token = proxy.register(CR, Watch(MC))
        # A client that sends only what it is told to, like the kubernetes client does.
        client_headers = ("Accept-Encoding", "User-Agent")
        async with aiohttp.ClientSession(skip_auto_headers=client_headers) as session:
            try:
                await scenario(Env(api, proxy, hook, session, token))
            finally:
                await proxy.stop()
                await client.close()
                await api.stop()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_port_zero_is_reported_as_the_bound_port():
    async def scenario(env: Env) -> None:
        assert env.proxy.port > 0

    run(scenario)


def test_a_port_in_use_is_one_clear_error():
    async def scenario(env: Env) -> None:
        other = Proxy(env.proxy.creds, client=KubeClient(env.proxy.creds), port=env.proxy.port)
        with pytest.raises(ProxyStartError, match=f"cannot listen on 127.0.0.1:{env.proxy.port}"):
            await other.start()

    run(scenario)


def test_requests_without_a_live_run_token_are_refused():
    async def scenario(env: Env) -> None:
        for token in ("", "not-a-token"):
            status, body, _ = await env.call("GET", "/version", token=token)
            assert status == 401
            assert json.loads(body)["reason"] == "Unauthorized"
        status, _, _ = await env.call(
            "GET", "/version", token="", headers={"Authorization": "Basic eDp5"}
        )
        assert status == 401
        env.proxy.unregister(env.token)
        status, _, _ = await env.call("GET", "/version")
        assert status == 401
        assert env.api.requests == []  # nothing reached the API server

    run(scenario)


def test_requests_go_upstream_with_the_operators_credentials():
    async def scenario(env: Env) -> None:
        status, body, headers = await env.call(
            "GET", "/version", headers={"Accept": "application/json", "X-Extra": "1"}
        )
        assert status == 200
        assert json.loads(body) == {"gitVersion": "v1.36.0"}
        assert headers["X-Upstream"] == "yes"
        (seen,) = env.api.requests
        assert seen.headers["authorization"] == f"Bearer {OPERATOR_TOKEN}"
        assert seen.headers["x-extra"] == "1"
        # Nothing of the proxy's own: no gzip the client did not ask for, no user agent.
        assert "accept-encoding" not in seen.headers
        assert "user-agent" not in seen.headers

    run(scenario)


def test_a_create_in_the_owners_namespace_gets_a_reference_and_is_reported():
    async def scenario(env: Env) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c"},
            "data": {"a": "b"},
        }
        status, _, _ = await env.call("POST", "/api/v1/namespaces/shop/configmaps", json=body)
        assert status == 201
        sent = json.loads(env.api.seen("POST")[0].body)
        assert sent["metadata"]["ownerReferences"] == [REF]
        assert sent["data"] == {"a": "b"}
        ((watch, resource, obj),) = env.hook.observed
        assert watch.gvk == MC
        assert resource == ResourceInfo("", "v1", "ConfigMap", "configmaps", True)
        assert obj["metadata"]["ownerReferences"] == [REF]

    run(scenario)


def test_cluster_scoped_and_other_namespace_dependents_get_annotations():
    async def scenario(env: Env) -> None:
        await env.call(
            "POST", "/api/v1/namespaces", json={"kind": "Namespace", "metadata": {"name": "made"}}
        )
        await env.call(
            "POST", "/api/v1/namespaces/other/configmaps", json={"metadata": {"name": "c"}}
        )
        for seen in env.api.seen("POST"):
            meta = json.loads(seen.body)["metadata"]
            assert meta["annotations"] == {
                "operator-sdk/primary-resource": "shop/mc",
                "operator-sdk/primary-resource-type": "Memcached.cache.example.com",
            }
            assert "ownerReferences" not in meta

    run(scenario)


def test_a_merge_patch_keeps_the_current_references():
    async def scenario(env: Env) -> None:
        path = "/api/v1/namespaces/shop/configmaps/c"
        env.api.current[path] = {
            "kind": "ConfigMap",
            "metadata": {"name": "c", "ownerReferences": [OTHER]},
        }
        headers = {"Content-Type": "application/merge-patch+json"}
        status, _, _ = await env.call("PATCH", path, data=b'{"data":{"a":"c"}}', headers=headers)
        assert status == 201
        (patch,) = env.api.seen("PATCH")
        assert patch.headers["content-type"] == "application/merge-patch+json"
        assert json.loads(patch.body) == {
            "data": {"a": "c"},
            "metadata": {"ownerReferences": [OTHER, REF]},
        }

    run(scenario)


def test_server_side_apply_and_json_patch_are_marked():
    async def scenario(env: Env) -> None:
        path = "/api/v1/namespaces/shop/configmaps/c"
        env.api.current[path] = {"kind": "ConfigMap", "metadata": {"name": "c"}}
        apply = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
        await env.call(
            "PATCH",
            path + "?fieldManager=x",
            data=apply,
            headers={"Content-Type": "application/apply-patch+yaml"},
        )
        ops = b'[{"op":"add","path":"/data/a","value":"b"}]'
        await env.call(
            "PATCH", path, data=ops, headers={"Content-Type": "application/json-patch+json"}
        )
        applied, patched = env.api.seen("PATCH")
        assert applied.query == {"fieldManager": ["x"]}
        assert json.loads(applied.body)["metadata"]["ownerReferences"] == [REF]
        assert json.loads(patched.body)[-1] == {
            "op": "add",
            "path": "/metadata/ownerReferences",
            "value": [REF],
        }

    run(scenario)


def test_writes_to_the_owner_itself_subresources_and_virtual_kinds_are_untouched():
    async def scenario(env: Env) -> None:
        headers = {"Content-Type": "application/merge-patch+json"}
        bodies = [
            (
                "/apis/cache.example.com/v1alpha1/namespaces/shop/memcacheds/mc",
                b'{"spec":{"size":2}}',
            ),
            (
                "/apis/cache.example.com/v1alpha1/namespaces/shop/memcacheds/mc/status",
                b'{"status":{}}',
            ),
        ]
        for path, body in bodies:
            await env.call("PATCH", path, data=body, headers=headers)
        await env.call(
            "POST",
            "/api/v1/reviews",
            data=b'{"spec":{}}',
            headers={"Content-Type": "application/json"},
        )
        assert [r.body for r in env.api.requests if r.method != "GET"] == [b for _, b in bodies] + [
            b'{"spec":{}}'
        ]

    run(scenario)


def test_a_malformed_body_gets_the_api_servers_own_error_and_the_proxy_stays_up():
    async def scenario(env: Env) -> None:
        garbage = b'{"metadata": {"name": '
        status, body, _ = await env.call(
            "POST",
            "/api/v1/namespaces/shop/configmaps",
            data=garbage,
            headers={"Content-Type": "application/json"},
        )
        assert status == 400
        assert json.loads(body)["message"] == "json parse error: invalid character"
        assert env.api.seen("POST")[0].body == garbage  # forwarded byte for byte
        for content_type in (
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ):
            status, _, _ = await env.call(
                "PATCH",
                "/api/v1/namespaces/shop/configmaps/c",
                data=b"\xff{[",
                headers={"Content-Type": content_type},
            )
            assert status == 400
        status, _, _ = await env.call("GET", "/version")
        assert status == 200

    run(scenario)


def test_watch_responses_are_streamed_as_they_come():
    async def scenario(env: Env) -> None:
        headers = {"Authorization": f"Bearer {env.token}"}
        url = env.base + "/api/v1/namespaces/shop/configmaps?watch=true"
        async with env.session.get(url, headers=headers) as resp:
            assert resp.status == 200
            first = await asyncio.wait_for(resp.content.readline(), 10)
            assert json.loads(first) == {"type": "ADDED"}  # before the API server finished
            env.api.release.set()
            assert json.loads(await resp.content.readline()) == {"type": "DELETED"}
            assert await resp.content.read() == b""
        assert env.hook.observed == []

    run(scenario)


def test_reads_of_owned_objects_are_reported_for_recovery():
    async def scenario(env: Env) -> None:
        path = "/api/v1/namespaces/shop/configmaps/c"
        env.api.current[path] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "c",
                "namespace": "shop",
                "uid": "c-uid",
                "ownerReferences": [REF],
            },
        }
        await env.call("GET", path)
        await env.call("GET", "/api/v1/namespaces/shop/configmaps")
        names = [(r.kind, r.plural, obj["metadata"]["name"]) for _, r, obj in env.hook.observed]
        assert names == [("ConfigMap", "configmaps", "c"), ("ConfigMap", "configmaps", "l")]

    run(scenario)


async def _upgrade(env: Env, path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", env.proxy.port)
    writer.write(
        (
            f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {env.token}\r\n"
            "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
            "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n"
        ).encode()
    )
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    return reader, writer, head


def test_an_upgraded_connection_carries_bytes_both_ways():
    async def scenario(env: Env) -> None:
        path = "/api/v1/namespaces/shop/pods/p/exec?command=sh&stdin=true"
        reader, writer, head = await _upgrade(env, path)
        assert head.startswith(b"HTTP/1.1 101")
        assert b"X-Stream-Protocol-Version: v4.channel.k8s.io" in head
        writer.write(b"hello")
        assert await asyncio.wait_for(reader.readexactly(5), 10) == b"HELLO"
        big = b"x" * (3 * 1024 * 1024)  # more than every buffer on the way
        writer.write(big)
        assert await asyncio.wait_for(reader.readexactly(len(big)), 20) == big.upper()
        (seen,) = env.api.requests
        assert seen.headers["authorization"] == f"Bearer {OPERATOR_TOKEN}"
        assert seen.query == {"command": ["sh"], "stdin": ["true"]}
        writer.close()
        status, _, _ = await env.call("GET", "/version")  # and the proxy goes on
        assert status == 200

    run(scenario)


def test_a_refused_upgrade_is_relayed_as_the_api_servers_answer():
    async def scenario(env: Env) -> None:
        reader, writer, head = await _upgrade(env, "/api/v1/namespaces/shop/pods/p/refused")
        assert head.startswith(b"HTTP/1.1 403")
        length = re.search(rb"Content-Length: (\d+)", head, re.IGNORECASE)
        assert length is not None
        body = await asyncio.wait_for(reader.readexactly(int(length.group(1))), 10)
        assert json.loads(body)["message"] == "exec refused"
        writer.close()

    run(scenario)


def test_an_unreachable_api_server_is_a_502_not_a_crash():
    async def scenario(env: Env) -> None:
        await env.api.stop()
        env.api._server.close()
        await env.api._server.wait_closed()
        status, body, _ = await env.call("GET", "/api/v1/namespaces/shop/configmaps/c")
        assert status == 502
        assert "did not answer" in json.loads(body)["message"]
        status, _, _ = await env.call("GET", "/version")
        assert status == 502  # still serving

    run(scenario)


def test_inject_owner_ref_false_marks_nothing_and_reports_nothing(caplog):
    caplog.set_level(logging.INFO, logger="proxy")

    async def scenario(env: Env) -> None:
        body = {"metadata": {"name": "c"}}
        await env.call("POST", "/api/v1/namespaces/shop/configmaps", json=body)
        assert json.loads(env.api.seen("POST")[0].body) == body
        assert env.hook.observed == []

    run(scenario, inject=False)
    assert INJECTION_OFF_WARNING in caplog.text


def test_watch_dependent_resources_false_still_marks_but_reports_nothing():
    async def scenario(env: Env) -> None:
        token = env.proxy.register(CR, Watch(MC, watch_dependent_resources=False))
        body = {"metadata": {"name": "c"}}
        await env.call("POST", "/api/v1/namespaces/shop/configmaps", json=body, token=token)
        await env.call("GET", "/api/v1/namespaces/shop/configmaps", token=token)
        assert json.loads(env.api.seen("POST")[0].body)["metadata"]["ownerReferences"] == [REF]
        assert env.hook.observed == []

    run(scenario)
