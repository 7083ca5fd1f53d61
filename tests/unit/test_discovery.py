"""API discovery without a cluster: what a listing says, when it is fetched again, and what
reaches the caller when the API server refuses or does not answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ansible_operator.kube.client import ApiError, ResourceInfo, Unreachable
from ansible_operator.kube.discovery import Discovery

CACHE_V1 = "/apis/cache.example.com/v1"
MEMCACHED = {
    "name": "memcacheds",
    "kind": "Memcached",
    "namespaced": True,
    "verbs": ["get", "list", "watch", "create"],
}
REDIS = {"name": "redis", "kind": "Redis", "namespaced": True, "verbs": ["get", "list", "watch"]}
CORE_V1 = {
    "resources": [
        {"name": "configmaps", "kind": "ConfigMap", "namespaced": True, "verbs": ["list", "watch"]},
        {"name": "pods/log", "kind": "Pod", "namespaced": True, "verbs": ["get"]},
        {
            "name": "namespaces",
            "kind": "Namespace",
            "namespaced": False,
            "verbs": ["list", "watch"],
        },
        {"name": "bindings", "kind": "Binding", "namespaced": True, "verbs": ["create"]},
    ]
}


class FakeClient:
    """Answers GETs from ``paths`` (a value, or an exception to raise) and counts them."""

    def __init__(self, paths: dict[str, Any]) -> None:
        self.paths = paths
        self.gets: list[str] = []

    async def get(self, path: str, params: dict[str, str] | None = None) -> Any:
        self.gets.append(path)
        await asyncio.sleep(0)  # let concurrent lookups meet
        value = self.paths.get(path, ApiError(404, "NotFound", "the server could not find it"))
        if isinstance(value, Exception):
            raise value
        return value


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(paths: dict[str, Any]) -> tuple[FakeClient, Clock, Discovery]:
    client, clock = FakeClient(paths), Clock()
    return client, clock, Discovery(client, refresh_after=10.0, clock=clock)


def test_a_kind_by_plural_and_by_kind_from_one_listing() -> None:
    async def scenario() -> None:
        client, _, discovery = make({CACHE_V1: {"resources": [MEMCACHED]}, "/api/v1": CORE_V1})
        served = await discovery.by_plural("cache.example.com", "v1", "memcacheds")
        assert served is not None
        assert served.info == ResourceInfo(
            "cache.example.com", "v1", "Memcached", "memcacheds", True
        )
        assert served.verbs == {"get", "list", "watch", "create"}
        assert not served.is_virtual
        info = await discovery.resource("cache.example.com/v1", "Memcached")
        assert info == served.info
        namespaces = await discovery.resource("v1", "Namespace")
        assert namespaces == ResourceInfo("", "v1", "Namespace", "namespaces", False)
        assert await discovery.by_plural("", "v1", "pods/log") is None  # subresources are not kinds
        assert client.gets == [CACHE_V1, "/api/v1"]

    asyncio.run(scenario())


def test_a_kind_without_get_list_watch_is_virtual() -> None:
    async def scenario() -> None:
        review = {"name": "tokenreviews", "kind": "TokenReview", "verbs": ["create"]}
        _, _, discovery = make({"/apis/authentication.k8s.io/v1": {"resources": [review]}})
        served = await discovery.by_plural("authentication.k8s.io", "v1", "tokenreviews")
        assert served is not None
        assert served.is_virtual
        assert served.info.namespaced is False

    asyncio.run(scenario())


def test_a_missing_name_fetches_again_at_most_every_refresh_after() -> None:
    async def scenario() -> None:
        client, clock, discovery = make({CACHE_V1: {"resources": [MEMCACHED]}})
        assert await discovery.by_plural("cache.example.com", "v1", "redis") is None
        assert await discovery.by_plural("cache.example.com", "v1", "redis") is None
        with pytest.raises(ApiError) as excinfo:
            await discovery.resource("cache.example.com/v1", "Redis")
        assert excinfo.value.status == 404
        assert str(excinfo.value) == "404 NotFound: Redis is not served by cache.example.com/v1"
        assert client.gets == [CACHE_V1]  # the misses within 10 s asked nothing

        client.paths[CACHE_V1] = {"resources": [MEMCACHED, REDIS]}  # the CRD got a new kind
        clock.now += 10.0
        served = await discovery.by_plural("cache.example.com", "v1", "redis")
        assert served is not None
        assert served.info.kind == "Redis"
        assert await discovery.resource("cache.example.com/v1", "Memcached")
        assert client.gets == [CACHE_V1, CACHE_V1]

    asyncio.run(scenario())


def test_an_unserved_group_version_is_an_empty_listing() -> None:
    async def scenario() -> None:
        client, _, discovery = make({})
        assert await discovery.by_plural("nowhere.example.com", "v1", "things") is None
        with pytest.raises(ApiError) as excinfo:
            await discovery.resource("nowhere.example.com/v1", "Thing")
        assert excinfo.value.status == 404
        assert client.gets == ["/apis/nowhere.example.com/v1"]

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "error", [ApiError(503, "ServiceUnavailable", "down"), Unreachable("GET: refused")]
)
def test_failures_reach_the_caller_and_are_not_kept(error: Exception) -> None:
    async def scenario() -> None:
        client, _, discovery = make({CACHE_V1: error})
        with pytest.raises(type(error)):
            await discovery.by_plural("cache.example.com", "v1", "memcacheds")
        with pytest.raises(type(error)):
            await discovery.resource("cache.example.com/v1", "Memcached")
        client.paths[CACHE_V1] = {"resources": [MEMCACHED]}
        assert await discovery.by_plural("cache.example.com", "v1", "memcacheds") is not None
        assert client.gets == [CACHE_V1] * 3  # no waiting after a failure

    asyncio.run(scenario())


def test_concurrent_lookups_share_one_fetch() -> None:
    async def scenario() -> None:
        client, _, discovery = make({CACHE_V1: {"resources": [MEMCACHED]}})
        found = await asyncio.gather(
            *(discovery.by_plural("cache.example.com", "v1", "memcacheds") for _ in range(5))
        )
        assert all(s is not None and s.info.kind == "Memcached" for s in found)
        assert client.gets == [CACHE_V1]

    asyncio.run(scenario())


def test_listable_kinds_in_preferred_versions_skipping_broken_groups() -> None:
    async def scenario() -> None:
        client, _, discovery = make(
            {
                "/api": {"versions": ["v1"]},
                "/apis": {
                    "groups": [
                        {"name": "cache.example.com", "preferredVersion": {"version": "v1"}},
                        {"name": "broken.example.com", "preferredVersion": {"version": "v1"}},
                        {"name": "empty.example.com"},
                    ]
                },
                "/api/v1": CORE_V1,
                CACHE_V1: {"resources": [MEMCACHED]},
                "/apis/broken.example.com/v1": ApiError(503, "ServiceUnavailable", "down"),
            }
        )
        listable = await discovery.listable()
        assert sorted(s.info.plural for s in listable) == ["configmaps", "memcacheds", "namespaces"]
        # The listings are kept: a later lookup asks nothing more.
        assert await discovery.resource("cache.example.com/v1", "Memcached")
        assert client.gets == ["/api", "/apis", "/api/v1", CACHE_V1, "/apis/broken.example.com/v1"]

    asyncio.run(scenario())


def test_listable_fails_when_the_api_server_does_not_answer() -> None:
    async def scenario() -> None:
        _, _, discovery = make({"/api": Unreachable("GET /api: refused")})
        with pytest.raises(Unreachable):
            await discovery.listable()

    asyncio.run(scenario())
