"""`make bench`: the operator as a real process, each runner mode on each ansible-core side by
side on one cluster.

Each core's operator runs from that core's virtualenv (dev.mk's: this one for the default core,
`<this>-ansible-core-<core>` beside it for the others; `make venv-ansible-core-<core>`). Cores and
modes run interleaved round by round (2.18 cold, 2.18 warm, 2.19 cold, ...) so machine noise hits
them alike. Per round, core and mode, a fresh namespace and operator: one CR of each kind not
measured (a new operator's warm-up: the warm runner's first run of a kind records what the kind's
zygote imports and keeps its packaged modules and compiled templates; the memcached role sends
its sample metrics once per operator), and until the memcached one's Deployment is available and
the reconciles its status changes bring are over; then single trivial CRs one after another
(create → Successful), a burst of trivial CRs at once and a burst of memcached CRs at once
(time until all are Successful). Once per mode, on the first core named only (the default), with
``--at-rest-crs`` trivial CRs all Successful (0: not measured): the memory (RSS and PSS of the
operator and every descendant) and the CPU it uses at rest, then a restart, timed from the new
process to a new CR's Successful. Successful is seen through a watch (the condition True at the
CR's generation), never by polling.

It writes `bench/results/<stamp>.json` (raw samples and figures), `<stamp>.png`, and `latest.md`
and `latest.png`, which the README shows.

    .venv/bin/python -m bench.operator_bench [--cores 2.18,2.21] [--modes cold,warm] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from tests.e2e import crds

from ansible_operator.dev import launcher
from bench import figures, plot, processes

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
EXISTING_CLUSTER_ENV = "ANSIBLE_OPERATOR_TEST_KUBECONFIG"
TRIVIAL = ("bench.example.com", "v1", "trivials", "Trivial")
MEMCACHED = ("cache.example.com", "v1alpha1", "memcacheds", "Memcached")
CRDS = (BENCH / "trivial-crd.yaml", REPO / "config/crd/bases/cache.example.com_memcacheds.yaml")
WAIT = 1800.0  # generous: a stuck run shows as a timeout, not as a hang
QUIET = 3.0  # seconds without a finished reconcile: longer than a lone cold memcached run
CREATORS = 8  # parallel API clients that create CRs
CORES = ("2.18", "2.19", "2.20", "2.21")  # dev.mk's CORES
UNRECORDED = "unrecorded"  # a mode's variant without run records (--run-history=0)
DEFAULT_CORE = "2.18"  # the one of this project's own virtualenv (dev.mk's DEFAULT_CORE)


class BenchError(Exception):
    """The bench could not run; one line."""


def say(message: str) -> None:
    print(f"[bench {datetime.now(UTC):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


# --- each core's virtualenv ---------------------------------------------------------------------


def core_python(core: str) -> Path:
    """The interpreter of `core`'s virtualenv, named as dev.mk names them beside this one."""
    own = Path(sys.prefix).resolve()
    base = re.sub(r"-ansible-core-[0-9.]+$", "", own.name)
    venv = own.with_name(base if core == DEFAULT_CORE else f"{base}-ansible-core-{core}")
    python = venv / "bin" / "python"
    if not python.exists():
        raise BenchError(
            f"no virtualenv of ansible-core {core} at {venv}: make venv-ansible-core-{core}"
        )
    return python


