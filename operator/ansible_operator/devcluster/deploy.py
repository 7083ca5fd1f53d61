"""``make deploy`` / ``make undeploy``: ``config/default`` (or another kustomization of
``config/``, such as ``ha``) with the image named, through kubectl.

kustomize's ``images`` transformer sets the image in an overlay written to a temporary directory,
so ``config/manager/kustomization.yaml`` is not edited (``kustomize edit set image`` would need
the kustomize binary and leave the change in the tree).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import yaml

from .components import KWOK_NODE


class DeployError(Exception):
    """kubectl refused; the message is its last line."""


def split_image(image: str) -> tuple[str, str]:
    """``registry:5000/name:tag`` → (``registry:5000/name``, ``tag``); no tag means ``latest``."""
    name, _, tag = image.rpartition(":")
    if not name or "/" in tag:  # no tag: the colon, if any, belonged to a registry port
        return image, "latest"
    return name, tag


def render(kubectl: Path, project: Path, image: str, config: str = "default") -> str:
    """The manifests of ``config/<config>`` with the manager's image set to ``image``."""
    name, tag = split_image(image)
    directory = project / "config" / config
    if "/" in config or not (directory / "kustomization.yaml").is_file():
        raise DeployError(f"{directory} is not a kustomization of config/ (default, ha, ...)")
    with tempfile.TemporaryDirectory(prefix="ansible-operator-deploy.") as tmp:
        base = os.path.relpath(directory.resolve(), tmp)  # no absolute
        overlay = {
            "resources": [base],
            "images": [{"name": "controller", "newName": name, "newTag": tag}],
        }
        (Path(tmp) / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
        return _kubectl(kubectl, None, "kustomize", tmp)


def apply(kubectl: Path, kubeconfig: Path | None, manifests: str) -> str:
    return _kubectl(kubectl, kubeconfig, "apply", "-f", "-", stdin=manifests)


def delete(kubectl: Path, kubeconfig: Path | None, manifests: str) -> str:
    return _kubectl(
        kubectl,
        kubeconfig,
        "delete",
        "--ignore-not-found",
        "--wait=false",
        "-f",
        "-",
        stdin=manifests,
    )


def no_container_runs(kubectl: Path, kubeconfig: Path | None) -> bool:
    """Whether every Node of the cluster is kwok's (the local cluster's): Pods are reported
    Running there, but no container runs. False when the Nodes may not be listed (rights in a
    namespace only): nothing is known then, and the deploy itself has succeeded."""
    try:
        listed = _kubectl(kubectl, kubeconfig, "get", "nodes", "-o", "json")
    except DeployError:
        return False
    nodes = json.loads(listed)["items"]
    return bool(nodes) and all(
        (node["metadata"].get("annotations") or {}).get(KWOK_NODE) == "fake" for node in nodes
    )


def _kubectl(kubectl: Path, kubeconfig: Path | None, *args: str, stdin: str | None = None) -> str:
    argv = [str(kubectl), *([f"--kubeconfig={kubeconfig}"] if kubeconfig else []), *args]
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise DeployError(f"kubectl {args[0]}: {last}")
    return done.stdout
