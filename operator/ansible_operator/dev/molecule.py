"""``ansible-operator dev molecule`` (``make molecule``): the project's molecule scenarios on a
local cluster.

A private cluster for each of the ``--jobs`` run at once, started and stopped here, so that
scenarios sharing a CRD cannot disturb each other; unless ``ANSIBLE_OPERATOR_TEST_KUBECONFIG``
names one that is already running, which they all share. A scenario whose platform says
``real_node: true`` (its containers must run: ``dev-cluster up --real-node``) runs on one more
private cluster with a real node, one such scenario at a time (a machine holds one real node).
One scenario (or ``--jobs 1``) streams its output; several run ``--jobs`` at a time, each one's
output in a file that is printed when it fails and kept when any fails. Each scenario gets a line
with its time.
Every molecule runs in a process group of its own, so SIGINT or SIGTERM stops them all (a
stopped scenario counts as failed). Molecule finds ``dev/playbook.py``'s ``ansible-playbook``
first on its PATH: the scenarios' module tasks and lookups run warm.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import yaml

from ansible_operator.dev import playbook
from ansible_operator.dev.launcher import stop_group
from ansible_operator.devcluster import ClusterError, DevCluster, binaries

EXISTING_CLUSTER_ENV = "ANSIBLE_OPERATOR_TEST_KUBECONFIG"
MOLECULE = Path(sys.executable).parent / "molecule"  # the virtualenv's own
STOP_GRACE = 60.0
ANSI = re.compile(r"\x1b\[[0-9;]*m")
BOX = re.compile("^ *\u2502 ?")  # molecule's frame around a playbook's output
FAILURE_LINE = 600  # characters of the first failure's line on a scenario's FAILED line


class MoleculeError(Exception):
    """No such scenario, or no cluster; one line."""


def say(message: str) -> None:
    print(f"[molecule] {message}", flush=True)


def scenarios_of(project: Path) -> list[str]:
    """Every scenario of the project: the directories of molecule/ with a molecule.yml."""
    return sorted(p.parent.name for p in (project / "molecule").glob("*/molecule.yml"))


def check_scenarios(project: Path, wanted: list[str]) -> list[str]:
    known = scenarios_of(project)
    unknown = [s for s in wanted if s not in known]
    if unknown:
        raise MoleculeError(
            f"no scenario {', '.join(unknown)} in {project / 'molecule'} (there are: "
            f"{', '.join(known) or 'none'})"
        )
    return wanted or known


def environment(caller: Mapping[str, str], kubeconfig: Path, bin_dir: Path) -> dict[str, str]:
    """molecule's environment: the cluster for kubernetes.core; on PATH ``bin_dir`` (the warm
    ``ansible-playbook``), then this virtualenv."""
    env = dict(caller)
    env["K8S_AUTH_KUBECONFIG"] = str(kubeconfig)
    env["PATH"] = os.pathsep.join([str(bin_dir), str(MOLECULE.parent), caller.get("PATH", "")])
    return env


def needs_real_node(project: Path, scenario: str) -> bool:
    """Whether the scenario's platform asks for a real node (``real_node: true``)."""
    path = project / "molecule" / scenario / "molecule.yml"
    try:
        config = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise MoleculeError(f"{path}: {err}") from None
    platforms = config.get("platforms") if isinstance(config, dict) else None
    wanted = [p.get("real_node", False) for p in platforms or [] if isinstance(p, dict)]
    if any(not isinstance(value, bool) for value in wanted):
        raise MoleculeError(f"{path}: a platform's real_node is true or false")
    return any(wanted)


@contextmanager
def clusters(environ: Mapping[str, str], count: int, real_node: bool) -> Iterator[Clusters]:
    """``count`` kubeconfigs and, with ``real_node``, one of a cluster with a real node:
    ``$ANSIBLE_OPERATOR_TEST_KUBECONFIG``'s each time, or each of a private cluster, stopped and
    removed afterwards."""
    if environ.get(EXISTING_CLUSTER_ENV):
        kubeconfig = Path(environ[EXISTING_CLUSTER_ENV])
        if not kubeconfig.is_file():
            raise MoleculeError(f"{EXISTING_CLUSTER_ENV}={kubeconfig}: no such kubeconfig file")
        yield Clusters([kubeconfig] * count, kubeconfig if real_node else None)
        return
    with contextlib.ExitStack() as stack:
        plain = [stack.enter_context(_private_cluster()) for _ in range(count)]
        real = stack.enter_context(_private_cluster(real_node=True)) if real_node else None
        yield Clusters(plain, real)


@dataclass(frozen=True)
class Clusters:
    plain: list[Path]  # kwok's node only
    real: Path | None  # with a real node, for the scenarios that ask for one


@contextmanager
def _private_cluster(real_node: bool = False) -> Iterator[Path]:
    state = Path(tempfile.mkdtemp(prefix="molecule-cluster."))
    dev = DevCluster(state, progress=lambda m: print(f"[dev-cluster] {m}", file=sys.stderr))
    try:
        names = binaries.needed(real_node)
        bins = binaries.ensure(progress=lambda m: print(m, file=sys.stderr), names=names)
        yield dev.up(bins, real_node=real_node)
    finally:
        dev.down()
        shutil.rmtree(state, ignore_errors=True)


@dataclass
class Outcome:
    scenario: str
    passed: bool
    seconds: float


