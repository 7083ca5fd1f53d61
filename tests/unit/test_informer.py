"""The informer without a cluster: what a relist delivers across a gap, and when the loop lists,
resumes, relists and waits (the same against the API server: tests/e2e/test_watch_faults.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ansible_operator.core.watches import GVK
from ansible_operator.kube import informer as informer_module
from ansible_operator.kube.client import ApiError, Unreachable
from ansible_operator.kube.discovery import Discovery
from ansible_operator.kube.informer import Informer, relist_changes, vanished
from tests.unit.fake_watch import FakeClient, ev, page

THING = GVK("test.example.com", "v1", "Thing")
DISCOVERY = {
    "/apis/test.example.com/v1": {
        "resources": [{"name": "things", "kind": "Thing", "namespaced": True, "verbs": []}]
    }
}
PATH = "/apis/test.example.com/v1/namespaces/shop/things"


def thing(name: str, rv: str) -> dict[str, Any]:
    return {"kind": "Thing", "metadata": {"name": name, "namespace": "shop", "resourceVersion": rv}}


# -- what a relist delivers -----------------------------------------------------------------------


def test_a_relist_delivers_what_changed_across_the_gap():
    known = {("shop", "same"): "1", ("shop", "changed"): "2", ("shop", "gone"): "3"}
    seen: set = set()
    items = [thing("same", "1"), thing("changed", "7"), thing("new", "8")]
    events = list(relist_changes(known, seen, items))
    assert [(t, o["metadata"]["name"]) for t, o in events] == [
        ("MODIFIED", "changed"),
        ("ADDED", "new"),
    ]
    assert list(vanished(known, seen)) == [
        ("DELETED", {"metadata": {"namespace": "shop", "name": "gone"}})
    ]
    assert known == {("shop", "same"): "1", ("shop", "changed"): "7", ("shop", "new"): "8"}


def test_the_first_list_delivers_everything_as_added_and_a_cluster_scoped_stand_in():
    known: dict = {}
    seen: set = set()
    items = [thing("a", "1"), thing("b", "2")]
    assert [t for t, _ in relist_changes(known, seen, items)] == ["ADDED", "ADDED"]
    assert list(vanished(known, seen)) == []
    assert list(vanished({("", "node"): "1"}, set())) == [
        ("DELETED", {"metadata": {"name": "node"}})
    ]


# -- the loop ------------------------------------------------------------------------------------


class Delays:
    """asyncio.sleep in the informer, recorded and not waited."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[float] = []
        real = asyncio.sleep

        async def sleep(delay: float) -> None:
            self.seen.append(delay)
            await real(0)

        monkeypatch.setattr(informer_module.asyncio, "sleep", sleep)


def make(client: FakeClient, **kwargs: Any) -> tuple[Informer, list[tuple[str, str]]]:
    delivered: list[tuple[str, str]] = []
    informer = Informer(
        client,  # type: ignore[arg-type]
        Discovery(client),  # type: ignore[arg-type]
        THING,
        namespace="shop",
        handler=lambda t, obj: delivered.append((t, obj["metadata"]["name"])),
        **kwargs,
    )
    return informer, delivered


def run(scenario):
    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_lists_in_pages_watches_resumes_and_relists_on_410(monkeypatch):
    delays = Delays(monkeypatch)
    counted: list[int] = []
    reads: list[int] = []

    def params() -> dict[str, str]:  # a new selector at each read
        reads.append(1)
        return {"shardSelector": f"s{len(reads)}"}

    async def scenario():
        client = FakeClient(DISCOVERY)
        client.lists = [
            page(thing("a", "1"), cont="more"),
            page(thing("b", "2"), rv="11"),
            # After the 410: b is gone, a changed, c is new.
            page(thing("a", "14"), thing("c", "13"), rv="20"),
        ]
        client.streams = [
            [
                ev("MODIFIED", thing("a", "12")),
                ev("BOOKMARK", {"kind": "Thing", "metadata": {"resourceVersion": "15"}}),
            ],
            Unreachable("connection reset"),
            [ev("ERROR", {"kind": "Status", "code": 410, "reason": "Expired"})],
            [ev("DELETED", thing("c", "21"))],
        ]
        informer, delivered = make(client, count=lambda: counted.append(1), params=params)
        task = asyncio.create_task(informer.run())
        await informer.synced.wait()
        assert delivered[:2] == [("ADDED", "a"), ("ADDED", "b")]
        await client.watching.wait()
        task.cancel()
        assert delivered == [
            ("ADDED", "a"),
            ("ADDED", "b"),
            ("MODIFIED", "a"),
            ("MODIFIED", "a"),  # the relist: a changed since 12,
            ("ADDED", "c"),  # c is new,
            ("DELETED", "b"),  # b vanished
            ("DELETED", "c"),
        ]
        assert len(counted) == len(delivered)
        watches = [params for method, _, params in client.calls if method == "WATCH"]
        # From the list, from the bookmark twice (dropped, then resumed into a 410), from the
        # relist, from the last event.
        assert [w["resourceVersion"] for w in watches] == ["11", "15", "15", "20", "21"]
        assert all(w["allowWatchBookmarks"] == "true" for w in watches)
        # The parameters are read at each list and each watch request.
        assert [w["shardSelector"] for w in watches] == ["s2", "s3", "s4", "s6", "s7"]
        lists = [params for method, path, params in client.calls if method == "GET"]
        assert [p.get("continue") for p in lists] == [None, "more", None]
        assert [p["shardSelector"] for p in lists] == ["s1", "s1", "s5"]

    run(scenario)
    # Waited only after the broken connection and the 410; a watch that ended after events
    # was resumed at once.
    assert delays.seen == [1.0, 1.0]


