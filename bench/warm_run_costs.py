"""Where a warm memcached run's CPU goes, by process, and what forking costs on this machine.

Issue 14 asks the warm runner for 5x the cold runner's runs/s on 20 memcached CRs at once;
`make bench` measures about 4x. This says where the rest of a warm run's CPU goes:

- The processes of each run, from a burst of memcached CRs through the real operator with the
  warm runner, as `make bench` starts it: each process reports its CPU time, minor page faults
  and kind when it ends (bench/exit_report/sitecustomize.py, on the operator's PYTHONPATH), and
  the whole machine's CPU over the burst is read from /proc/stat.
- The cost of a fork: fork and immediate exit of an interpreter that has imported what a warm
  run's processes have (Ansible's controller, ansible-runner, the Kubernetes client), against a
  bare one; and the CPU of one copy-on-write fault and of one first touch of a new page.

    .venv/bin/python -m bench.warm_run_costs [--crs 20]

On the cluster ANSIBLE_OPERATOR_TEST_KUBECONFIG names, else a private one. A recorded run and its
reading: bench/warm_run_costs.md.
"""

from __future__ import annotations

import argparse
import mmap
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench import operator_bench

REPORTER = Path(__file__).parent / "exit_report"
FORKS = 200
PAGES = 20000
# What a warm run's processes have imported: the fork server's preloads and the controller.
IMPORTS = (
    "ansible.cli.playbook",
    "ansible.executor.task_executor",
    "ansible.plugins.strategy.linear",
    "ansible_runner.__main__",
    "ansible.module_utils.basic",
    "kubernetes.client",
    "kubernetes.dynamic",
)


def machine_busy_seconds() -> float:
    """CPU time of the whole machine so far (all but idle and iowait), from /proc/stat."""
    with open("/proc/stat") as stat:
        ticks = [int(field) for field in stat.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def burst(crs: int) -> tuple[dict[str, list[tuple[float, int]]], float, float]:
    """(kind → [(CPU s, minor faults)] of each process, machine CPU s, seconds) over a burst of
    `crs` memcached CRs created at once, until all are Successful."""
    args = operator_bench.parse_args(["--rounds=1"])
    with tempfile.TemporaryDirectory() as tmp, operator_bench.cluster(Path(tmp)) as kubeconfig:
        reports = Path(tmp, "reports")
        reports.mkdir()
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPORTER), os.environ.get("PYTHONPATH")) if p
        )
        os.environ["WARM_RUN_COSTS_DIR"] = str(reports)
        bench = operator_bench.Bench(args, kubeconfig, Path(tmp), f"costs{int(time.time())}")
        try:
            operator_bench.install_crds(bench.api)
            namespace = bench.namespace("warm")
            operator = bench.launch("warm", namespace, ready=True)
            successes = operator_bench.Successes(kubeconfig, namespace, operator_bench.MEMCACHED)
            try:
                # Not measured: the first runs record the kind's zygote, keep packaged modules
                # and templates, and send the role's sample metrics once.
                for name in ("warm-up-0", "warm-up-1", "warm-up-2"):
                    bench.creator.one(namespace, operator_bench.MEMCACHED, name)
                    successes.wait([name])
                time.sleep(2)  # the warm-ups' follow-up reconciles (their Deployments' status)
                for report in reports.iterdir():
                    report.unlink()
                names = [f"burst-{i}" for i in range(crs)]
                busy, start = machine_busy_seconds(), time.monotonic()
                bench.creator.many(namespace, operator_bench.MEMCACHED, names)
                elapsed = successes.wait(names) - start
                busy = machine_busy_seconds() - busy
                processes = read_reports(reports)
            finally:
                successes.close()
                operator.stop()
        finally:
            bench.cleanup()
    return processes, busy, elapsed


def read_reports(reports: Path) -> dict[str, list[tuple[float, int]]]:
    """kind → [(CPU s, minor faults)] of each process that reported (exit_report)."""
    processes: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for report in reports.iterdir():
        cpu, faults, kind = report.read_text().split(maxsplit=2)
        processes[kind.strip()].append((float(cpu), int(faults)))
    return processes