class Runs:
    """The molecule processes under way, so that a signal can stop every one of them."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[bytes]] = set()

    def test(self, scenario: str, env: Mapping[str, str], log: Path | None) -> Outcome:
        """``molecule test`` of one scenario in ``env``, its output streamed or written to
        ``log``."""
        started = time.monotonic()
        argv = [str(MOLECULE), "test", "--scenario-name", scenario]
        with contextlib.ExitStack() as files:
            out = files.enter_context(open(log, "wb")) if log is not None else None
            with self._lock:
                if self.stopping.is_set():
                    return Outcome(scenario, False, 0.0)
                proc = subprocess.Popen(
                    argv,
                    cwd=self.project,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT if out is not None else None,
                    start_new_session=True,
                )
                self._procs.add(proc)
            code = proc.wait()
            with self._lock:
                self._procs.discard(proc)
        passed = code == 0 and not self.stopping.is_set()
        return Outcome(scenario, passed, time.monotonic() - started)

    def stop(self) -> None:
        self.stopping.set()
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            stop_group(proc.pid, functools.partial(_exited, proc), STOP_GRACE)


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    return proc.poll() is not None


def run(project: Path, wanted: list[str], jobs: int, environ: Mapping[str, str]) -> int:
    try:
        scenarios = check_scenarios(project, wanted)
        real = {s for s in scenarios if needs_real_node(project, s)}
        plain = len(scenarios) - len(real)
        jobs = max(1, min(jobs, plain)) if plain else 0
        with (
            clusters(environ, jobs, bool(real)) as kubeconfigs,
            tempfile.TemporaryDirectory(prefix="molecule-bin.") as bin_dir,
        ):
            playbook.install(Path(bin_dir))

            def env(kubeconfig: Path) -> dict[str, str]:
                return environment(environ, kubeconfig, Path(bin_dir))

            pools = {
                False: [env(kubeconfig) for kubeconfig in kubeconfigs.plain],
                True: [env(kubeconfigs.real)] if kubeconfigs.real else [],
            }
            runs = Runs(project)
            previous = {
                sig: signal.signal(sig, _stopper(runs)) for sig in (signal.SIGINT, signal.SIGTERM)
            }
            try:
                return _run_all(runs, scenarios, pools, real)
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
    except (MoleculeError, ClusterError, binaries.BinariesError) as err:
        print(f"ansible-operator dev molecule: {err}", file=sys.stderr, flush=True)
        return 1


def first_failure(output: str) -> str:
    """``": TASK [name]: fatal: ..."``, the first task that failed in a molecule run's output (not
    one ignored), its message unwrapped and cut to a line; ``""`` when none shows. So the end of
    a long log, all that CI may show, says what failed."""
    lines = [BOX.sub("", ANSI.sub("", line)) for line in output.splitlines()]
    task = ""
    for at, text in enumerate(lines):
        if text.startswith("TASK ["):
            task = text.partition("]")[0] + "]"
        elif text.startswith(("fatal: [", "failed: [")):
            after = lines[at + 1 :]
            wrapped = list(itertools.takewhile(lambda line: line.startswith("  "), after))
            if after[len(wrapped) : len(wrapped) + 1] != ["...ignoring"]:
                message = " ".join([text, *(line.strip() for line in wrapped)])
                return f": {task}: {message}"[:FAILURE_LINE]
    return ""


def _stopper(runs: Runs) -> Callable[[int, FrameType | None], None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        say(f"stopping on {signal.Signals(signum).name}")
        threading.Thread(target=runs.stop, daemon=True).start()

    return handler


def _run_all(
    runs: Runs, scenarios: list[str], pools: dict[bool, list[dict[str, str]]], real: set[str]
) -> int:
    """Every scenario, as many at a time as there are environments (one per cluster); those of
    ``real`` in the real node's (``pools[True]``), the others in the rest's."""
    if len(pools[False]) + len(pools[True]) == 1:
        outcomes = []
        for scenario in scenarios:
            outcome = runs.test(scenario, pools[scenario in real][0], None)
            say(f"{scenario}: {outcome.seconds:.0f} s")
            outcomes.append(outcome)
        failed = [o.scenario for o in outcomes if not o.passed]
        if failed:
            say(f"failed: {' '.join(failed)}")
            return 1
    else:
        logs = Path(tempfile.mkdtemp(prefix="molecule-logs."))
        workers = len(pools[False]) + len(pools[True])
        say(f"{' '.join(scenarios)}, {workers} at a time; output in {logs}")
        free: dict[bool, queue.SimpleQueue[dict[str, str]]] = {
            kind: queue.SimpleQueue() for kind in pools
        }
        for kind, envs in pools.items():
            for env in envs:
                free[kind].put(env)

        def one(scenario: str) -> Outcome:
            log = logs / f"{scenario}.log"
            kind = scenario in real
            env = free[kind].get()  # one is free: no more run at once than there are
            try:
                outcome = runs.test(scenario, env, log)
            finally:
                free[kind].put(env)
            if outcome.passed:
                say(f"{scenario}: passed in {outcome.seconds:.0f} s")
            else:
                output = log.read_text(errors="replace")
                sys.stdout.write(output)
                say(f"{scenario}: FAILED in {outcome.seconds:.0f} s{first_failure(output)}")
            return outcome

        with ThreadPoolExecutor(max_workers=workers) as pool:
            outcomes = list(pool.map(one, scenarios))
        if not all(o.passed for o in outcomes):
            say(f"failed; output in {logs}")
            return 1
        shutil.rmtree(logs)
    say(f"passed: {' '.join(scenarios)}")
    return 0
