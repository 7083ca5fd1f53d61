"""The fault suite of issue 13: N CRs of the soak role reconciled by a real operator process on a
private cluster of its own, while seeded random faults hit it; then the end state is checked.

Faults, one at a time: SIGKILL or SIGTERM of the operator (restarted each time), the API server
and etcd frozen with SIGSTOP for longer than the operator's lease (and, in the full run, than
its API request timeout) before SIGCONT, and a spec change or a deletion of a CR, picked among
those with a run in progress when there is one. The cluster is private because it is frozen:
the shared one is never touched. Its kube-controller-manager runs the garbage collector, so the
dependents of deleted CRs must go through their owner references.

At the end, after waiting for convergence: every remaining CR Successful at its latest
generation, no Running condition still running, every ConfigMap present and matching its CR's
latest spec and owned by it, none left over from deleted CRs, no process of the operator left
once it stopped, and no two runs of one CR overlapping in the journal. `run` returns the counts
and the violations; the same code runs in `make soak` and, small, in the e2e layer.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.e2e.cluster import Cluster, fresh_namespace
from tests.e2e.crds import GROUP, VERSION, install_crds, kind_crd
from tests.e2e.operators import Operator
from tests.e2e.resources import condition, new_cr
from tests.e2e.waiting import wait_until
from tests.runner import runs

from . import journal

KIND, PLURAL = "Soak", "soaks"
LEASE_SECONDS = 15  # the operator's default --leader-elect-lease-duration
TAG_ENV = "ANSIBLE_OPERATOR_SOAK_TAG"  # in the operator's environment, so in its runs'
FAULTS = ("sigkill", "sigterm", "freeze", "change", "delete")
WEIGHTS = (2, 2, 1, 4, 1)  # spec changes most often; deletions rarer, so that most CRs remain
LEASE_ACQUIRED = "Successfully acquired lease"  # the operator's log line
LEAD_TIMEOUT = 120.0  # for a restarted operator to take the Lease over
STOP_TIMEOUT = 180.0  # for a SIGTERMed operator to exit, its graceful timeout included
PROCESS_TIMEOUT = 120.0  # for orphaned runs of deleted CRs to end after the operator stopped


@dataclass(frozen=True)
class SoakConfig:
    workdir: Path
    n: int = 200
    seed: int = 0
    duration: float = 600.0  # seconds of random faults; unused when `plan` is given
    plan: tuple[str, ...] = ()  # these faults in a seeded order instead of random ones
    freeze_seconds: tuple[float, float] = (65.0, 90.0)  # > the 15 s lease, > the 60 s request
    fault_gap: tuple[float, float] = (2.0, 12.0)  # seconds between two faults
    work_seconds: tuple[int, ...] = (0, 1, 2)  # how long a run sleeps mid-way
    graceful_seconds: tuple[int, ...] = (0, 2, 5)  # --graceful-shutdown-timeout at each start
    workers: int = 4  # --max-concurrent-reconciles
    converge_timeout: float = 1800.0
    say: Callable[[str], None] = print


@dataclass
class Report:
    seed: int
    counts: Counter[str] = field(default_factory=Counter)
    converge_seconds: float | None = None
    violations: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        converged = (
            "did not converge"
            if self.converge_seconds is None
            else f"converged in {self.converge_seconds:.0f} s after the last fault"
        )
        out = [f"seed {self.seed}: {converged}"]
        out += [f"  {name}: {value}" for name, value in sorted(self.counts.items())]
        out.append(f"violations: {len(self.violations)}")
        out += [f"  {v}" for v in self.violations[:50]]
        if len(self.violations) > 50:
            out.append(f"  ... and {len(self.violations) - 50} more")
        return out


class Soak:
    """One soak: the cluster, the namespace and the operator are set up by `run`."""

    def __init__(self, config: SoakConfig, cluster: Cluster, namespace: str, crs, core) -> None:
        self.config = config
        self.cluster = cluster
        self.namespace = namespace
        self.crs = crs
        self.core = core
        self.rng = random.Random(config.seed)
        self.report = Report(
            config.seed, Counter({"operator exits on its own": 0, "freezes under a leader": 0})
        )
        self.journal_path = config.workdir / "journal"
        self.tag = uuid.uuid4().hex
        self.operator = Operator(
            config.workdir,
            cluster.kubeconfig,
            [namespace],
            log_path=config.workdir / "operator.log",
        )
        self.operator.write_watches([{"kind": KIND, "role": "soak"}])
        self.live: dict[str, str] = {}  # name -> uid of the CRs that remain
        self.deleted: dict[str, str] = {}  # name -> uid of the CRs deleted on purpose
        self.frozen: list[int] = []  # pids stopped by a freeze, for `thaw`
        self.freeze_since_start = False
        self.log_mark = 0  # where the log of the running operator process begins
        self.electing = False  # whether it runs with --leader-elect
        self.state_counts: Counter[str] = Counter()
        self.began = time.monotonic()

    def say(self, message: str) -> None:
        self.config.say(f"[{time.monotonic() - self.began:7.1f}s] {message}")

    # -- the operator --------------------------------------------------------------------------

    def start_operator(self) -> None:
        """Start the operator, with leader election or without: a leader restarted after a
        SIGKILL waits for its predecessor's Lease to expire, while its orphaned runs may end by
        themselves; without it, the run lock alone keeps a restart from overlapping them."""
        graceful = self.rng.choice(self.config.graceful_seconds)
        self.electing = self.rng.random() < 0.5
        election = (
            [
                "--leader-elect",
                "--leader-election-id=soak",
                f"--leader-election-namespace={self.namespace}",
            ]
            if self.electing
            else []
        )
        self.log_mark = len(self.operator.log())
        self.operator.start(
            *election,
            f"--max-concurrent-reconciles={self.config.workers}",
            f"--graceful-shutdown-timeout={graceful}s",
            env={TAG_ENV: self.tag},
        )
        self.freeze_since_start = False
        self.report.counts["operator starts"] += 1
        self.say(
            f"operator started (pid {self.operator.proc.pid}, graceful {graceful}s,"
            f" {'leader election' if self.electing else 'no leader election'})"
        )

    def running(self) -> bool:
        return self.operator.launched is not None and self.operator.proc.poll() is None

    def keep_running(self) -> None:
        """Restart the operator if it exited by itself; an exit without a freeze since its start
        (when a lost Lease explains it) is a violation."""
        if self.running():
            return
        code = self.operator.proc.wait()
        self.report.counts["operator exits on its own"] += 1
        if not self.freeze_since_start:
            self.report.violations.append(f"the operator exited by itself with code {code}")
        self.say(f"the operator exited by itself (code {code}); restarting it")
        self.start_operator()

    # -- faults --------------------------------------------------------------------------------

    def sigkill(self) -> None:
        self.say(f"SIGKILL to the operator (pid {self.operator.proc.pid})")
        self.report.counts["fault: SIGKILL of the operator"] += 1
        self.operator.kill()
        self.start_operator()

    def sigterm(self) -> None:
        self.say(f"SIGTERM to the operator (pid {self.operator.proc.pid})")
        self.report.counts["fault: SIGTERM of the operator"] += 1
        self.operator.proc.send_signal(signal.SIGTERM)
        try:
            code = self.operator.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.report.violations.append(
                f"the operator did not exit within {STOP_TIMEOUT:.0f}s of SIGTERM"
            )
            self.operator.stop()
        else:
            if code != 0 and not self.freeze_since_start:
                self.report.violations.append(f"the operator exited with code {code} after SIGTERM")
        self.start_operator()

    def leads(self) -> bool:
        return LEASE_ACQUIRED in self.operator.log()[self.log_mark :]

    def freeze(self) -> None:
        """Freeze the control plane; with leader election, once the operator leads, so that it
        loses its Lease (and exits, to be restarted)."""
        low, high = self.config.freeze_seconds
        seconds = self.rng.uniform(low, high)
        if self.electing:
            try:
                wait_until(self.leads, what="the operator to hold its Lease", timeout=LEAD_TIMEOUT)
            except AssertionError as err:
                self.report.violations.append(str(err))
                return
            self.report.counts["freezes under a leader"] += 1
        self.frozen = [self.cluster.component_pid(c) for c in ("kube-apiserver", "etcd")]
        self.say(f"SIGSTOP to the API server and etcd for {seconds:.0f}s")
        for pid in self.frozen:
            os.kill(pid, signal.SIGSTOP)
        self.freeze_since_start = True
        self.report.counts["fault: API server and etcd frozen"] += 1
        time.sleep(seconds)  # the fault itself: the control plane stays frozen this long
        self.thaw()

    def thaw(self) -> None:
        for pid in self.frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        if self.frozen:
            self.say("SIGCONT to the API server and etcd")
        self.frozen = []

    def mid_run_target(self) -> str | None:
        """A remaining CR with a run in progress according to the journal, else any remaining."""
        if not self.live:
            return None
        open_runs: dict[str, str] = {}
        for entry in journal.read(self.journal_path):
            if entry.what == "start":
                open_runs[entry.uid] = entry.run
            elif open_runs.get(entry.uid) == entry.run:
                del open_runs[entry.uid]
        busy = sorted(name for name, uid in self.live.items() if uid in open_runs)
        self.report.counts["faults on CRs mid-run"] += bool(busy)
        return self.rng.choice(busy or sorted(self.live))

    def change(self) -> None:
        name = self.mid_run_target()
        if name is None:
            return
        spec = {"value": self.new_value(), "seconds": self.rng.choice(self.config.work_seconds)}
        self.say(f"spec change of {name}")
        self.report.counts["fault: spec change"] += 1
        self.crs.patch_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, name, {"spec": spec}
        )

    def delete(self) -> None:
        if len(self.live) <= max(1, self.config.n // 2):
            self.change()  # half of the CRs always remain
            return
        name = self.mid_run_target()
        assert name is not None
        self.say(f"deletion of {name}")
        self.report.counts["fault: deletion"] += 1
        # Whether the garbage collector has something to collect for it, for the report.
        with contextlib.suppress(ApiException):
            self.core.read_namespaced_config_map(f"{name}-soak", self.namespace)
            self.report.counts["deleted CRs that had a ConfigMap"] += 1
        self.crs.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name)
        self.deleted[name] = self.live.pop(name)

    def new_value(self) -> str:
        return f"v{self.rng.getrandbits(40):010x}"

    def faults(self) -> Iterator[str]:
        if self.config.plan:
            plan = list(self.config.plan)
            self.rng.shuffle(plan)
            yield from plan
            return
        deadline = time.monotonic() + self.config.duration
        while time.monotonic() < deadline:
            yield self.rng.choices(FAULTS, WEIGHTS)[0]

    # -- the soak ------------------------------------------------------------------------------

    def create_all(self) -> None:
        for i in range(self.config.n):
            name = f"soak-{i:04d}"
            spec = {
                "value": self.new_value(),
                "seconds": self.rng.choice(self.config.work_seconds),
                "journal": str(self.journal_path),
            }
            made = self.crs.create_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, new_cr(KIND, name, spec)
            )
            self.live[name] = made["metadata"]["uid"]
        self.say(f"{self.config.n} CRs created")

    def inflict(self) -> None:
        actions = {
            "sigkill": self.sigkill,
            "sigterm": self.sigterm,
            "freeze": self.freeze,
            "change": self.change,
            "delete": self.delete,
        }
        for fault in self.faults():
            low, high = self.config.fault_gap
            time.sleep(self.rng.uniform(low, high))  # a random moment for the next fault
            self.keep_running()
            actions[fault]()
        self.keep_running()

    def converge(self) -> None:
        """Wait until the end state holds; its problems become violations after the timeout."""
        since = time.monotonic()
        deadline = since + self.config.converge_timeout
        problems = self.end_state()
        last_said = since
        while problems and time.monotonic() < deadline:
            if time.monotonic() - last_said > 30:
                self.say(f"converging: {len(problems)} problems left, e.g. {problems[0]}")
                last_said = time.monotonic()
            time.sleep(2)
            self.keep_running()
            problems = self.end_state()
        if problems:
            self.report.violations += problems
        else:
            self.report.converge_seconds = time.monotonic() - since
        self.report.counts.update(self.state_counts)
        self.report.counts["CRs remaining"] = len(self.live)
        self.report.counts["CRs deleted"] = len(self.deleted)

    def end_state(self) -> list[str]:
        """What is not yet as it must end, one line each; counts of what is, in the report."""
        try:
            objs = self.crs.list_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL)
            maps = self.core.list_namespaced_config_map(self.namespace).items
        except ApiException as err:
            return [f"the API server answered {err.status} to a list"]
        by_name = {o["metadata"]["name"]: o for o in objs["items"]}
        dependents = {m.metadata.name: m for m in maps if m.metadata.name.endswith("-soak")}
        problems: list[str] = []
        counts = Counter({"conditions left Running": 0, "dependents orphaned": 0})
        for name, uid in sorted(self.live.items()):
            obj = by_name.get(name)
            if obj is None or obj["metadata"]["uid"] != uid:
                problems.append(f"{name}: the CR is gone")
                continue
            generation = obj["metadata"]["generation"]
            successful = condition(obj, "Successful") or {}
            running = condition(obj, "Running") or {}
            if (
                successful.get("status") == "True"
                and successful.get("observedGeneration") == generation
            ):
                counts["CRs Successful at their latest generation"] += 1
            else:
                problems.append(f"{name}: not Successful at generation {generation}: {successful}")
            if running.get("reason") == "Running":
                counts["conditions left Running"] += 1
                problems.append(f"{name}: Running {running}")
            if (obj.get("status") or {}).get("value") != obj["spec"]["value"]:
                problems.append(f"{name}: status.value is not spec.value {obj['spec']['value']}")
            problem = dependent_problem(dependents.get(f"{name}-soak"), obj)
            if problem:
                problems.append(f"{name}: {problem}")
            else:
                counts["dependents present and correct"] += 1
        for name, uid in sorted(self.deleted.items()):
            if by_name.get(name, {}).get("metadata", {}).get("uid") == uid:
                problems.append(f"{name}: deleted, but the CR is still there")
        owners = set(self.live.values())
        for name, cm in sorted(dependents.items()):
            if not owner_uids(cm) & owners:
                counts["dependents orphaned"] += 1
                problems.append(f"ConfigMap {name}: orphaned (no remaining CR owns it)")
        self.state_counts = counts
        return problems

    def stop_and_sweep(self) -> None:
        """Stop the operator; then no process of it or its runs may remain."""
        self.say("stopping the operator")
        self.operator.stop()

        def left() -> list[str]:
            return tagged_processes(self.tag)

        deadline = time.monotonic() + PROCESS_TIMEOUT
        remaining = left()
        while remaining and time.monotonic() < deadline:
            time.sleep(1)
            remaining = left()
        self.report.counts["processes left"] = len(remaining)
        for line in remaining:
            self.report.violations.append(f"process left after the operator stopped: {line}")
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split()[0]), signal.SIGKILL)

    def check_journal(self) -> None:
        entries = journal.read(self.journal_path)
        found = journal.overlaps(entries)
        self.report.counts["runs started"] = sum(e.what == "start" for e in entries)
        self.report.counts["runs ended"] = sum(e.what == "end" for e in entries)
        self.report.counts["runs cut short"] = journal.unfinished(entries)
        self.report.counts["overlapping runs"] = len(found)
        self.report.violations += found
        log = self.operator.log()
        self.report.counts["runs interrupted (log)"] = log.count("Reconciliation interrupted")
        self.report.counts["orphaned runs stopped (log)"] = log.count("Stopping an orphaned run")


def dependent_problem(cm: client.V1ConfigMap | None, obj: dict) -> str | None:
    """What is wrong with the CR's ConfigMap, or None when it matches the CR's latest spec."""
    if cm is None:
        return "its ConfigMap is missing"
    want = {"value": obj["spec"]["value"], "generation": str(obj["metadata"]["generation"])}
    if cm.data != want:
        return f"its ConfigMap holds {cm.data}, not {want}"
    if obj["metadata"]["uid"] not in owner_uids(cm):
        return "its ConfigMap has no owner reference to it"
    return None


def owner_uids(cm: client.V1ConfigMap) -> set[str]:
    refs = cm.metadata.owner_references if cm.metadata is not None else None
    return {ref.uid for ref in refs or []}


def tagged_processes(tag: str) -> list[str]:
    """`pid cmdline` of each live process whose environment carries the soak's tag."""
    return [f"{p.pid} {p.cmdline[:160]}" for p in runs.tagged_processes(tag, env=TAG_ENV)]


