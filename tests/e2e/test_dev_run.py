"""``ansible-operator dev run`` (``make run``) on a running cluster: every sample reaches
Successful, the banners say so, and SIGINT or SIGTERM ends it with nothing left running."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.runner.runs import live_group_members

from .project import CONFIG, REPO, kubectl, samples
from .waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.long]

READY = re.compile(r"==== the operator \(pid (\d+)\) is ready: metrics http://127.0.0.1:(\d+)/")


READY_PHASES = {
    "EtcdStore": ("Running", 3),  # (status.phase, status.readyMembers)
    "EtcdBackup": ("Completed", None),
    "EtcdRestore": ("Completed", None),
}


def etcd_phases(kubeconfig: Path, namespace: str) -> dict[str, tuple]:
    kinds = ",".join(f"{kind.lower()}s.store.example.com" for kind in READY_PHASES)
    found = kubectl(kubeconfig, "get", kinds, "-n", namespace, "-o", "json")
    statuses = {item["kind"]: item.get("status", {}) for item in json.loads(found.stdout)["items"]}
    return {
        kind: (status.get("phase"), status.get("readyMembers")) for kind, status in statuses.items()
    }


class DevRun:
    """``dev run`` in a session of its own (as a terminal's foreground job), output collected."""

    def __init__(self, kubeconfig: Path, namespace: str, log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ansible_operator.cli", "dev", "run",
             f"--kubeconfig={kubeconfig}", f"--namespace={namespace}", f"--project={REPO}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with open(self.log, "a") as log:
            for line in self.proc.stdout:
                self.lines.append(line.rstrip("\n"))
                log.write(line)

    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for(self, pattern: str, timeout: float = 600) -> re.Match:
        return wait_until(
            lambda: re.search(pattern, self.output(), re.MULTILINE),
            what=f"dev run to print {pattern!r}",
            timeout=timeout,
        )

    def stop(self, sig: signal.Signals) -> int:
        self.proc.send_signal(sig)
        code = self.proc.wait(120)
        self._reader.join(30)
        return code


def test_dev_run_reconciles_every_sample_and_stops_cleanly(cluster, namespace, tmp_path):
    count = len(samples())  # one per file config/samples lists
    log = tmp_path / "dev-run.log"
    kubectl(cluster.kubeconfig, "delete", "namespace", namespace, "--wait=true")
    first = DevRun(cluster.kubeconfig, namespace, log)  # its namespace made again
    try:
        first.wait_for(rf"^export KUBECONFIG={re.escape(str(cluster.kubeconfig))}$")
        assert f"namespace/{namespace} created" in first.lines
        ready = first.wait_for(READY.pattern)
        operator_pid = int(ready.group(1))
        first.wait_for(r"^==== every sample is Ready, \d+ s after the operator started ====$")
        first.wait_for(rf"^==== kubectl get -k config/samples -n {namespace} shows them ====$")
        met = [line for line in first.lines if line.endswith(" condition met")]
        assert len(met) == count, met
        # What the banner waited for is what a user's kubectl waits for.
        names = [f"{sample.plural}.{sample.group}/{sample.name}"
                 for sample in samples()]  # fmt: skip
        waited = kubectl(cluster.kubeconfig, "wait", "--for=condition=Ready", "--timeout=30s",
                         "-n", namespace, *names)  # fmt: skip
        assert waited.stdout.count("condition met") == count, waited.stdout
        # And each in its ready phase: the local cluster provisions the claims, so the store's
        # three members become ready, its backup completes, and the restore of that backup.
        wait_until(
            lambda: etcd_phases(cluster.kubeconfig, namespace) == READY_PHASES,
            what=f"the etcd samples in {READY_PHASES}",
            timeout=300,
        )
    finally:
        code = first.stop(signal.SIGINT)
        print(f"---- dev run ({log}) ----\n{log.read_text()[-20000:]}", file=sys.stderr)
    assert code == 0
    assert live_group_members(operator_pid) == [], "the operator and its runs are gone"

    # Again, with the samples kept from the first run; stopped with SIGTERM this time, after
    # the samples are deleted while the operator still runs (memcached's finalizer).
    second = DevRun(cluster.kubeconfig, namespace, log)
    try:
        operator_pid = int(second.wait_for(READY.pattern).group(1))
        second.wait_for(rf"^==== every sample is Ready \({count} kept from an earlier run\) ====$")
    finally:
        kubectl(cluster.kubeconfig, "delete", "-k", str(CONFIG / "samples"), "-n", namespace,
                "--ignore-not-found", "--timeout=120s", check=False)  # fmt: skip
        code = second.stop(signal.SIGTERM)
        print(f"---- dev run ({log}) ----\n{log.read_text()[-20000:]}", file=sys.stderr)
    assert code == 0
    assert live_group_members(operator_pid) == []
