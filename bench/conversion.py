"""What the API server's conversion through the operator's webhook costs, per object.

The nginx operator's CRD (v1alpha2 stored, v1alpha1 served and converted by the webhook) is
installed, the operator's conversion webhook (runtime.conversion_webhook, the real server) is
started on loopback, which points the CRD at itself, and N NginxOperators with two ports are
created as v1alpha2. Then, interleaved round by round so that machine noise hits both alike: a
GET of one object at v1alpha2 (no conversion) and at v1alpha1 (the API server posts a
ConversionReview to the webhook and waits), and a LIST of all N at each version (one review
carrying every object). Printed: p50 and p99 of each, and the difference per object.

    KUBECONFIG=/tmp/dev/admin.kubeconfig .venv/bin/python bench/conversion.py [--objects 100]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from pathlib import Path

import yaml
from prometheus_client import CollectorRegistry

from ansible_operator.core.watches import GVK, Watch
from ansible_operator.kube.client import ApiError, KubeClient
from ansible_operator.kube.config import load
from ansible_operator.project import load_conversion
from ansible_operator.runtime.manager.conversion_webhook import CRD_PATH, ConversionWebhook

REPO = Path(__file__).resolve().parents[1]
GROUP, PLURAL = "operator.example.com", "nginxoperators"
CRD_FILE = REPO / "config/crd/bases/operator.example.com_nginxoperators.yaml"


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _line(what: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (
        f"{what:<44} p50 {_quantile(ms, 0.5):7.2f} ms  p99 {_quantile(ms, 0.99):7.2f} ms"
        f"  (mean {statistics.mean(ms):.2f}, n={len(ms)})"
    )


async def _install_crd(client: KubeClient) -> None:
    crd = yaml.safe_load(CRD_FILE.read_text())
    name = crd["metadata"]["name"]
    try:
        current = await client.get(f"{CRD_PATH}/{name}")
    except ApiError as err:
        if err.status != 404:
            raise
        await client.request("POST", CRD_PATH, body=crd)
    else:
        crd["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        await client.request("PUT", f"{CRD_PATH}/{name}", body=crd)
    for _ in range(100):
        got = await client.get(f"{CRD_PATH}/{name}")
        conditions = {c["type"]: c["status"] for c in got.get("status", {}).get("conditions", [])}
        if conditions.get("Established") == "True":
            return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{name} not Established")


async def main(objects: int, rounds: int) -> None:
    client = KubeClient(load())
    await _install_crd(client)
    watch = Watch(gvk=GVK(GROUP, "v1alpha2", "NginxOperator"), role=str(REPO / "roles/nginx"))
    conversion = load_conversion(watch, REPO / "roles/nginx")
    assert conversion is not None
    webhook = ConversionWebhook(
        [conversion],
        client=client,
        bind_address="127.0.0.1:0",
        cert_dir="",
        registry=CollectorRegistry(),
    )
    await webhook.start()
    namespace = f"bench-{uuid.uuid4().hex[:6]}"
    await client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    base = {
        v: f"/apis/{GROUP}/{v}/namespaces/{namespace}/{PLURAL}" for v in ("v1alpha1", "v1alpha2")
    }
    try:
        for i in range(objects):
            await client.request(
                "POST",
                base["v1alpha2"],
                body={
                    "apiVersion": f"{GROUP}/v1alpha2",
                    "kind": "NginxOperator",
                    "metadata": {"name": f"n{i}"},
                    "spec": {
                        "replicas": 1,
                        "ports": [
                            {"containerPort": 8080, "name": "http"},
                            {"containerPort": 8443, "name": "https"},
                        ],
                    },
                },
            )
        await client.get(f"{base['v1alpha1']}/n0")  # a first connection to the webhook
        gets: dict[str, list[float]] = {"v1alpha2": [], "v1alpha1": []}
        lists: dict[str, list[float]] = {"v1alpha2": [], "v1alpha1": []}
        for _ in range(rounds):
            for i in range(objects):
                for version in ("v1alpha2", "v1alpha1"):
                    started = time.perf_counter()
                    got = await client.get(f"{base[version]}/n{i}")
                    gets[version].append(time.perf_counter() - started)
                    assert got["apiVersion"] == f"{GROUP}/{version}"
            for version in ("v1alpha2", "v1alpha1"):
                started = time.perf_counter()
                listed = await client.get(base[version])
                lists[version].append((time.perf_counter() - started) / objects)
                assert len(listed["items"]) == objects
        print(f"{objects} NginxOperators, {rounds} rounds, interleaved")
        print(_line("GET one object, stored version (v1alpha2)", gets["v1alpha2"]))
        print(_line("GET one object, converted (v1alpha1)", gets["v1alpha1"]))
        added = [c - s for c, s in zip(gets["v1alpha1"], gets["v1alpha2"], strict=True)]
        print(_line("  conversion's cost per GET (paired)", added))
        print(_line("LIST, per object, stored version", lists["v1alpha2"]))
        print(_line("LIST, per object, converted", lists["v1alpha1"]))
    finally:
        await client.request("DELETE", f"/api/v1/namespaces/{namespace}")
        await webhook.stop()
        await client.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.objects, args.rounds))