def run(config: SoakConfig) -> Report:
    """The whole soak on a private cluster started for it, stopped after it."""
    from ansible_operator.devcluster import binaries
    from ansible_operator.devcluster.cluster import DevCluster

    config.workdir.mkdir(parents=True, exist_ok=True)
    config.say(f"soak: seed {config.seed}, {config.n} CRs, workdir {config.workdir}")
    dev = DevCluster(config.workdir / "cluster", progress=lambda m: config.say(f"[cluster] {m}"))
    with contextlib.ExitStack() as stack:
        cluster = Cluster(dev.up(binaries.ensure()))
        stack.callback(dev.down)
        api_client = stack.enter_context(cluster.api_client())
        install_crds(api_client, [kind_crd(KIND)])
        namespace = stack.enter_context(fresh_namespace(cluster))
        soak = Soak(
            config,
            cluster,
            namespace,
            client.CustomObjectsApi(api_client),
            client.CoreV1Api(api_client),
        )
        stack.callback(soak.operator.stop)
        stack.callback(soak.thaw)  # runs first: never leave the control plane stopped
        soak.create_all()
        soak.start_operator()
        soak.inflict()
        soak.say("faults over; waiting for convergence")
        soak.converge()
        soak.stop_and_sweep()
        soak.check_journal()
        soak.say("done")
        return soak.report
