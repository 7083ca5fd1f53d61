"""The repository's sample CRs (``config/samples``), created as a user's ``kubectl apply`` would."""

from __future__ import annotations

from pathlib import Path

import yaml
from kubernetes import client

from ansible_operator.gocompat import pluralize

REPO = Path(__file__).resolve().parents[2]
SAMPLES = sorted((REPO / "config" / "samples").glob("*_*.yaml"))


def apply_samples(cluster, namespace: str, samples: list[Path]) -> list[tuple[str, str, str, str]]:
    """Create each sample in ``namespace``; their (group, version, plural, name)."""
    applied = []
    with cluster.api_client() as api_client:
        crs = client.CustomObjectsApi(api_client)
        for path in samples:
            cr = yaml.safe_load(path.read_text())
            group, version = cr["apiVersion"].split("/")
            plural = pluralize(cr["kind"])  # Prometheus: prometheuses
            crs.create_namespaced_custom_object(group, version, namespace, plural, cr)
            applied.append((group, version, plural, cr["metadata"]["name"]))
    return applied
