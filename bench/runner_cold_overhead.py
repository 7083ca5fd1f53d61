"""What the cold runner costs on top of Ansible itself, for a one-task playbook.

Three ways of running the same one-`debug`-task playbook, interleaved round by round so that
machine noise hits all of them alike: plain `ansible-playbook`, the bare `ansible-runner run`
command line the runner uses, and `ColdRunner.run()` (input dir, process, event polling,
outcome). Prints the median and spread of each, and the difference to plain ansible-playbook.

    .venv/bin/python bench/runner_cold_overhead.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ansible_operator.runner import ColdRunner, RunRequest, new_ident
from ansible_operator.runner.inputdir import LOCAL_INVENTORY

PLAYBOOK = "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - debug: {msg: hello}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()

    bindir = Path(sys.executable).parent
    runner = ColdRunner()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        playbook = work / "one_debug.yml"
        playbook.write_text(PLAYBOOK)
        inventory = work / "hosts"
        inventory.write_text(LOCAL_INVENTORY + "\n")
        # As ColdRunner does: ansible-runner must find the ansible-playbook installed beside it.
        path = os.pathsep.join([str(bindir), os.environ.get("PATH", "")])
        env = {**os.environ, "ANSIBLE_NOCOLOR": "1", "PATH": path}

        def plain_playbook() -> None:
            subprocess.run(
                [str(bindir / "ansible-playbook"), "-i", str(inventory), str(playbook)],
                env=env,
                check=True,
                stdout=subprocess.DEVNULL,
            )

        def bare_ansible_runner() -> None:
            pdd = work / "bare"
            (pdd / "inventory").mkdir(parents=True, exist_ok=True)
            (pdd / "inventory" / "hosts").write_text(LOCAL_INVENTORY + "\n")
            subprocess.run(
                [
                    runner.executable,
                    "run",
                    str(pdd),
                    "--rotate-artifacts",
                    "3",
                    "-p",
                    str(playbook),
                    "-i",
                    new_ident(),
                ],
                env=env,
                check=True,
                stdout=subprocess.DEVNULL,
            )

        def cold_runner() -> None:
            request = RunRequest(
                ident=new_ident(),
                private_data_dir=work / "cold",
                extravars={},
                kubeconfig=str(work / "kubeconfig"),
                playbook=str(playbook),
                rotate_artifacts=3,
            )
            result = asyncio.run(runner.run(request))
            if not result.ok:
                raise SystemExit(f"cold runner run failed: {result.outcome.failures}")

        cases = {
            "ansible-playbook": plain_playbook,
            "ansible-runner run (CLI)": bare_ansible_runner,
            "ColdRunner.run()": cold_runner,
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for case in cases.values():  # warm-up: page cache, .pyc files
            case()
        for _ in range(args.rounds):
            for name, case in cases.items():
                start = time.perf_counter()
                case()
                times[name].append(time.perf_counter() - start)

    base = statistics.median(times["ansible-playbook"])
    python = sys.version.split()[0]
    print(f"one debug task, {args.rounds} rounds, {os.cpu_count()} CPUs, Python {python}")
    print(f"{'case':<26} {'median':>8} {'min':>7} {'max':>7} {'vs playbook':>12}")
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"{name:<26} {median:>7.3f}s {min(values):>6.3f}s {max(values):>6.3f}s"
            f" {median - base:>+11.3f}s"
        )


if __name__ == "__main__":
    main()
