"""What the osdk_metric action plugin saves over running osdk_metric as a module.

The same playbook (ten `operator_sdk.util.osdk_metric` calls, as upstream's memcached sample
makes per reconcile) runs against a live user-metrics endpoint twice per round, interleaved:
with the in-repo collection (the action plugin posts from the controller process), and with a
copy of it without the action plugin (each call is a module: a Python process, AnsiballZ).
Prints the median and spread of each, and the saving per call.

    .venv/bin/python bench/osdk_metric_action.py [--rounds 7] [--calls 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from prometheus_client import CollectorRegistry

from ansible_operator.runtime.observe.user_metrics import URL_ENV, UserMetrics, UserMetricsServer

REPO = Path(__file__).resolve().parents[1]
PLAYBOOK = """- hosts: localhost
  gather_facts: false
  tasks:
    - operator_sdk.util.osdk_metric:
        name: "bench_{{{{ item }}}}"
        description: bench
        counter: {{increment: true}}
      loop: "{{{{ range({calls}) | list }}}}"
"""


def serve() -> tuple[str, threading.Event]:
    """The operator's user-metrics endpoint in a thread; its URL and a stop flag."""
    ready: dict[str, str] = {}
    stop = threading.Event()
    started = threading.Event()

    async def main() -> None:
        server = UserMetricsServer(
            UserMetrics(CollectorRegistry()), address="127.0.0.1:0", environ={}
        )
        await server.start()
        ready["url"] = server.url
        started.set()
        while not stop.is_set():
            await asyncio.sleep(0.1)
        await server.stop()

    threading.Thread(target=lambda: asyncio.run(main()), daemon=True).start()
    started.wait(10)
    return ready["url"], stop


def run(playbook: Path, collections: Path, url: str) -> float:
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_NOCOLOR="1")
    env[URL_ENV] = url
    start = time.monotonic()
    subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), str(playbook)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args()

    url, stop = serve()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # Not next to the playbook: Ansible looks for ./collections beside a playbook first.
        (work / "play").mkdir()
        playbook = work / "play/metrics.yml"
        playbook.write_text(PLAYBOOK.format(calls=args.calls))
        # ANSIBLE_COLLECTIONS_PATH comes before the installed package's copy in Ansible's search.
        with_action = REPO / "operator"
        modules_only = work / "modules_only"
        shutil.copytree(with_action / "ansible_collections", modules_only / "ansible_collections")
        (
            modules_only / "ansible_collections/operator_sdk/util/plugins/action/osdk_metric.py"
        ).unlink()
        cases = {"action plugin": with_action, "module": modules_only}
        for collections in cases.values():  # warm-up
            run(playbook, collections, url)
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.rounds):
            for name, collections in cases.items():
                times[name].append(run(playbook, collections, url))
    stop.set()

    print(f"{args.calls} osdk_metric calls, {args.rounds} rounds, {os.cpu_count()} CPUs, "
          f"Python {sys.version.split()[0]}")  # fmt: skip
    print(f"{'case':<16}{'median':>9}{'min':>9}{'max':>9}")
    for name, values in times.items():
        print(
            f"{name:<16}{statistics.median(values):>8.3f}s{min(values):>8.3f}s{max(values):>8.3f}s"
        )
    saved = statistics.median(times["module"]) - statistics.median(times["action plugin"])
    print(f"saved per call: {saved / args.calls:.3f}s")


if __name__ == "__main__":
    main()
