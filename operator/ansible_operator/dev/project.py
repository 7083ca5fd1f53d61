"""The operator project on a cluster for ``dev run``: its CRDs and sample CRs applied, and the
samples watched through the API until each has reached ``Successful``.

kubectl applies the kustomizations (config/crd, config/samples), because kustomize is built into
it; everything read back (CRDs Established, the samples' conditions) is read through the API.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ansible_operator.core import conditions, kstatus
from ansible_operator.kube import ApiError, Discovery, KubeClient, Unreachable

POLL_INTERVAL = 1.0


class ProjectError(Exception):
    """A kustomization cannot be applied or a CRD never becomes Established; one line."""


@dataclass(frozen=True)
class ObjectRef:
    api_version: str
    kind: str
    name: str

    def __str__(self) -> str:
        group = self.api_version.rpartition("/")[0]
        return f"{self.kind.lower()}.{group}/{self.name}" if group else f"{self.kind}/{self.name}"


def objects_of(rendered: str) -> list[ObjectRef]:
    """The objects of a rendered kustomization (``kubectl kustomize`` output)."""
    return [
        ObjectRef(doc["apiVersion"], doc["kind"], doc["metadata"]["name"])
        for doc in yaml.safe_load_all(rendered)
        if isinstance(doc, dict) and doc.get("kind")
    ]


class Kubectl:
    """The dev cluster's kubectl against one kubeconfig; a failure is a ProjectError."""

    def __init__(self, binary: Path, kubeconfig: Path) -> None:
        self.argv = [str(binary), f"--kubeconfig={kubeconfig}"]

    def __call__(self, *args: str) -> str:
        result = subprocess.run(
            [*self.argv, *args], capture_output=True, text=True, timeout=300, check=False
        )
        if result.returncode != 0:
            first = (result.stderr.strip() or result.stdout.strip()).splitlines()[:1]
            raise ProjectError(f"kubectl {' '.join(args)}: {first[0] if first else 'failed'}")
        return result.stdout


async def _get(client: KubeClient, ref: ObjectRef, namespace: str) -> dict[str, Any] | None:
    try:
        resource = await Discovery(client).resource(ref.api_version, ref.kind)
        return dict(await client.get(resource.path(namespace, ref.name)))
    except ApiError as err:
        if err.status == 404:
            return None
        raise


async def existing(client: KubeClient, refs: list[ObjectRef], namespace: str) -> list[ObjectRef]:
    """Those of ``refs`` that exist in ``namespace`` (kinds not served yet count as absent)."""
    return [ref for ref in refs if await _get(client, ref, namespace) is not None]


async def wait_established(client: KubeClient, crds: list[ObjectRef], timeout: float) -> None:
    """Until every CRD of ``crds`` is Established; ProjectError after ``timeout`` seconds."""
    pending = list(crds)
    deadline = time.monotonic() + timeout
    while pending:
        pending = [
            crd
            for crd in pending
            if not conditions.condition_true(await _get(client, crd, "") or {}, "Established")
        ]
        if pending and time.monotonic() > deadline:
            names = ", ".join(crd.name for crd in pending)
            raise ProjectError(f"CRD {names} not Established within {timeout:.0f} s")
        if pending:
            await asyncio.sleep(POLL_INTERVAL)


async def wait_ready(
    client: KubeClient,
    samples: list[ObjectRef],
    namespace: str,
    timeout: float,
    *,
    report: Callable[[str], None],
) -> bool:
    """Until every sample is ready (each reported once, as ``kubectl wait`` does); False after
    ``timeout`` seconds. An unreachable API is retried."""
    pending = list(samples)
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() <= deadline:
        for sample in list(pending):
            try:
                obj = await _get(client, sample, namespace)
            except Unreachable:
                break
            if obj is not None and ready(obj):
                report(f"{sample} condition met")
                pending.remove(sample)
        if pending:
            await asyncio.sleep(POLL_INTERVAL)
    return not pending


def ready(obj: Mapping[str, Any]) -> bool:
    """``Ready=True`` (kstatus's, or the role's own); where kstatus conditions are off (the
    watch's ``kstatusConditions: false``), ``Successful=True``."""
    if conditions.get_condition(obj.get("status"), kstatus.RECONCILING) is None:
        return conditions.condition_true(obj, conditions.SUCCESSFUL)
    return conditions.condition_true(obj, kstatus.READY)
