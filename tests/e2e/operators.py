"""The operator under test as a real process, started by the project's one launcher
(``ansible_operator.dev.launcher``), and what it tells: its log, its structured log records and
its reconcile counters on ``/metrics``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

from ansible_operator.dev import launcher

from .crds import GROUP, VERSION
from .waiting import wait_until

ROLES = Path(__file__).parent / "roles"
REPO = Path(__file__).resolve().parents[2]
# The log as records a test can query: JSON lines, with the debug lines that say which events
# were seen and filtered, and what each reconcile asked for next.
STRUCTURED_LOG = ("--zap-encoder=json", "--zap-log-level=debug")


class Operator:
    """``ansible-operator run`` in a process of its own, its output in ``log_path``."""

    def __init__(
        self,
        workdir: Path,
        kubeconfig: Path,
        namespaces: list[str],
        *,
        log_path: Path | None = None,
        own_tmp_dir: bool = False,
    ) -> None:
        """`own_tmp_dir`: a TMPDIR of its own for each start (launcher.private_tmp_dir)."""
        self.workdir = workdir
        self.kubeconfig = kubeconfig
        self.namespaces = namespaces
        self.log_path = log_path or workdir / "operator.log"
        self.own_tmp_dir = own_tmp_dir
        self.launched: launcher.OperatorProcess | None = None

    @property
    def proc(self):
        assert self.launched is not None, "the operator was not started"
        return self.launched.proc

    def write_watches(self, entries: list[dict]) -> None:
        for entry in entries:
            entry.setdefault("group", GROUP)
            entry.setdefault("version", VERSION)
            if "role" in entry and not entry["role"].startswith("/"):
                entry["role"] = str(ROLES / entry["role"])
        (self.workdir / "watches.yaml").write_text(yaml.safe_dump(entries))

    def start(self, *args: str, env: dict[str, str] | None = None, ready: bool = True) -> None:
        """Start it; with ``ready``, return once it answers on /readyz."""
        config = launcher.LaunchConfig(
            workdir=self.workdir,
            project=REPO,  # ANSIBLE_ROLES_PATH: the repository's roles/
            kubeconfig=self.kubeconfig,
            namespaces=self.namespaces,
            log=self.log_path,
            args=["--max-concurrent-reconciles=2", *args],
            env=env or {},
            own_tmp_dir=self.own_tmp_dir,
        )
        self.launched = launcher.start(config, ready=ready)

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill would."""
        assert self.launched is not None
        self.launched.kill()

    def stop(self) -> int | None:
        return None if self.launched is None else self.launched.stop()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def print_log(self) -> None:
        """The end of the log on stderr, for the report of a test that fails."""
        print(f"---- operator log ({self.log_path}) ----\n{self.log()[-20000:]}", file=sys.stderr)

    def records(self, since: int = 0) -> list[dict]:
        """The JSON records of the log (started with STRUCTURED_LOG) from character ``since``;
        a line that is not JSON is kept as ``{"level": "raw", "msg": line}``."""
        found = []
        for line in self.log()[since:].splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            found.append(record if isinstance(record, dict) else {"level": "raw", "msg": line})
        return found

    def metrics(self) -> str:
        """Its /metrics ("" when it does not answer)."""
        assert self.launched is not None and self.launched.metrics_url is not None
        try:
            with urllib.request.urlopen(self.launched.metrics_url, timeout=10) as resp:
                return resp.read().decode()
        except OSError:
            return ""

    def metric(self, name: str, **labels: str) -> float:
        """A sample of its /metrics (0 when absent or it does not answer)."""
        for family in text_string_to_metric_families(self.metrics()):
            for sample in family.samples:
                if sample.name == name and all(
                    sample.labels.get(k) == v for k, v in labels.items()
                ):
                    return sample.value
        return 0.0

    def reconciles(self, kind: str, group: str = GROUP, version: str = VERSION) -> dict[str, int]:
        """The reconcile counter on /metrics for ``kind``: runs by result (succeeded, failed)."""
        assert self.launched is not None and self.launched.metrics_url is not None
        with urllib.request.urlopen(self.launched.metrics_url, timeout=30) as resp:
            text = resp.read().decode()
        gvk = f"{group}/{version}, Kind={kind}"
        counts = {"succeeded": 0, "failed": 0}
        for family in text_string_to_metric_families(text):
            if family.name == "ansible_operator_reconcile_result":
                for sample in family.samples:
                    if sample.labels.get("GVK") == gvk:
                        counts[sample.labels["result"]] = int(sample.value)
        return counts


class Replica(Operator):
    """One operator process of a group on one namespace, running ``role`` for ``kind``; the
    REPLICA environment variable names it to the role (which records who ran what)."""

    def __init__(
        self, name: str, workdir: Path, kubeconfig: Path, namespace: str, kind: str, role: str
    ) -> None:
        workdir.mkdir()
        super().__init__(workdir, kubeconfig, [namespace])
        self.name = name
        self.namespace = namespace
        self.write_watches([{"kind": kind, "role": role}])

    def start_replica(self, *args: str) -> None:
        self.start(*args, env={"REPLICA": self.name})

    @property
    def identity(self) -> str:
        """Its leader-election identity, from its log."""
        found = wait_until(
            lambda: re.search(r"Attempting to acquire leader lease .*identity=(\S+)", self.log()),
            what=f"replica {self.name} to start its election",
        )
        return found.group(1)


def records_of(records: list[dict], msg: str, **fields) -> list[dict]:
    """The records with message ``msg`` whose fields include ``fields``."""
    return [
        r for r in records if r.get("msg") == msg and all(r.get(k) == v for k, v in fields.items())
    ]


def processes_matching(fragment: str) -> list[str]:
    """`pid args` of every process on the machine whose command line holds `fragment`."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if fragment in line and "ps -eo" not in line]


def plan(kubeconfig: Path, watches_file: Path, *args: str) -> tuple[int, list[dict], str]:
    """`ansible-operator plan -o json ...`: its exit code, its plans and its stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "ansible_operator.cli", "plan", "--watches-file",
         str(watches_file), "--kubeconfig", str(kubeconfig), "-o", "json", *args],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if proc.returncode == 1 and not proc.stdout:
        return 1, [], proc.stderr
    plans = json.loads(proc.stdout)
    failed = [f"{p['name']}: {p['message']}" for p in plans if p["outcome"] == "Failed"]
    return proc.returncode, plans, proc.stderr + "\n".join(failed)
