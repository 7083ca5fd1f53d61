"""Which run records a request reads (``runtime.runs_access``): every one with the path's own
rights, else those of the CRs its user may read. The API server's answers are the e2e tests'
(tests/e2e/test_runs.py); here an in-memory one says which namespaces the user may read."""

from __future__ import annotations

import asyncio

from ansible_operator.runs.access import EVERYTHING, ReadableHistory

API_VERSION, KIND = "cache.example.com/v1alpha1", "Memcached"


def summary(namespace: str, name: str, run_id: str) -> dict:
    return {"apiVersion": API_VERSION, "kind": KIND, "namespace": namespace, "name": name,
            "id": run_id}  # fmt: skip


RUNS = [summary("a", "web", "1"), summary("b", "db", "2"), summary("a", "cache", "3")]


class History:
    replica = "op-a"

    def kinds(self):
        resources = [{"namespace": s["namespace"], "name": s["name"], "last": s} for s in RUNS]
        return [{"apiVersion": API_VERSION, "kind": KIND, "resources": resources}]

    def runs(self, group, version, kind, namespace=None, name=""):
        return [
            s for s in RUNS if namespace is None or (s["namespace"], s["name"]) == (namespace, name)
        ]

    def record(self, group, version, kind, namespace, name, ident):
        return {"id": ident}


class InNamespace:
    """A user who may get and list the kind in one namespace."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.asked: list[tuple[str, ...]] = []

    async def may_get(self, group, version, kind, namespace, name):
        self.asked.append(("get", namespace, name))
        return namespace == self.namespace

    async def may_list(self, group, version, kind, namespace):
        self.asked.append(("list", namespace))
        return namespace == self.namespace


def read(access, method, *args):
    return asyncio.run(getattr(ReadableHistory(History(), access), method)(*args))  # type: ignore[arg-type]


def test_with_every_right_everything_is_read():
    assert read(EVERYTHING, "kinds") == History().kinds()
    assert read(EVERYTHING, "runs", "cache.example.com", "v1alpha1", KIND) == RUNS


def test_a_namespaces_user_reads_that_namespaces_runs_only():
    user = InNamespace("a")
    (kind,) = read(user, "kinds")
    assert [(r["namespace"], r["name"]) for r in kind["resources"]] == [
        ("a", "web"),
        ("a", "cache"),
    ]
    assert [s["id"] for s in read(user, "runs", "cache.example.com", "v1alpha1", KIND)] == [
        "1",
        "3",
    ]
    gvk = ("cache.example.com", "v1alpha1", KIND)
    assert read(user, "runs", *gvk, "b", "db") == []
    assert read(user, "record", *gvk, "b", "db", "2") is None
    assert read(user, "record", *gvk, "a", "web", "1") == {"id": "1"}


def test_a_user_who_may_read_nothing_sees_no_kind():
    assert read(InNamespace("elsewhere"), "kinds") == []


def test_a_list_asks_once_per_namespace_not_per_cr():
    user = InNamespace("a")
    read(user, "kinds")
    assert sorted(user.asked) == [("list", "a"), ("list", "b")]
