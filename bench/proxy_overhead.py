"""What the API proxy costs a request, and what dependent watches keep in memory.

Latency: the same requests sent straight to the API server with the operator's credentials,
through the proxy with a run token, and through the proxy with a run token whose writes are
recorded for its run record (as every run's are: `core.plan.WriteLog`), interleaved round by
round so that machine noise hits all alike: a GET of one ConfigMap, and a create of a ConfigMap
(through the proxy it also gets its ownerReference and is reported to the dependent watches).
Memory: what the dependent-watch state holds per owned object (a digest and owner keys), against
keeping the objects themselves as an informer cache would, and what one more watched kind costs.

    KUBECONFIG=/tmp/dev/admin.kubeconfig .venv/bin/python bench/proxy_overhead.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import statistics
import time
import tracemalloc
import uuid
from typing import Any

import aiohttp

from ansible_operator.core import GVK, Watch, WriteLog
from ansible_operator.kube import Discovery, KubeClient, ResourceInfo, auth_headers
from ansible_operator.kube import load_credentials as load
from ansible_operator.proxy import Proxy
from ansible_operator.runtime.control.dependents import DependentWatches, apply_event, event_owners
from ansible_operator.runtime.control.dependents import Subscription as Sub
from ansible_operator.runtime.control.sources import Sources

OWNER_GVK = GVK("bench.example.com", "v1", "Bench")


class _Hook:
    def observe(self, watch: Watch, resource: ResourceInfo, obj: Any) -> None:
        pass


async def latency(rounds: int, per_round: int) -> None:
    creds = load()
    client = KubeClient(creds)
    namespace = f"bench-{uuid.uuid4().hex[:6]}"
    await client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    proxy = Proxy(creds, client=client, port=0, dependents=_Hook())
    await proxy.start()
    owner = {
        "apiVersion": "bench.example.com/v1",
        "kind": "Bench",
        "metadata": {"name": "b", "namespace": namespace, "uid": str(uuid.uuid4())},
    }
    token = proxy.register(owner, Watch(OWNER_GVK))
    recorded_token = proxy.register(owner, Watch(OWNER_GVK), writes=WriteLog())
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    await client.request("POST", base, body={"metadata": {"name": "read-me"}, "data": {"a": "b"}})
    direct = (creds.server, {**auth_headers(creds), "Content-Type": "application/json"})
    proxied = (
        f"http://127.0.0.1:{proxy.port}",
        {"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    recorded = (
        f"http://127.0.0.1:{proxy.port}",
        {"Authorization": f"Bearer {recorded_token}", "Content-Type": "application/json"},
    )
    samples: dict[str, list[float]] = {}
    connector = aiohttp.TCPConnector(ssl=creds.tls)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def timed(case: str, method: str, url: str, headers: dict, body: Any = None) -> None:
            started = time.perf_counter()
            async with session.request(method, url, headers=headers, json=body) as resp:
                await resp.read()
                assert resp.status < 300, (case, resp.status)
            samples.setdefault(case, []).append(time.perf_counter() - started)

        for round_ in range(rounds + 1):  # round 0 warms up connections and discovery
            for (server, headers), how in (
                (direct, "direct"),
                (proxied, "proxy"),
                (recorded, "recorded"),
            ):
                for i in range(per_round):
                    await timed(f"GET  {how}", "GET", f"{server}{base}/read-me", headers)
                    name = f"{how}-{round_}-{i}"
                    body = {"metadata": {"name": name}, "data": {"a": "b"}}
                    await timed(f"POST {how}", "POST", f"{server}{base}", headers, body)
            if round_ == 0:
                samples.clear()
    await proxy.stop()
    await client.request("DELETE", f"/api/v1/namespaces/{namespace}")
    await client.close()
    print(f"latency, {rounds} rounds x {per_round} requests per case (ms)")
    print(f"{'case':<14}{'median':>8}{'p90':>8}{'min':>8}")
    for case in sorted(samples):
        values = sorted(samples[case])
        p90 = values[int(len(values) * 0.9)]
        print(
            f"{case:<14}{statistics.median(values) * 1e3:>8.2f}{p90 * 1e3:>8.2f}"
            f"{values[0] * 1e3:>8.2f}"
        )
    for verb in ("GET ", "POST"):
        extra = statistics.median(samples[f"{verb} proxy"]) - statistics.median(
            samples[f"{verb} direct"]
        )
        print(f"proxy overhead {verb.strip()}: {extra * 1e3:+.2f} ms per request (median)")
        record = statistics.median(samples[f"{verb} recorded"]) - statistics.median(
            samples[f"{verb} proxy"]
        )
        print(f"recording writes {verb.strip()}: {record * 1e3:+.2f} ms per request (median)")


def deployment(i: int) -> dict:
    """A Deployment as the API server returns it, managedFields and status included."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": f"web-{i}",
            "namespace": "shop",
            "uid": str(uuid.uuid4()),
            "resourceVersion": str(1000 + i),
            "generation": 1,
            "labels": {"app": f"web-{i}"},
            "annotations": {"deployment.kubernetes.io/revision": "1"},
            "ownerReferences": [
                {
                    "apiVersion": "bench.example.com/v1",
                    "kind": "Bench",
                    "name": f"b-{i}",
                    "uid": str(uuid.uuid4()),
                }
            ],
            "managedFields": [
                {
                    "manager": "OpenAPI-Generator",
                    "operation": "Update",
                    "apiVersion": "apps/v1",
                    "time": "2026-01-01T00:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:spec": {
                            "f:replicas": {},
                            "f:template": {
                                "f:spec": {
                                    "f:containers": {
                                        'k:{"name":"web"}': {"f:image": {}, "f:name": {}}
                                    }
                                }
                            },
                        }
                    },
                },
                {
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "subresource": "status",
                    "time": "2026-01-01T00:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:replicas": {}}},
                },
            ],
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": f"web-{i}"}},
            "template": {
                "metadata": {"labels": {"app": f"web-{i}"}},
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "nginx:1.27",
                            "ports": [{"containerPort": 80}],
                            "resources": {},
                            "imagePullPolicy": "IfNotPresent",
                        }
                    ]
                },
            },
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
        },
        "status": {
            "replicas": 1,
            "readyReplicas": 1,
            "availableReplicas": 1,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}
            ],
        },
    }