def fork_cost(imports: bool) -> tuple[float, float]:
    """(parent, child) CPU ms of one fork and immediate exit, in a new interpreter."""
    code = (
        "import importlib, os, resource\n"
        f"for name in {list(IMPORTS) if imports else []!r}: importlib.import_module(name)\n"
        "def cpu(who): u = resource.getrusage(who); return u.ru_utime + u.ru_stime\n"
        "p, c = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)\n"
        f"for _ in range({FORKS}):\n"
        "    pid = os.fork()\n"
        "    if pid == 0: os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
        "print(cpu(resource.RUSAGE_SELF) - p, cpu(resource.RUSAGE_CHILDREN) - c)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    parent, child = (float(x) * 1000 / FORKS for x in out.stdout.split())
    return parent, child


def fault_costs() -> tuple[float, float]:
    """CPU µs of one copy-on-write fault (a child writing a page its parent has) and of one
    first touch of a new private page."""
    size = PAGES * mmap.PAGESIZE
    shared = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for offset in range(0, size, mmap.PAGESIZE):
        shared[offset] = 1
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        start = time.process_time()
        for offset in range(0, size, mmap.PAGESIZE):
            shared[offset] = 2  # each a fault: the page is copied
        faulted = time.process_time()
        for offset in range(0, size, mmap.PAGESIZE):
            shared[offset] = 3  # the same loop, now without faults
        os.write(write, f"{(faulted - start) - (time.process_time() - faulted)}".encode())
        os._exit(0)
    os.close(write)
    copy_s = float(os.read(read, 64))
    os.waitpid(pid, 0)
    fresh = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    start = time.process_time()
    for offset in range(0, size, mmap.PAGESIZE):
        fresh[offset] = 1
    touch_s = time.process_time() - start
    return copy_s * 1e6 / PAGES, touch_s * 1e6 / PAGES


KINDS = ("ansible-runner", "ansible-playbook", "Ansible worker", "module fork", "other")


def table(
    processes: dict[str, list[tuple[float, int]]], runs: int
) -> tuple[list[str], float, float]:
    """The per-process table's lines, and the forks and faults per run."""
    lines = [
        f"{'process':18} {'per run':>8} {'CPU ms median':>14} {'CPU ms per run':>15} "
        f"{'faults median':>14} {'faults per run':>15}"
    ]
    forks = faults = cpu = 0.0
    for kind in KINDS:
        found = processes.get(kind, [])
        if not found:
            continue
        per_run, cpu_run = len(found) / runs, sum(c for c, _ in found) / runs
        faults_run = sum(f for _, f in found) / runs
        forks, faults, cpu = forks + per_run, faults + faults_run, cpu + cpu_run
        cpu_median = 1000 * statistics.median(c for c, _ in found)
        faults_median = statistics.median(f for _, f in found)
        lines.append(
            f"{kind:18} {per_run:8.1f} {cpu_median:14.1f} {1000 * cpu_run:15.1f} "
            f"{faults_median:14.0f} {faults_run:15.0f}"
        )
    lines.append(f"all of a run's processes: {1000 * cpu:.0f} ms of CPU")
    return lines, forks, faults


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--crs", type=int, default=20, help="memcached CRs at once")
    args = parser.parse_args(argv)

    bare, loaded = fork_cost(imports=False), fork_cost(imports=True)
    copy_us, touch_us = fault_costs()
    processes, busy, elapsed = burst(args.crs)
    runs = len(processes.get("ansible-playbook", [])) or 1
    cpus = os.cpu_count() or 1
    lines, forks, faults = table(processes, runs)
    machine_ms = 1000 * busy / runs
    fork_ms = forks * sum(loaded)
    low = fork_ms + faults * min(copy_us, touch_us) / 1000
    high = fork_ms + faults * max(copy_us, touch_us) / 1000
    print(
        f"{args.crs} memcached CRs at once: all Successful in {elapsed:.2f} s "
        f"({args.crs / elapsed:.2f} CRs/s), {runs} runs (ansible-playbook processes); "
        f"{cpus} CPUs {100 * busy / (elapsed * cpus):.0f}% busy, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print("\n".join(lines))
    print(f"the whole machine's CPU per run: {machine_ms:.0f} ms (cluster and operator included)")
    print(
        f"one fork + exit, parent + child CPU: {sum(bare):.2f} ms for a bare interpreter, "
        f"{sum(loaded):.2f} ms with a warm run's imports ({loaded[0]:.2f} + {loaded[1]:.2f})"
    )
    print(f"one page fault: {copy_us:.2f} µs copy-on-write, {touch_us:.2f} µs a new page")
    print(
        f"forking per run: {forks:.1f} forks and {faults:.0f} faults, {low:.0f}-{high:.0f} ms: "
        f"{100 * low / machine_ms:.0f}-{100 * high / machine_ms:.0f}% of the machine's CPU per run"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
