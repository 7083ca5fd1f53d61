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

from ansible_operator.core import split_image

from .components import KWOK_NODE


class DeployError(Exception):
    """kubectl refused; the message is its last line."""


def render(
    kubectl: Path, project: Path, image: str, config: str = "default", also: tuple[str, ...] = ()
) -> str:
    """The manifests of ``config/<config>`` with the manager's image set to ``image``; with
    ``also`` (``prometheus``, ``network-policy``), those kustomizations of ``config/`` too, as if
    ``config/<config>`` listed them in its resources (its namespace, name prefix and labels)."""
    name, tag = split_image(image)
    directory = _kustomization(project, config)
    parts = [_kustomization(project, part) for part in also]
    images = [{"name": "controller", "newName": name, "newTag": tag}]
    with tempfile.TemporaryDirectory(prefix="ansible-operator-deploy.") as tmp:
        if parts:
            overlay = _rebased(directory, Path(tmp))
            overlay["resources"] = [
                *overlay.get("resources", []),
                *(os.path.relpath(part.resolve(), tmp) for part in parts),
            ]
            overlay["images"] = [*overlay.get("images", []), *images]
            # Its files (patches, single objects) lie outside the overlay's directory.
            options = ["--load-restrictor=LoadRestrictionsNone"]
        else:
            base = os.path.relpath(directory.resolve(), tmp)  # no absolute
            overlay, options = {"resources": [base], "images": images}, []
        (Path(tmp) / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
        return _kubectl(kubectl, None, "kustomize", *options, tmp)


def _kustomization(project: Path, config: str) -> Path:
    directory = project / "config" / config
    if "/" in config or not (directory / "kustomization.yaml").is_file():
        raise DeployError(f"{directory} is not a kustomization of config/ (default, ha, ...)")
    return directory


_PATH_LISTS = ("resources", "components", "crds", "configurations", "patchesStrategicMerge")
_PATH_ITEMS = ("patches", "patchesJson6902", "replacements")  # items with a `path`


def _rebased(directory: Path, new_home: Path) -> dict:
    """``directory``'s kustomization with each path in it relative to ``new_home``."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text()) or {}

    def rebase(path: str) -> str:
        if "://" in path or "\n" in path:  # a URL, or an inline patch
            return path
        return os.path.relpath((directory / path).resolve(), new_home)

    for key in _PATH_LISTS:
        if key in kustomization:
            kustomization[key] = [rebase(item) for item in kustomization[key]]
    for key in _PATH_ITEMS:
        for item in kustomization.get(key) or []:
            if isinstance(item, dict) and "path" in item:
                item["path"] = rebase(item["path"])
    return dict(kustomization)


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