def memory(objects: int, kinds: int) -> None:
    owner = Watch(OWNER_GVK)
    subs = {OWNER_GVK: Sub(by_reference=True)}
    client = KubeClient(load())
    deps = DependentWatches(Sources(client, Discovery(client)))
    deps.add_owner(owner, lambda request: None)

    def owners_of(obj: dict) -> frozenset:
        return event_owners(obj, subs, deps.owners)

    stream = [deployment(i) for i in range(objects)]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    state: dict = {}
    for obj in stream:
        apply_event(state, "ADDED", obj, owners_of)
    digest_bytes = tracemalloc.get_traced_memory()[0] - before
    before = tracemalloc.get_traced_memory()[0]
    cache = {i: copy.deepcopy(obj) for i, obj in enumerate(stream)}
    cache_bytes = tracemalloc.get_traced_memory()[0] - before
    del cache

    async def many_kinds() -> int:
        class Idle:  # a client whose lists never answer: the watches wait, as when quiet
            async def get(self, *args: Any, **kwargs: Any) -> Any:
                await asyncio.Event().wait()

        idle: Any = Idle()
        watches = DependentWatches(Sources(idle, Discovery(idle)))
        watches.add_owner(owner, lambda request: None)
        watches._running = True
        start = tracemalloc.get_traced_memory()[0]
        for k in range(kinds):
            resource = ResourceInfo("bench.example.com", "v1", f"Kind{k}", f"kind{k}s", True)
            obj = {
                "metadata": {
                    "name": "x",
                    "namespace": "shop",
                    "ownerReferences": [
                        {
                            "apiVersion": "bench.example.com/v1",
                            "kind": "Bench",
                            "name": "b",
                            "uid": "u",
                        }
                    ],
                }
            }
            watches.observe(owner, resource, obj)
        await asyncio.sleep(0.1)
        used = tracemalloc.get_traced_memory()[0] - start
        await watches.stop()
        return used

    kinds_bytes = asyncio.run(many_kinds())
    tracemalloc.stop()
    print(f"\nmemory, {objects} owned Deployments as the API server returns them")
    print(f"dependent-watch state (digest + owner keys): {digest_bytes / objects:8.0f} B/object")
    print(f"the objects themselves (an informer cache):   {cache_bytes / objects:8.0f} B/object")
    print(f"one more watched kind (loop task, no objects): {kinds_bytes / kinds:7.0f} B/kind")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--per-round", type=int, default=40)
    parser.add_argument("--objects", type=int, default=5000)
    parser.add_argument("--kinds", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(latency(args.rounds, args.per_round))
    memory(args.objects, args.kinds)


if __name__ == "__main__":
    main()
