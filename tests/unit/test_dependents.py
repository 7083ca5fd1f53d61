"""Dependent watches without a cluster: which kinds get watched, what an event re-runs, what is
remembered, and what their informers' relists re-run (the informer itself: test_informer.py)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from ansible_operator.core.changes import fields_of
from ansible_operator.core.ownership import PRIMARY_RESOURCE, PRIMARY_RESOURCE_TYPE
from ansible_operator.core.watches import GVK, Watch
from ansible_operator.kube.client import ApiError, ResourceInfo
from ansible_operator.kube.discovery import Discovery
from ansible_operator.runtime.control.dependents import (
    Change,
    DependentWatches,
    Entry,
    OwnerKind,
    Subscription,
    apply_event,
    event_owners,
)
from ansible_operator.runtime.control.sources import Sources
from tests.unit.fake_watch import FakeClient, ev, page

MC = GVK("cache.example.com", "v1alpha1", "Memcached")
OTHER_OWNER = GVK("cache.example.com", "v1alpha1", "Redis")
CONFIG_MAPS = ResourceInfo("", "v1", "ConfigMap", "configmaps", True)
NAMESPACES = ResourceInfo("", "v1", "Namespace", "namespaces", False)
SECRET = GVK("", "v1", "Secret")
EVENTS = ResourceInfo("", "v1", "Event", "events", True)
NEW_EVENTS = ResourceInfo("events.k8s.io", "v1", "Event", "events", True)


def ref(name="mc", kind="Memcached", uid="u1"):
    return {"apiVersion": "cache.example.com/v1alpha1", "kind": kind, "name": name, "uid": uid}


def cm(name="c", namespace="shop", refs=(), annotations=None, data=None, rv="1", status=None):
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "resourceVersion": rv}
    if refs:
        meta["ownerReferences"] = list(refs)
    if annotations:
        meta["annotations"] = annotations
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    obj["data"] = data or {"a": "1"}
    if status is not None:
        obj["status"] = status
    return obj


def owners_of(obj):
    subs = {MC: Subscription(by_reference=True, by_annotation=True)}
    return event_owners(obj, subs, {MC: OwnerKind(Watch(MC), lambda key: None)})


OWNED = cm(refs=[ref()])


# -- what one event does ------------------------------------------------------------------------


def test_a_create_is_remembered_but_never_re_runs():
    state: dict = {}
    assert apply_event(state, "ADDED", OWNED, owners_of).owners == set()
    assert set(state) == {("shop", "c")}
    entry = state[("shop", "c")]
    assert isinstance(entry, Entry) and entry.fields == fields_of(OWNED)
    assert entry.owners == {(MC, ("shop", "mc"))}


def test_an_unowned_object_leaves_nothing_behind():
    state: dict = {}
    for event in ("ADDED", "MODIFIED", "DELETED"):
        assert apply_event(state, event, cm(), owners_of).owners == set()
    assert state == {}


def test_updates_pass_only_when_more_than_status_and_versions_changed():
    state: dict = {}
    apply_event(state, "ADDED", OWNED, owners_of)
    noise = cm(refs=[ref()], rv="2", status={"phase": "x"})
    assert apply_event(state, "MODIFIED", noise, owners_of).owners == set()
    real = cm(refs=[ref()], rv="3", data={"a": "2"})
    assert apply_event(state, "MODIFIED", real, owners_of) == Change(
        frozenset({(MC, ("shop", "mc"))}), ("data.a",)
    )
    assert apply_event(state, "MODIFIED", real, owners_of).owners == set()


def test_a_delete_always_passes_and_forgets():
    state: dict = {}
    apply_event(state, "ADDED", OWNED, owners_of)
    assert apply_event(state, "DELETED", OWNED, owners_of).owners == {(MC, ("shop", "mc"))}
    assert state == {}


def test_losing_an_owner_re_runs_the_old_owner():
    state: dict = {}
    apply_event(state, "ADDED", cm(refs=[ref("a", uid="1"), ref("b", uid="2")]), owners_of)
    owners = apply_event(state, "MODIFIED", cm(refs=[ref("b", uid="2")]), owners_of).owners
    assert owners == {(MC, ("shop", "a")), (MC, ("shop", "b"))}
    assert apply_event(state, "MODIFIED", cm(), owners_of).owners == {(MC, ("shop", "b"))}
    assert state == {}


def test_an_object_that_just_became_owned_re_runs_its_owner():
    assert apply_event({}, "MODIFIED", OWNED, owners_of).owners == {(MC, ("shop", "mc"))}
    assert apply_event({}, "ADDED", OWNED, owners_of).owners == set()  # new, or new to a relist


def test_annotation_owners_and_subscription_modes():
    annotated = cm(
        namespace="elsewhere",
        annotations={
            PRIMARY_RESOURCE: "shop/mc",
            PRIMARY_RESOURCE_TYPE: "Memcached.cache.example.com",
        },
    )
    both = cm(refs=[ref()], annotations=annotated["metadata"]["annotations"])
    owners = {MC: OwnerKind(Watch(MC), lambda key: None)}
    refs_only = {MC: Subscription(by_reference=True)}
    annotations_only = {MC: Subscription(by_annotation=True)}
    assert event_owners(annotated, refs_only, owners) == set()
    assert event_owners(annotated, annotations_only, owners) == {(MC, ("shop", "mc"))}
    assert event_owners(both, refs_only, owners) == {(MC, ("shop", "mc"))}
    cluster_owner = {MC: OwnerKind(Watch(MC), lambda key: None, namespaced=False)}
    assert event_owners(OWNED, refs_only, cluster_owner) == {(MC, ("", "mc"))}
    assert event_owners(OWNED, {OTHER_OWNER: Subscription(True, True)}, owners) == set()


# -- which kinds get watched ---------------------------------------------------------------------


OWNER_DISCOVERY = {
    "resources": [
        {"name": "memcacheds", "kind": "Memcached", "namespaced": True},
        {"name": "redis", "kind": "Redis", "namespaced": True},
    ]
}
CORE_DISCOVERY = {
    "resources": [
        {"name": "configmaps", "kind": "ConfigMap", "namespaced": True},
        {"name": "namespaces", "kind": "Namespace", "namespaced": False},
    ]
}


def fake_client() -> FakeClient:
    """Scripted lists and streams; the owner kinds' and core kinds' discovery answered."""
    return FakeClient(
        discovery={f"/apis/{MC.group}/{MC.version}": OWNER_DISCOVERY, "/api/v1": CORE_DISCOVERY}
    )


def run(scenario):
    asyncio.run(asyncio.wait_for(scenario(), 30))


def make(client, watches, namespaces=()):
    sources = Sources(client, Discovery(client), namespaces=namespaces, max_backoff=0.01)
    deps = DependentWatches(sources)
    enqueued: list[tuple[GVK, tuple[str, str]]] = []
    for watch in watches:
        deps.add_owner(watch, lambda request, gvk=watch.gvk: enqueued.append((gvk, request.key)))
    return deps, enqueued


@pytest.mark.parametrize(
    ("watch", "resource", "obj", "namespaces", "expected"),
    [
        (Watch(MC), CONFIG_MAPS, OWNED, (), Subscription(True, False)),
        (Watch(MC), CONFIG_MAPS, OWNED, ("shop",), Subscription(True, False)),
        (Watch(MC), CONFIG_MAPS, OWNED, ("elsewhere",), None),  # not a watched namespace
        (Watch(MC), CONFIG_MAPS, cm(), (), None),  # nobody's
        (Watch(MC), CONFIG_MAPS, cm(refs=[ref(kind="Redis")]), (), None),  # someone else's
        (Watch(MC, watch_dependent_resources=False), CONFIG_MAPS, OWNED, (), None),
        (Watch(MC, blacklist=(GVK("", "v1", "ConfigMap"),)), CONFIG_MAPS, OWNED, (), None),
        (Watch(MC, blacklist=(SECRET,)), CONFIG_MAPS, OWNED, (), Subscription(True, False)),
        # A role's Event, given its owner's reference: never a dependent, in either API group.
        (Watch(MC), EVENTS, {**OWNED, "kind": "Event"}, (), None),
        (Watch(MC), NEW_EVENTS, {**OWNED, "kind": "Event"}, (), None),
    ],
)
def test_which_writes_start_a_watch(watch, resource, obj, namespaces, expected):
    async def scenario():
        deps, _ = make(fake_client(), [watch], namespaces)
        await deps.start(recover=False)
        deps.observe(watch, resource, obj)
        kind = deps.kinds.get(GVK(resource.group, resource.version, resource.kind))
        assert (kind.subscriptions.get(MC) if kind else None) == expected
        await deps.stop()

    run(scenario)


ANNOTATED_NS = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {
        "name": "made",
        "annotations": {
            PRIMARY_RESOURCE: "shop/mc",
            PRIMARY_RESOURCE_TYPE: "Memcached.cache.example.com",
        },
    },
}


@pytest.mark.parametrize(
    ("cluster_scoped", "namespaces", "watched"),
    [(True, (), True), (False, (), False), (True, ("shop",), False)],
)
def test_cluster_scoped_dependents(cluster_scoped, namespaces, watched):
    async def scenario():
        watch = Watch(MC, watch_cluster_scoped_resources=cluster_scoped)
        deps, _ = make(fake_client(), [watch], namespaces)
        await deps.start(recover=False)
        deps.observe(watch, NAMESPACES, ANNOTATED_NS)
        assert (GVK("", "v1", "Namespace") in deps.kinds) is watched
        if watched:
            assert deps.kinds[GVK("", "v1", "Namespace")].subscriptions[MC] == Subscription(
                False, True
            )
        await deps.stop()

    run(scenario)


def test_a_kind_is_watched_once_per_owner_and_once_per_namespace():
    async def scenario():
        client = fake_client()
        watch, other = Watch(MC), Watch(OTHER_OWNER)
        deps, _ = make(client, [watch, other], ("shop", "elsewhere"))
        await deps.start(recover=False)
        for _ in range(3):
            deps.observe(watch, CONFIG_MAPS, OWNED)
        deps.observe(other, CONFIG_MAPS, cm(refs=[ref(kind="Redis")]))
        kind = deps.kinds[GVK("", "v1", "ConfigMap")]
        assert set(kind.subscriptions) == {MC, OTHER_OWNER}
        assert len(kind.tasks) == 2  # one list+watch per watched namespace
        await asyncio.sleep(0.05)
        listed = sorted(path for method, path, _ in client.calls if method == "GET")
        assert listed == [
            "/api/v1/namespaces/elsewhere/configmaps",
            "/api/v1/namespaces/shop/configmaps",
        ]
        await deps.stop()

    run(scenario)


def test_nothing_is_watched_before_start_or_after_stop():
    async def scenario():
        deps, _ = make(fake_client(), [Watch(MC)])
        deps.observe(Watch(MC), CONFIG_MAPS, OWNED)
        assert deps.kinds == {}
        await deps.start(recover=False)
        await deps.stop()
        deps.observe(Watch(MC), CONFIG_MAPS, OWNED)
        assert deps.kinds == {}

    run(scenario)


# -- the list+watch loop -------------------------------------------------------------------------


def test_events_re_run_owners_and_a_410_relists():
    a, b = cm("a", refs=[ref("mc-a")]), cm("b", refs=[ref("mc-b")])
    changed_a = copy.deepcopy(a)
    changed_a["data"] = {"a": "changed"}
    changed_a["metadata"]["resourceVersion"] = "12"

    async def scenario():
        client = fake_client()
        client.lists = [
            page(a, cont="more"),
            page(b, cm("nobodys"), rv="11"),
            # After the 410: b is gone, a changed, c is new.
            page(changed_a, cm("c", refs=[ref("mc-c")]), rv="20"),
        ]
        status_only = copy.deepcopy(a)
        status_only["status"] = {"x": 1}
        client.streams = [
            [
                ev("MODIFIED", status_only),  # status only: nothing
                ev("BOOKMARK", {"kind": "ConfigMap", "metadata": {"resourceVersion": "15"}}),
            ],
            [ev("ERROR", {"kind": "Status", "code": 410, "reason": "Expired"})],
            [ev("DELETED", cm("c", refs=[ref("mc-c")], rv="21"))],
        ]
        deps, enqueued = make(client, [Watch(MC)])
        await deps.start(recover=False)
        deps.observe(Watch(MC), CONFIG_MAPS, a)
        await client.watching.wait()
        watches = [params for method, _, params in client.calls if method == "WATCH"]
        assert [w["resourceVersion"] for w in watches] == ["11", "15", "20", "21"]
        assert all(w["allowWatchBookmarks"] == "true" for w in watches)
        assert enqueued == [(MC, ("shop", "mc-a")), (MC, ("shop", "mc-b")), (MC, ("shop", "mc-c"))]
        state = deps.kinds[GVK("", "v1", "ConfigMap")].states[""]
        assert set(state) == {("shop", "a")}  # only owned objects, and only their fields' hashes
        await deps.stop()

    run(scenario)


def test_a_failing_watch_is_retried_and_an_unknown_error_event_too():
    async def scenario():
        client = fake_client()
        client.lists = [page(OWNED)]
        client.streams = [
            ApiError(500, "InternalError", "boom"),
            [ev("ERROR", {"kind": "Status", "code": 500, "reason": "InternalError"})],
            ValueError("a line that is not JSON"),
        ]
        deps, enqueued = make(client, [Watch(MC)])
        await deps.start(recover=False)
        deps.observe(Watch(MC), CONFIG_MAPS, OWNED)
        await client.watching.wait()
        assert len([c for c in client.calls if c[0] == "WATCH"]) == 4
        assert enqueued == []
        await deps.stop()

    run(scenario)


# -- recovery after a restart --------------------------------------------------------------------


def test_recovery_finds_kinds_holding_owned_objects():
    async def scenario():
        client = fake_client()
        client.paths = {
            "/api": {"versions": ["v1"]},
            "/apis": {
                "groups": [
                    {"name": "apps", "preferredVersion": {"version": "v1"}},
                    {"name": "broken.example.com", "preferredVersion": {"version": "v1"}},
                ]
            },
            "/api/v1": {
                "resources": [
                    {
                        "name": "configmaps",
                        "kind": "ConfigMap",
                        "namespaced": True,
                        "verbs": ["list", "watch", "get"],
                    },
                    {
                        "name": "secrets",
                        "kind": "Secret",
                        "namespaced": True,
                        "verbs": ["list", "watch"],
                    },
                    {"name": "pods/log", "kind": "Pod", "namespaced": True, "verbs": ["get"]},
                    {
                        "name": "bindings",
                        "kind": "Binding",
                        "namespaced": True,
                        "verbs": ["create"],
                    },
                    {
                        "name": "namespaces",
                        "kind": "Namespace",
                        "namespaced": False,
                        "verbs": ["list", "watch"],
                    },
                ]
            },
            "/apis/apps/v1": {
                "resources": [
                    {
                        "name": "deployments",
                        "kind": "Deployment",
                        "namespaced": True,
                        "verbs": ["list", "watch"],
                    },
                ]
            },
            "/apis/broken.example.com/v1": ApiError(503, "ServiceUnavailable", "down"),
            "/api/v1/namespaces/shop/configmaps": page(OWNED),
            "/api/v1/namespaces/shop/secrets": ApiError(403, "Forbidden", "no"),
            "/apis/apps/v1/namespaces/shop/deployments": page(cm("nobodys")),
        }
        deps, _ = make(client, [Watch(MC)], ("shop",))
        await deps.start(recover=False)
        await deps.recover()
        assert set(deps.kinds) == {GVK("", "v1", "ConfigMap")}
        scanned = {
            path
            for method, path, _ in client.calls
            if method == "GET" and "/namespaces/shop/" in path
        }
        assert scanned == {
            "/api/v1/namespaces/shop/configmaps",
            "/api/v1/namespaces/shop/secrets",
            "/apis/apps/v1/namespaces/shop/deployments",
        }  # cluster-scoped kinds are not scanned when watching some namespaces only
        await deps.stop()

    run(scenario)
