"""Image fixtures: the repository's Dockerfile built once per session with podman (no Docker),
the local cluster and a namespace per test (as the e2e layer has them)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ansible_operator.devcluster import image
from tests.e2e.cluster import cluster, namespace  # fixtures, used by name

REPO = Path(__file__).resolve().parents[2]
TAG = "localhost/ansible-operator:image-test"


@pytest.fixture(scope="session")
def podman() -> image.Podman:
    def progress(message: str) -> None:
        print(f"[image] {message}", file=sys.stderr)

    image.ensure_tools(progress)
    return image.Podman.default()


@pytest.fixture(scope="session")
def built_image(podman: image.Podman) -> str:
    image.build(podman, REPO, TAG, progress=lambda m: print(f"[image] {m}", file=sys.stderr))
    return TAG
