"""The pure parts of the image tooling: image names, the Dockerfile's base, the podman settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_operator.core import split_image
from ansible_operator.devcluster import deploy, image

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("controller", ("controller", "latest")),
        ("controller:0.1.0", ("controller", "0.1.0")),
        ("registry.example.com:5000/team/op", ("registry.example.com:5000/team/op", "latest")),
        ("registry.example.com:5000/team/op:v2", ("registry.example.com:5000/team/op", "v2")),
    ],
)
def test_split_image(name, expected):
    assert split_image(name) == expected


def test_the_base_image_is_the_dockerfiles_from(tmp_path):
    base = image.dockerfile_base(REPO / "Dockerfile")
    assert base == "docker.io/library/python:3.13-slim-trixie"
    assert image.debian_release(base) == "trixie"
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM scratch\n")
    with pytest.raises(image.ImageError, match="no 'ARG PYTHON_IMAGE=<base image>' line"):
        image.dockerfile_base(bad)


@pytest.mark.parametrize(
    "tag",
    [
        "docker.io/library/python:3.12-slim-trixie",  # the official image has it; Debian has not
        "docker.io/library/python:3.11-slim-bookworm",
        "python:3.13-slim",
        "python:latest",
    ],
)
def test_a_base_debian_cannot_make_is_refused_in_one_line(tag):
    with pytest.raises(image.ImageError) as refused:
        image.debian_release(tag)
    assert str(refused.value) == (
        f"no base image {tag} here, and Debian's packages make only "
        "docker.io/library/python:3.13-slim-trixie: pull it, or build with "
        "--build-arg PYTHON_IMAGE=docker.io/library/python:3.13-slim-trixie"
    )


def test_podman_settings_are_private_and_runc(tmp_path):
    env = image.Podman(tmp_path / "podman").environ()
    storage = Path(env["CONTAINERS_STORAGE_CONF"]).read_text()
    containers = Path(env["CONTAINERS_CONF"]).read_text()
    assert f'graphroot = "{tmp_path / "podman" / "graphroot"}"' in storage
    assert 'runtime = "runc"' in containers
    assert 'netns = "host"' in containers
    assert "nproc=32768:32768" in containers


def test_missing_tools_are_named_when_they_cannot_be_installed(monkeypatch):
    monkeypatch.setattr(image.os, "geteuid", lambda: 1000)
    with pytest.raises(image.ImageError, match=r"^podman, mmdebstrap not found: install them"):
        image.ensure_tools(which=lambda tool: None if tool in ("podman", "mmdebstrap") else tool)


def test_a_bad_build_arg_is_refused_in_one_line(capsys):
    from ansible_operator import cli

    assert cli.main(["dev-image", "build", "--build-arg", "NOEQUALS"]) == 1
    assert "'NOEQUALS' is not KEY=VALUE" in capsys.readouterr().err


def test_an_unknown_config_is_refused_in_one_line(tmp_path):
    with pytest.raises(deploy.DeployError, match=r"config/nope is not a kustomization"):
        deploy.render(Path("/bin/true"), tmp_path, "reg/op:1", "nope")
