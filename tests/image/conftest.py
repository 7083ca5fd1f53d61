"""Image fixtures: the repository's image built once per session by `make image` (podman),
the local cluster and a namespace per test (as the e2e layer has them)."""

from __future__ import annotations

import subprocess
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
    # what a user runs: the wheel of this source tree in dist/, then the scaffold's Dockerfile
    subprocess.run(["make", "--no-print-directory", "image", f"IMG={TAG}"], cwd=REPO, check=True)
    return TAG
