"""A source against a scripted API server: one informer whose events reach each of its handlers
in order, counted per kind, with an object it cannot take skipped and reported; and the object
handler behind it turning events into requests that carry why they run."""

from __future__ import annotations

import asyncio
from typing import Any

from ansible_operator.core import objects, triggers
from ansible_operator.core.watches import GVK, Watch
from ansible_operator.kube.discovery import Discovery
from ansible_operator.runtime.control.controller import Controller
from ansible_operator.runtime.control.handlers import ForObject
from ansible_operator.runtime.control.reconcile import Request, Result
from ansible_operator.runtime.control.sources import Sources
from tests.unit.fake_watch import FakeClient, ev, page

THING = GVK("test.example.com", "v1", "Thing")
DISCOVERY = {
    "/apis/test.example.com/v1": {
        "resources": [{"name": "things", "kind": "Thing", "namespaced": True, "verbs": []}]
    }
}


def thing(name: str, rv: str, generation: int = 1, **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": "shop", "resourceVersion": rv, "generation": generation}
    return {"kind": "Thing", "metadata": meta, "spec": {}, **extra}


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"x": value}
    return value


def test_a_source_hands_each_event_to_its_handlers_in_order_and_the_controller_its_why():
    counted: list[GVK] = []
    skipped: list[tuple[str, str]] = []
    seen_first: list[tuple[str, str, bool]] = []  # (event, name, already queued?)

    async def reconcile(request: Request) -> Result:
        return Result()

    async def scenario() -> Controller:
        client = FakeClient(DISCOVERY)
        client.lists = [page(thing("a", "1"), rv="10")]
        client.streams = [
            [
                ev("MODIFIED", thing("a", "11", status={"phase": "x"})),  # status only
                ev("MODIFIED", thing("deep", "12", spec=nested(300))),  # skipped
                ev("MODIFIED", thing("a", "13", generation=2)),
            ]
        ]
        sources = Sources(
            client,  # type: ignore[arg-type]
            Discovery(client),  # type: ignore[arg-type]
            count=counted.append,
            skipped=lambda gvk: lambda obj, why: skipped.append((objects.key(obj)[1], why)),
        )
        controller = Controller(Watch(THING, role="/r"), reconcile, workers=1)

        def first(event_type: str, obj: dict[str, Any]) -> None:
            key = objects.key(obj)
            seen_first.append((event_type, key[1], key in controller._why))

        source = sources.kind(THING, [first, ForObject(controller)], namespace="shop")
        task = asyncio.create_task(source.run())
        await client.watching.wait()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return controller

    controller = asyncio.run(asyncio.wait_for(scenario(), 30))
    # The first handler saw every event the informer delivered before the object handler did.
    assert seen_first == [("ADDED", "a", False), ("MODIFIED", "a", True), ("MODIFIED", "a", True)]
    assert counted == [THING] * 4  # every event the watch brought, the skipped one too
    [(name, why)] = skipped
    assert (name, why) == ("deep", "nested more than 128 levels deep")
    # One queued run (created, then changed while it waited): its reason is the first one.
    assert len(controller.queue) == 1
    assert controller._why[("shop", "a")].reason == triggers.CREATED


def test_a_request_outside_the_shards_held_is_dropped_and_a_gone_object_forgotten():
    async def reconcile(request: Request) -> Result:
        return Result()

    async def scenario() -> None:
        watch = Watch(THING, role="/r")
        controller = Controller(watch, reconcile, workers=1, owns={"u1"}.__contains__)
        events = ForObject(controller)
        for name, uid in (("a", "u1"), ("b", "u2")):
            obj = thing(name, "1")
            obj["metadata"]["uid"] = uid
            events("ADDED", obj)
        assert controller.queue._queued == {("shop", "a")}
        controller.enqueue(Request(("shop", "b"), triggers.ADOPTION))  # its owner is not ours
        assert controller.queue._queued == {("shop", "a")}
        controller.queue.schedule(("shop", "a"), 100)
        events("DELETED", thing("a", "2"))
        assert controller.queue.scheduled(("shop", "a")) is None
        assert ("shop", "a") not in controller._why

    asyncio.run(scenario())