def core_version(python: Path, core: str) -> str:
    """The ansible-core release installed beside `python`, which must be a `core`."""
    found = subprocess.run(
        [python, "-c", "import ansible.release; print(ansible.release.__version__)"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if found.split(".")[:2] != core.split("."):
        raise BenchError(f"{python} has ansible-core {found or '(none)'}, not {core}")
    return found


# --- the cluster -----------------------------------------------------------------------------


@contextlib.contextmanager
def cluster(work: Path) -> Iterator[Path]:
    """The running cluster named by ANSIBLE_OPERATOR_TEST_KUBECONFIG, else a private one."""
    given = os.environ.get(EXISTING_CLUSTER_ENV)
    if given:
        yield Path(given)
        return
    from ansible_operator.devcluster import binaries
    from ansible_operator.devcluster.cluster import DevCluster

    dev = DevCluster(work / "cluster", progress=say)
    kubeconfig = dev.up(binaries.ensure(progress=say))
    try:
        yield kubeconfig
    finally:
        dev.down()


def install_crds(api: client.ApiClient) -> None:
    """The bench's CRDs, Established (the tests' one way to install CRDs)."""
    try:
        crds.install_crds(api, [yaml.safe_load(path.read_text()) for path in CRDS])
    except AssertionError as err:  # wait_until's deadline
        raise BenchError(str(err)) from err


# --- custom resources and their Successful condition ------------------------------------------


def successful(obj: dict[str, Any]) -> bool:
    generation = obj.get("metadata", {}).get("generation")
    return any(
        c.get("type") == "Successful"
        and c.get("status") == "True"
        and c.get("observedGeneration", generation) == generation
        for c in (obj.get("status") or {}).get("conditions") or []
    )


class Successes:
    """A watch on one kind in one namespace: when each CR was first seen Successful."""

    def __init__(self, kubeconfig: Path, namespace: str, kind: tuple[str, str, str, str]) -> None:
        self._api = config.new_client_from_config(config_file=str(kubeconfig))
        self._crs = client.CustomObjectsApi(self._api)
        self._namespace, self._kind = namespace, kind
        self._first: dict[str, float] = {}
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._errors: queue.Queue[BaseException] = queue.Queue()
        group, version, plural, _ = kind
        listing: dict[str, Any] = self._crs.list_namespaced_custom_object(  # type: ignore[assignment]
            group, version, namespace, plural
        )
        self._seen(listing["items"])
        self._version = listing["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _seen(self, objs: list[dict[str, Any]]) -> None:
        now = time.monotonic()
        with self._changed:
            for obj in objs:
                name = obj["metadata"]["name"]
                if name not in self._first and successful(obj):
                    self._first[name] = now
            self._changed.notify_all()

    def _run(self) -> None:
        group, version, plural, _ = self._kind
        try:
            while not self._stop.is_set():
                stream = watch.Watch().stream(
                    self._crs.list_namespaced_custom_object,
                    group,
                    version,
                    self._namespace,
                    plural,
                    resource_version=self._version,
                    timeout_seconds=60,
                    allow_watch_bookmarks=True,
                )
                for event in stream:
                    obj = event["object"]
                    self._version = obj["metadata"]["resourceVersion"]
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._seen([obj])
        except BaseException as err:  # handed to the waiting thread
            self._errors.put(err)
            with self._changed:
                self._changed.notify_all()

    def wait(self, names: Sequence[str], timeout: float = WAIT) -> float:
        """The (monotonic) time the last of ``names`` turned Successful."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not all(n in self._first for n in names):
                if not self._errors.empty():
                    raise BenchError(f"watching {self._kind[3]}: {self._errors.get()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = len([n for n in names if n not in self._first])
                    raise BenchError(
                        f"{missing} of {len(names)} {self._kind[3]} CRs not Successful "
                        f"within {timeout:.0f} s in {self._namespace}"
                    )
                self._changed.wait(min(left, 1.0))
            return max(self._first[n] for n in names)

    def close(self) -> None:
        self._stop.set()
        self._api.close()


class Creator:
    """Creates CRs from a few parallel API clients."""

    def __init__(self, kubeconfig: Path) -> None:
        self._local = threading.local()
        self._kubeconfig = kubeconfig
        self._pool = ThreadPoolExecutor(CREATORS)

    def _crs(self) -> client.CustomObjectsApi:
        if not hasattr(self._local, "crs"):
            api = config.new_client_from_config(config_file=str(self._kubeconfig))
            self._local.crs = client.CustomObjectsApi(api)
        return self._local.crs

    def one(self, namespace: str, kind: tuple[str, str, str, str], name: str) -> None:
        group, version, plural, kind_name = kind
        body = {
            "apiVersion": f"{group}/{version}",
            "kind": kind_name,
            "metadata": {"name": name},
            "spec": {"size": 1} if kind == MEMCACHED else {},
        }
        self._crs().create_namespaced_custom_object(group, version, namespace, plural, body)

    def many(self, namespace: str, kind: tuple[str, str, str, str], names: Sequence[str]) -> None:
        list(self._pool.map(lambda n: self.one(namespace, kind, n), names))

    def close(self) -> None:
        self._pool.shutdown()


# --- the operator ------------------------------------------------------------------------------


class Bench:
    def __init__(self, args: argparse.Namespace, kubeconfig: Path, work: Path, stamp: str):
        self.args = args
        self.kubeconfig = kubeconfig
        self.work = work
        self.stamp = stamp
        self.api = config.new_client_from_config(config_file=str(kubeconfig))
        self.core = client.CoreV1Api(self.api)
        self.creator = Creator(kubeconfig)
        self.namespaces: list[str] = []
        self.logs = args.results / "logs" / stamp

    def namespace(self, what: str) -> str:
        name = f"bench-{self.stamp.lower()}-{what}"
        self.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        self.namespaces.append(name)
        return name

    def launch(
        self, mode: str, namespace: str, *, ready: bool, python: Path | None = None
    ) -> launcher.OperatorProcess:
        """The operator in `namespace` with the runner `mode`, run by `python` (None: this
        one)."""
        runner, _, variant = mode.partition("-")
        args = [
            f"--max-concurrent-reconciles={self.args.workers}",
            "--zap-encoder=json",
            f"--runner={runner}",
        ]
        if variant == UNRECORDED:
            args.append("--run-history=0")
        launch = launcher.LaunchConfig(
            workdir=BENCH,  # bench/watches.yaml
            project=REPO,
            kubeconfig=self.kubeconfig,
            namespaces=[namespace],
            log=self.logs / f"{namespace}.log",
            args=args,
            env={"ANSIBLE_ROLES_PATH": f"{REPO / 'roles'}:{BENCH / 'roles'}"},
            own_tmp_dir=True,
            python=None if python is None else str(python),
        )
        return launcher.start(launch, ready=ready, ready_timeout=600)

    def round(self, core: str, mode: str, number: int, raw: dict[str, Any]) -> None:
        ns = self.namespace(f"{core.replace('.', '')}-{mode}-{number}")
        op = self.launch(mode, ns, ready=True, python=self.args.pythons[core])
        trivial = Successes(self.kubeconfig, ns, TRIVIAL)
        memcached = Successes(self.kubeconfig, ns, MEMCACHED)
        try:
            self.warm_up(op, ns, trivial, memcached)
            for i in range(self.args.singles):
                start = time.monotonic()
                self.creator.one(ns, TRIVIAL, f"one-{i}")
                raw["one_trivial_s"].append(trivial.wait([f"one-{i}"]) - start)
            for key, kind, size in (
                ("trivial_burst_s", TRIVIAL, self.args.trivial_burst),
                ("memcached_burst_s", MEMCACHED, self.args.memcached_burst),
            ):
                names = [f"burst-{i}" for i in range(size)]
                watcher = trivial if kind == TRIVIAL else memcached
                start = time.monotonic()
                self.creator.many(ns, kind, names)
                raw[key].append(watcher.wait(names) - start)
        finally:
            trivial.close()
            memcached.close()
            op.stop()
        say(
            f"{core} {mode} round {number}: one trivial {raw['one_trivial_s'][-1]:.2f} s, "
            f"{self.args.trivial_burst} trivial {raw['trivial_burst_s'][-1]:.1f} s, "
            f"{self.args.memcached_burst} memcached {raw['memcached_burst_s'][-1]:.1f} s"
        )

    def warm_up(
        self, op: launcher.OperatorProcess, ns: str, trivial: Successes, memcached: Successes
    ) -> None:
        """One CR of each kind, not measured; then until the memcached one's Deployment is
        available (its status changes bring reconciles of their own) and `QUIET` seconds have
        passed without a reconcile finishing."""
        self.creator.one(ns, MEMCACHED, "warm-up")
        memcached.wait(["warm-up"])
        self.creator.one(ns, TRIVIAL, "warm-up")
        trivial.wait(["warm-up"])
        apps = client.AppsV1Api(self.api)
        deadline = time.monotonic() + WAIT
        while not available(apps, ns, "warm-up-memcached"):
            if time.monotonic() > deadline:
                raise BenchError(f"the warm-up's Deployment not available in {ns}")
            time.sleep(0.2)
        finished, since = reconciles(op), time.monotonic()
        while time.monotonic() - since < QUIET:
            if time.monotonic() > deadline:
                raise BenchError(f"the operator in {ns} did not settle within {WAIT:.0f} s")
            time.sleep(0.2)
            now = reconciles(op)
            if now != finished:
                finished, since = now, time.monotonic()

    def at_rest(self, core: str, mode: str, raw: dict[str, Any]) -> None:
        ns = self.namespace(f"{core.replace('.', '')}-{mode}-rest")
        python = self.args.pythons[core]
        names = [f"cr-{i}" for i in range(self.args.at_rest_crs)]
        self.creator.many(ns, TRIVIAL, names)
        trivial = Successes(self.kubeconfig, ns, TRIVIAL)
        op = self.launch(mode, ns, ready=True, python=python)
        try:
            trivial.wait(names)
            say(f"{mode}: {len(names)} CRs Successful; at rest for {self.args.idle_seconds} s")
            time.sleep(self.args.settle_seconds)
            pids = processes.tree(op.proc.pid)
            before = processes.cpu_ticks(pids)
            started = time.monotonic()
            time.sleep(self.args.idle_seconds)
            pids = processes.tree(op.proc.pid)
            after = processes.cpu_ticks(pids)
            raw["rest_idle_cpu_percent"] = processes.cpu_percent(
                before, after, time.monotonic() - started
            )
            raw["rest_rss_mib"], raw["rest_pss_mib"] = processes.memory_mib(pids)
            raw["rest_processes"] = len(pids)
        finally:
            op.stop()
        # The restart: from the new process to a CR created at once Successful, with every
        # other CR already Successful at its generation (so re-run at the resync rate).
        start = time.monotonic()
        op = self.launch(mode, ns, ready=False, python=python)
        try:
            self.creator.one(ns, TRIVIAL, "after-restart")
            raw["restart_first_successful_s"].append(trivial.wait(["after-restart"]) - start)
        finally:
            trivial.close()
            op.stop()
        say(
            f"{core} {mode} at rest: RSS {raw['rest_rss_mib']:.0f} MiB, PSS "
            f"{raw['rest_pss_mib']:.0f} MiB in {raw['rest_processes']} processes, idle CPU "
            f"{raw['rest_idle_cpu_percent']:.2f}%; after a restart, a new CR Successful in "
            f"{raw['restart_first_successful_s'][-1]:.1f} s"
        )

    def cleanup(self) -> None:
        for ns in self.namespaces:
            with contextlib.suppress(ApiException):
                self.core.delete_namespace(ns)
        self.creator.close()
        self.api.close()


def available(apps: client.AppsV1Api, namespace: str, name: str) -> bool:
    status = apps.read_namespaced_deployment_status(name, namespace).status
    return bool(status is not None and status.available_replicas)


def reconciles(op: launcher.OperatorProcess) -> float:
    """How many reconciles the operator has finished (its ansible_operator_reconcile_result)."""
    if op.metrics_url is None:
        raise BenchError("the operator was launched without a metrics endpoint")
    with urllib.request.urlopen(op.metrics_url, timeout=30) as response:
        text = response.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("ansible_operator_reconcile_result{")
    )


def machine(versions: dict[str, str]) -> dict[str, Any]:
    import ansible_runner  # type: ignore[import-untyped]

    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "ansible_core": versions,
        "ansible_runner": getattr(ansible_runner, "__version__", ""),
        "load_average_at_start": os.getloadavg(),
    }


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    doc = __doc__ or ""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument(
        "--cores",
        default=",".join(CORES),
        help="ansible-cores (comma- or space-separated), each from its virtualenv; the first "
        "is the one the others are compared with",
    )
    parser.add_argument(
        "--modes",
        default="cold,warm",
        help="runner modes, interleaved: cold or warm, each also as <mode>-unrecorded (no run "
        "records, --run-history=0: what recording every run costs)",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--singles", type=int, default=3, help="single trivial CRs per round")
    parser.add_argument("--trivial-burst", type=int, default=30)
    parser.add_argument("--memcached-burst", type=int, default=20)
    parser.add_argument("--at-rest-crs", type=int, default=1000, help="0: no at-rest figures")
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument("--settle-seconds", type=float, default=5.0)
    parser.add_argument("--workers", type=int, default=2, help="--max-concurrent-reconciles")
    parser.add_argument("--results", type=Path, default=BENCH / "results")
    args = parser.parse_args(argv)
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    args.cores = [c for c in re.split(r"[,\s]+", args.cores) if c]
    for name in ("rounds", "singles", "trivial_burst", "memcached_burst", "workers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.at_rest_crs < 0:
        parser.error("--at-rest-crs must be at least 0")
    if not args.modes:
        parser.error("--modes names no mode")
    known = [f"{runner}{variant}" for runner in ("cold", "warm") for variant in ("", "-unrecorded")]
    if any(mode not in known for mode in args.modes):
        parser.error(f"--modes takes {', '.join(known)}")
    unknown = [c for c in args.cores if c not in CORES]
    if unknown or not args.cores or len(set(args.cores)) != len(args.cores):
        parser.error(f"--cores names each of {', '.join(CORES)} at most once, and one at least")
    return args


def run(args: argparse.Namespace) -> Path:
    started = datetime.now(UTC)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    settings = {k: v for k, v in vars(args).items() if k not in ("results", "pythons")}
    args.pythons = {core: core_python(core) for core in args.cores}
    versions = {core: core_version(python, core) for core, python in args.pythons.items()}
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp, cluster(Path(tmp)) as kubeconfig:
        bench = Bench(args, kubeconfig, Path(tmp), stamp)
        raw: dict[str, dict[str, dict[str, Any]]] = {
            core: {
                mode: {
                    "one_trivial_s": [],
                    "trivial_burst_s": [],
                    "memcached_burst_s": [],
                    "restart_first_successful_s": [],
                }
                for mode in args.modes
            }
            for core in args.cores
        }
        try:
            install_crds(bench.api)
            for number in range(args.rounds):
                for core in args.cores:
                    for mode in args.modes:
                        bench.round(core, mode, number, raw[core][mode])
            for mode in args.modes if args.at_rest_crs else ():
                bench.at_rest(args.cores[0], mode, raw[args.cores[0]][mode])
        finally:
            bench.cleanup()
    record = figures.build_record(
        started=started.isoformat(), machine=machine(versions), settings=settings, raw=raw
    )
    path = figures.write_record(record, args.results, stamp)
    table = figures.cores_table(record)
    png = args.results / f"{stamp}.png"
    plot.plot(record, png)
    shutil.copyfile(png, args.results / "latest.png")
    (args.results / "latest.md").write_text(figures.latest_markdown(record, path.name))
    print(table)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # SIGTERM unwinds like Ctrl-C, so that the operator under test and a private cluster are
    # stopped by the `finally`s on the way out rather than left running.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    from urllib3.exceptions import HTTPError

    from ansible_operator.devcluster.binaries import BinariesError
    from ansible_operator.devcluster.cluster import ClusterError

    try:
        path = run(args)
    except (BenchError, launcher.LaunchError, BinariesError, ClusterError, HTTPError) as err:
        print(f"bench: {err}", file=sys.stderr)
        return 1
    except ApiException as err:  # its str() carries every response header
        print(f"bench: the API server answered {err.status} {err.reason}", file=sys.stderr)
        return 1
    say(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
