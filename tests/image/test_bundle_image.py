"""`make bundle-build`: the OLM bundle image, built with podman from a new project's
bundle.Dockerfile. It is FROM scratch (files and labels only, no base image to make), so the
test is cheap: the labels are the bundle's annotations, and the image holds manifests/,
metadata/ and tests/scorecard/ at its root, as OLM unpacks it."""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

import yaml

from ansible_operator.devcluster import image
from tests.new_project import make, new_project

BIN = Path(sys.executable).parent
TAG = "localhost/greeter-bundle:image-test"


def test_make_bundle_build(tmp_path, monkeypatch, podman: image.Podman):
    project = new_project(
        tmp_path, monkeypatch, "greeter-operator", "hello", "v1alpha1", "Greeting"
    )
    make(project, "bundle", "VERSION=0.1.0")
    make(project, "bundle-build", f"BUNDLE_IMG={TAG}")

    (inspected,) = json.loads(podman.run("image", "inspect", TAG).stdout)
    annotations = yaml.safe_load((project / "bundle/metadata/annotations.yaml").read_text())
    labels = inspected["Config"]["Labels"]  # with podman's own io.buildah.version
    assert annotations["annotations"].items() <= labels.items()
    container = podman.run("create", TAG, "none").stdout.strip()
    try:
        podman.run("export", "--output", str(tmp_path / "image.tar"), container)
    finally:
        podman.run("rm", container)
    with tarfile.open(tmp_path / "image.tar") as tar:
        files = sorted(m.name.lstrip("/") for m in tar.getmembers() if m.isfile())
    made = project / "bundle"
    expected = sorted(str(p.relative_to(made)) for p in made.rglob("*") if p.is_file())
    assert files == expected
    podman.run("rmi", TAG)
