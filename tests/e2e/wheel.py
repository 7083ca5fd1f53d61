"""The package as a user gets it: the wheel built from this repository, installed into a fresh
virtualenv (no system site-packages), and a clean environment to run its tools in."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    assert proc.returncode == 0, f"{argv}: {proc.returncode}\n{proc.stdout[-5000:]}{proc.stderr}"
    return proc


def wheel_venv(tmp_path_factory: pytest.TempPathFactory, work: Path, extras: str = "") -> Path:
    """A fresh virtualenv in `work` with only the session's wheel (`[extras]` too) installed."""
    wheel = session_wheel(tmp_path_factory)
    requirement = f"{wheel}[{extras}]" if extras else str(wheel)
    run([sys.executable, "-m", "venv", str(work / "venv")], timeout=300)
    # uv, beside this Python (dev.mk installs it): the same wheel and dependencies as pip's, in
    # seconds rather than minutes.
    uv = Path(sys.executable).parent / "uv"
    run(
        [
            str(uv),
            "pip",
            "install",
            "--quiet",
            "--python",
            str(work / "venv/bin/python"),
            requirement,
        ],
        timeout=1800,
    )
    return work / "venv"


def session_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this repository, once per session: the first xdist worker to ask
    builds it under a lock while the others wait, in the temporary root they share (the
    session's own when it runs without workers)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # each worker's is a directory of the session's
    work = base / "wheel"
    with open(base / "wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = list((work / "dist").glob("*.whl"))
        if not built:
            shutil.rmtree(work, ignore_errors=True)  # a build a failed test left half done
            work.mkdir()
            built = [build_wheel(work)]
    return built[0]


def build_wheel(work: Path) -> Path:
    """The sdist, then the wheel from it (the wheel holds only what the sdist carries), built
    in `work` from a copy of the sources the build needs (as the Dockerfile copies them),
    without the egg-info an editable install leaves: its SOURCES.txt would add files the
    package data may lack."""
    shutil.copy(REPO / "pyproject.toml", work / "pyproject.toml")
    leftovers = shutil.ignore_patterns("*.egg-info", "__pycache__")
    shutil.copytree(REPO / "operator", work / "operator", ignore=leftovers)
    run([sys.executable, "-m", "build", "--outdir", str(work / "dist"), str(work)], timeout=900)
    (wheel,) = (work / "dist").glob("*.whl")
    return wheel


def user_env(venv: Path, home: Path) -> dict[str, str]:
    """Only the virtualenv's tools and the system's, a private HOME, no ANSIBLE_* variable."""
    return {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "ANSIBLE_NOCOLOR": "1",
    }