def test_failures_back_off_and_nothing_spins(monkeypatch):
    delays = Delays(monkeypatch)

    async def scenario():
        client = FakeClient(DISCOVERY)
        client.lists = [ApiError(403, "Forbidden", "no"), page(thing("a", "1"))]
        client.streams = [
            ApiError(500, "InternalError", "boom"),
            [ev("ERROR", {"kind": "Status", "code": 500, "reason": "InternalError"})],
            ValueError("a line that is not JSON"),
            [],  # ended at once, without an event
            [ev("BOOKMARK", {"kind": "Thing", "metadata": {"resourceVersion": "30"}})],
            [],
        ]
        informer, delivered = make(client, max_backoff=4.0)
        task = asyncio.create_task(informer.run())
        await client.watching.wait()
        task.cancel()
        assert delivered == [("ADDED", "a")]
        watches = [
            params["resourceVersion"] for method, _, params in client.calls if method == "WATCH"
        ]
        assert watches == ["10", "10", "10", "10", "10", "30", "30"]

    run(scenario)
    # The refused list, then each failed or empty watch, doubling to the cap; a bookmark
    # starts the backoff over.
    assert delays.seen == [1.0, 2.0, 4.0, 4.0, 4.0, 1.0]


def test_a_kind_not_served_yet_is_waited_for(monkeypatch, caplog):
    delays = Delays(monkeypatch)

    async def scenario():
        client = FakeClient()
        client.paths["/apis/test.example.com/v1"] = {"resources": []}
        client.lists = [page(thing("a", "1"))]
        clock = [0.0]
        discovery = Discovery(client, clock=lambda: clock[0])  # type: ignore[arg-type]
        delivered: list[str] = []
        informer = Informer(
            client,  # type: ignore[arg-type]
            discovery,
            THING,
            namespace="shop",
            handler=lambda t, obj: delivered.append(t),
        )
        task = asyncio.create_task(informer.run())
        while len(delays.seen) < 2:
            await asyncio.sleep(0)
        assert not informer.synced.is_set()
        client.paths["/apis/test.example.com/v1"] = DISCOVERY["/apis/test.example.com/v1"]
        clock[0] = 60.0  # discovery asks again
        await informer.synced.wait()
        task.cancel()
        assert delivered == ["ADDED"]

    run(scenario)
    refused = [r for r in caplog.records if r.getMessage() == "Cannot list or watch a watched kind"]
    assert refused and all(r.levelname == "WARNING" for r in refused)


def deep_thing(name: str, rv: str, depth: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        spec = {"a": spec}
    return {**thing(name, rv), "spec": spec}


def test_an_object_it_cannot_handle_is_skipped_and_reported_and_the_others_go_on(
    monkeypatch, caplog
):
    Delays(monkeypatch)
    skipped: list[tuple[str, str]] = []

    async def scenario():
        client = FakeClient(DISCOVERY)
        client.lists = [page(deep_thing("deep", "1", 500), thing("a", "2"))]
        client.streams = [
            [
                ev("MODIFIED", thing("bad", "12")),  # the handler raises on this one
                ev("ADDED", thing("b", "13")),
                ev("MODIFIED", deep_thing("a", "14", 300)),
                ev("DELETED", deep_thing("deep", "15", 500)),
            ],
        ]
        delivered: list[tuple[str, str]] = []

        def handler(event_type: str, obj: dict[str, Any]) -> None:
            if obj["metadata"]["name"] == "bad":
                raise RecursionError("maximum recursion depth exceeded")
            delivered.append((event_type, obj["metadata"]["name"]))

        informer = Informer(
            client,  # type: ignore[arg-type]
            Discovery(client),  # type: ignore[arg-type]
            THING,
            namespace="shop",
            handler=handler,
            skipped=lambda obj, why: skipped.append((obj["metadata"]["name"], why)),
        )
        task = asyncio.create_task(informer.run())
        await client.watching.wait()
        task.cancel()
        # The deep object's deletion reaches the handler as a stand-in naming its key.
        assert delivered == [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "deep")]
        watches = [p["resourceVersion"] for method, _, p in client.calls if method == "WATCH"]
        assert watches == ["10", "15"]  # resumed after the skipped ones, not before them

    run(scenario)
    assert skipped == [
        ("deep", "nested more than 128 levels deep"),
        ("bad", "handling it failed: RecursionError: maximum recursion depth exceeded"),
        ("a", "nested more than 128 levels deep"),
    ]
    warned = [r for r in caplog.records if r.getMessage().startswith("Skipped a watched object")]
    assert [r.object for r in warned] == ["shop/deep", "shop/bad", "shop/a"]  # type: ignore[attr-defined]
