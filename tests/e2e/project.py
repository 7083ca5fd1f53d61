"""The repository as an operator project on the local cluster: kubectl with kustomize, the sample
CRs of config/samples, and the operator running the repository's own watches.yaml and roles.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from kubernetes import client, watch

from .crds import install_crds
from .operators import Operator

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "config"


def kubectl(kubeconfig: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """The cluster's own kubectl (kustomize built in); output captured as text."""
    from ansible_operator.devcluster import binaries

    result = subprocess.run(
        [str(binaries.find()["kubectl"]), f"--kubeconfig={kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return result


@dataclass(frozen=True)
class Sample:
    path: Path
    api_version: str
    kind: str
    name: str
    plural: str

    @property
    def group(self) -> str:
        return self.api_version.split("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.split("/")[1]


def crd_plurals() -> dict[tuple[str, str], str]:
    """(group, kind) -> plural, from the CRDs in config/crd/bases."""
    plurals = {}
    for path in sorted((CONFIG / "crd/bases").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        names = crd["spec"]["names"]
        plurals[(crd["spec"]["group"], names["kind"])] = names["plural"]
    return plurals


def samples() -> list[Sample]:
    """The sample CRs config/samples/kustomization.yaml lists."""
    kustomization = yaml.safe_load((CONFIG / "samples/kustomization.yaml").read_text())
    plurals = crd_plurals()
    found = []
    for name in kustomization["resources"]:
        path = CONFIG / "samples" / name
        obj = yaml.safe_load(path.read_text())
        group = obj["apiVersion"].split("/")[0]
        found.append(
            Sample(
                path,
                obj["apiVersion"],
                obj["kind"],
                obj["metadata"]["name"],
                plurals[(group, obj["kind"])],
            )
        )
    return found


def watched_version(sample: Sample) -> str:
    """The version watches.yaml watches the sample's kind at (the operator's metrics are by it;
    a sample of another served version is converted by the API server)."""
    watches = yaml.safe_load((REPO / "watches.yaml").read_text())
    return next(
        w["version"] for w in watches if (w["group"], w["kind"]) == (sample.group, sample.kind)
    )


def install_repo_crds(api_client: client.ApiClient) -> None:
    """The CRDs of config/crd/bases (config/crd's kustomization lists them all)."""
    paths = sorted((CONFIG / "crd/bases").glob("*.yaml"))
    install_crds(api_client, [yaml.safe_load(path.read_text()) for path in paths])


class RepoOperator(Operator):
    """``ansible-operator run`` in the repository's root: its watches.yaml, roles and collections.

    The log goes to a directory of the test's own, not into the repository; TMPDIR is one of its
    own too (the memcached role's once-per-process metrics marker lives there).
    """

    def __init__(self, log_dir: Path, kubeconfig: Path, namespaces: list[str]) -> None:
        super().__init__(
            REPO, kubeconfig, namespaces, log_path=log_dir / "operator.log", own_tmp_dir=True
        )


def successful(obj: dict) -> bool:
    return any(
        c.get("type") == "Successful" and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def wait_all_successful(crs, namespace: str, timeout: float = 300) -> dict[str, dict]:
    """Every sample reconciled successfully (in any order); the objects by kind, as they were
    when seen Successful (a kind with samples at two versions: either)."""
    found = samples()
    refs = [(s.group, s.version, s.plural, s.name) for s in found]
    seen = wait_successful(crs, namespace, refs, timeout=timeout)
    return {sample.kind: obj for sample, obj in zip(found, seen, strict=True)}


def wait_successful(
    crs, namespace: str, refs: list[tuple[str, str, str, str]], timeout: float = 300
) -> list[dict]:
    """Each of ``refs`` (group, version, plural, name) as first seen ``Successful=True``.

    Each is watched, not polled: a kind that requeues every two seconds, or whose dependents'
    changes start its next run at once, is Successful between two runs only for a moment, and a
    poll can miss that moment for minutes; a watch sees every status write. They are waited for
    one after another, each from its state now (a watch's first event lists it), so each wait is
    at most one of its runs once the operator has reached it.
    """
    deadline = time.monotonic() + timeout
    seen = []
    for ref in refs:
        obj = successful_when_watched(crs, namespace, ref, deadline)
        if obj is None:
            raise AssertionError(
                f"timed out after {timeout:.0f}s waiting for Successful=True; not Successful:"
                f" {ref[2]}/{ref[3]} (and those after it: {[r[3] for r in refs[len(seen) + 1 :]]})"
            )
        seen.append(obj)
    return seen


def successful_when_watched(
    crs, namespace: str, ref: tuple[str, str, str, str], deadline: float
) -> dict | None:
    """The object ``ref`` names as a watch first sees it Successful; None past ``deadline``."""
    group, version, plural, name = ref
    while (left := deadline - time.monotonic()) > 0:
        events = watch.Watch().stream(
            crs.list_namespaced_custom_object,
            group,
            version,
            namespace,
            plural,
            field_selector=f"metadata.name={name}",
            timeout_seconds=max(1, min(60, int(left))),
        )
        for event in events:
            if event["type"] in ("ADDED", "MODIFIED") and successful(event["object"]):
                return event["object"]
    return None
