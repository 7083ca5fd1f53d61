"""The operator's peak memory with three CRs at the spec limits reconciled at once, against three
small ones: is one run's cost bounded well under the manifests' memory limit (768 MiB)?

One operator (`--max-concurrent-reconciles=3`, the warm runner unless `--runner cold`) watches
the e2e tests' Echo kind (its CRD keeps unknown fields) with the bench's trivial role, which
loads the run's extra vars as every role does and does nothing more. Per case: three CRs created
at once in a fresh namespace, the operator and all its processes measured until all three are
Successful: the peak of the processes' summed PSS, sampled every 50 ms, and the peak growth of a
memory cgroup they are moved into once ready (what a container's limit counts: every process,
page cache included). Cases: small
specs; specs at the key limit and the size limit (core.extravars: 10,000 keys and items, 1 MiB)
as one wide list; and at the key limit nested 99 levels deep.

    KUBECONFIG=$(.venv/bin/ansible-operator dev-cluster kubeconfig) \\
        .venv/bin/python -m bench.spec_limits_memory [--runner warm|cold]

Needs root, for a memory cgroup (cgroup v1 here, v2 too).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import threading
import time
import uuid
from pathlib import Path

from kubernetes import client, config
from tests.e2e import crds

from ansible_operator.core.extravars import MAX_SPEC_BYTES, MAX_SPEC_NODES
from bench import processes
from bench.launch import start_operator

REPO = Path(__file__).resolve().parents[1]
ROLE = REPO / "bench/roles/trivial"
KIND, PLURAL = "Echo", "echos"
CGROUPS = (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup"))  # v1, v2


def wide_spec() -> dict:
    """`items` and MAX_SPEC_NODES - 1 strings: at the key limit, and just under 1 MiB as JSON."""
    items = MAX_SPEC_NODES - 1
    length = (MAX_SPEC_BYTES - 64) // items - 3  # each item "…", in JSON
    return {"items": ["x" * length] * items}


def deep_spec() -> dict:
    """MAX_SPEC_NODES keys, 101 a level, 99 levels deep."""
    node: dict = {}
    for _ in range(99):
        node = {f"key{i}": f"value-{i}" for i in range(100)} | {"next": node}
    return node


CASES = {"3 small specs": lambda: {"message": "hello"}, "3 wide specs at the limits": wide_spec,
         "3 deep specs at the key limit": deep_spec}  # fmt: skip


class Cgroup:
    """A memory cgroup of its own that the operator's processes are moved into once ready: what
    they allocate from then on is charged to it (what they held before stays with the old one,
    the kernel here moves no charges), so its peak is the case's growth over the idle operator."""

    def __init__(self) -> None:
        root = next(path for path in CGROUPS if (path / "cgroup.procs").exists())
        self.v1 = root == CGROUPS[0]
        self.path = root / f"bench-spec-{uuid.uuid4().hex[:8]}"
        self.path.mkdir()

    def join(self, pids: list[int]) -> None:
        for pid in pids:
            with contextlib.suppress(OSError):  # gone meanwhile
                (self.path / "cgroup.procs").write_text(str(pid))
        (self.path / ("memory.max_usage_in_bytes" if self.v1 else "memory.peak")).write_text("0")

    def peak_mib(self) -> float:
        name = "memory.max_usage_in_bytes" if self.v1 else "memory.peak"
        return int((self.path / name).read_text()) / 2**20

    def remove(self) -> None:
        """Its processes back in the parent cgroup (any left), then it."""
        for pid in (self.path / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                (self.path.parent / "cgroup.procs").write_text(pid)
        self.path.rmdir()


def successful(obj: dict) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Successful" and c.get("status") == "True" for c in conditions)


def one_case(kubeconfig: Path, runner: str, name: str, work: Path) -> str:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    crds.install_crds(api, [crds.kind_crd(KIND)])
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    args = ["--max-concurrent-reconciles=3", f"--runner={runner}"]
    peak_pss = 0.0
    done = threading.Event()
    with contextlib.ExitStack() as cleanup:  # in reverse: nothing left, whatever failed
        cleanup.callback(core.delete_namespace, namespace)
        cgroup = Cgroup()
        cleanup.callback(cgroup.remove)
        operator = start_operator(work / namespace, kubeconfig, namespace, KIND, ROLE, args)
        cleanup.callback(operator.stop)
        cleanup.callback(done.set)

        def sample() -> None:
            nonlocal peak_pss
            while not done.is_set():
                pss = processes.memory_mib(processes.tree(operator.proc.pid))[1]
                peak_pss = max(peak_pss, pss)
                time.sleep(0.05)

        cgroup.join(processes.tree(operator.proc.pid))
        idle_pss = processes.memory_mib(processes.tree(operator.proc.pid))[1]
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        spec = CASES[name]()
        for n in range(3):
            body = {"apiVersion": f"{crds.GROUP}/{crds.VERSION}", "kind": KIND,
                    "metadata": {"name": f"cr-{n}"}, "spec": spec}  # fmt: skip
            custom.create_namespaced_custom_object(
                crds.GROUP, crds.VERSION, namespace, PLURAL, body
            )
        deadline = time.monotonic() + 600
        while True:
            listed: dict = custom.list_namespaced_custom_object(  # type: ignore[assignment]
                crds.GROUP, crds.VERSION, namespace, PLURAL
            )
            if sum(map(successful, listed["items"])) == 3:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"{name}: not every CR Successful within 600 s")
            time.sleep(0.5)
        done.set()
        sampler.join()
        row = f"| {name} | {idle_pss:.0f} | {peak_pss:.0f} | {cgroup.peak_mib():.0f} |"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path, default=Path(os.environ.get("KUBECONFIG", "")))
    parser.add_argument("--runner", choices=["warm", "cold"], default="warm")
    args = parser.parse_args()
    print(f"runner: {args.runner}\n")
    print("| case | PSS idle (MiB) | PSS peak (MiB) | cgroup: peak growth (MiB) |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as work:
        for name in CASES:
            print(one_case(args.kubeconfig, args.runner, name, Path(work)), flush=True)


if __name__ == "__main__":
    main()
