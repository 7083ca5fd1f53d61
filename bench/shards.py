"""Reconcile throughput with 1, 2 and 3 sharded replicas, and the watch events each receives.

For each replica count: a fresh namespace, that many `ansible-operator run --shards=auto`
processes (each `--max-concurrent-reconciles=2`), then CRs created at once; it waits until every
CR has been reconciled once (the `shard_journal` test role appends a start and an end line per
run) and reports CRs per second from the first start to the last end, the median run (the
role's own start to end), each replica's CRs, and the watch events each replica received
(`ansible_operator_watch_events_total`). Point it at a cluster with the ShardedListAndWatch gate
on to see the server-side filter (`dev-cluster up --feature-gates=ShardedListAndWatch=true`).

    .venv/bin/python -m bench.shards --kubeconfig /tmp/shared-cluster/kubeconfig [--crs 60]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from pathlib import Path

from kubernetes import client, config
from prometheus_client.parser import text_string_to_metric_families
from tests.e2e import crds

from ansible_operator.dev import launcher
from bench.launch import start_operator

REPO = Path(__file__).resolve().parents[1]
ROLE = REPO / "tests/e2e/roles/shard_journal"
GROUP, VERSION, KIND, PLURAL = crds.GROUP, crds.VERSION, "Sleeper", "sleepers"
GVK = f"{GROUP}/{VERSION}, Kind={KIND}"


def ensure_crd(api: client.ApiClient) -> None:
    crds.install_crds(api, [crds.kind_crd(KIND)])


def metric(url: str, name: str) -> float:
    with urllib.request.urlopen(url, timeout=10) as resp:
        text = resp.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels.get("GVK", GVK) == GVK:
                return sample.value
    return 0.0


def wait(probe, what: str, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.5)


def one_case(kubeconfig: Path, replicas: int, crs: int, work: Path) -> str:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    ensure_crd(api)
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": namespace}})
    journal = work / f"journal-{replicas}"
    started: list[launcher.OperatorProcess] = []
    try:
        for i in range(replicas):
            args = [
                "--max-concurrent-reconciles=2",
                "--shards=auto",
                f"--leader-election-id=bench-{namespace}",
                f"--leader-election-namespace={namespace}",
            ]
            workdir = work / f"r{replicas}-{i}"
            operator = start_operator(
                workdir, kubeconfig, namespace, KIND, ROLE, args, env={"REPLICA": str(i)}
            )
            started.append(operator)
        urls = [p.metrics_url for p in started]
        assert all(urls)
        wait(
            lambda: sum(metric(u, "ansible_operator_shards_held") for u in urls) == 32,  # type: ignore[arg-type]
            "the shards to be taken",
        )
        for n in range(crs):
            body = {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": KIND,
                "metadata": {"name": f"cr-{n:03d}"},
                "spec": {"journal": str(journal), "seconds": 0},
            }
            custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)

        def ends() -> list[list[str]]:
            lines = journal.read_text().splitlines() if journal.exists() else []
            return [line.split() for line in lines]

        wait(lambda: len({e[1] for e in ends() if e[0] == "end"}) >= crs, "every CR reconciled")
        records = ends()
        starts = {(r[1], r[2]): float(r[3]) for r in records if r[0] == "start"}
        finish = {(r[1], r[2]): float(r[3]) for r in records if r[0] == "end"}
        runs = [finish[k] - starts[k] for k in finish if k in starts]
        span = max(finish.values()) - min(starts.values())
        share = Counter(replica for _, replica in finish)
        events = [int(metric(u, "ansible_operator_watch_events_total")) for u in urls]  # type: ignore[arg-type]
        return (
            f"{replicas:>8} {crs / span:>8.2f} {statistics.median(runs):>9.2f}s "
            f"{'/'.join(str(share[str(i)]) for i in range(replicas)):>12} "
            f"{'/'.join(map(str, events)):>14}"
        )
    finally:
        for proc in started:
            proc.stop()
        core.delete_namespace(namespace)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--crs", type=int, default=60)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args()
    print(f"{args.crs} CRs, one 2-task role run each, --max-concurrent-reconciles=2 per replica")
    print(f"{'replicas':>8} {'CRs/s':>8} {'median run':>10} {'CRs each':>12} {'events each':>14}")
    with tempfile.TemporaryDirectory() as tmp:
        for replicas in args.replicas:
            print(one_case(args.kubeconfig, replicas, args.crs, Path(tmp)), flush=True)


if __name__ == "__main__":
    main()
