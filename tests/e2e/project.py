"""The repository as an operator project on the local cluster: kubectl with kustomize, the sample
CRs of config/samples, and the operator running the repository's own watches.yaml and roles.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from .crds import install_crds
from .operators import Operator
from .waiting import wait_until

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
    """Every sample reconciled successfully (in any order); the objects by kind (a kind with
    samples at two versions: either)."""
    pending = {(s.kind, s.name): s for s in samples()}
    done: dict[str, dict] = {}

    def probe() -> bool:
        for key, sample in list(pending.items()):
            try:
                obj = crs.get_namespaced_custom_object(
                    sample.group, sample.version, namespace, sample.plural, sample.name
                )
            except ApiException as err:
                if err.status == 404:
                    continue
                raise
            if successful(obj):
                done[sample.kind] = obj
                del pending[key]
        return not pending

    try:
        wait_until(probe, what="Successful=True on every sample", timeout=timeout)
    except AssertionError as err:
        raise AssertionError(f"{err}; not Successful: {sorted(pending)}") from None
    return done
