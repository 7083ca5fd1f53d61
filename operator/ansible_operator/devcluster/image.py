"""The operator image, built and run on this machine without a Docker engine.

podman builds it with the ``runc`` runtime (crun refuses a host with mixed cgroup versions) in a
store of its own under the user's cache (never ``/var/lib/containers``), on the host's network.
No registry is reachable, so the Dockerfile's base image is made once from Debian's mirror with
``mmdebstrap`` and tagged with the Dockerfile's ``FROM`` name: the Dockerfile stays as a user
writes it for a registry, and ``--pull=never`` makes podman take the local tag. The stand-in is
the Debian release the tag names (``python:3.13-slim-trixie``: trixie) with that release's
Python, so only a tag whose Python is the release's own can be made.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ansible_operator.devcluster.binaries import cache_root

TOOLS = ("podman", "runc", "mmdebstrap")
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
# What the stand-in base image holds: the official python image's essentials, from Debian.
BASE_PACKAGES = ("python3", "python3-venv", "python-is-python3", "ca-certificates")
NPROC_LIMIT = 32768  # root podman may not raise RLIMIT_NPROC above this here
# The Python of each Debian release a stand-in can be made of (`python3` there).
DEBIAN_PYTHON = {"trixie": "3.13"}

Progress = Callable[[str], None]


class ImageError(Exception):
    """A missing tool or a failed step; the message says which and what to do."""


def _no_progress(_: str) -> None:
    pass


def ensure_tools(progress: Progress = _no_progress, which: Callable = shutil.which) -> None:
    """Install podman, runc and mmdebstrap from Debian's packages if any is missing (as root)."""
    missing = [tool for tool in TOOLS if which(tool) is None]
    if not missing:
        return
    packages = " ".join(TOOLS)
    if os.geteuid() != 0 or which("apt-get") is None:
        raise ImageError(
            f"{', '.join(missing)} not found: install them (apt-get install {packages})"
        )
    progress(f"installing {packages} from Debian's packages")
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *TOOLS]):
        done = subprocess.run(
            argv,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise ImageError(f"{' '.join(argv)} failed: {last}")


def dockerfile_base(dockerfile: Path) -> str:
    """The default of the Dockerfile's ``PYTHON_IMAGE`` build argument: its base image."""
    match = re.search(r"^ARG PYTHON_IMAGE=(\S+)", dockerfile.read_text(), re.M)
    if match is None:
        raise ImageError(f"{dockerfile}: no 'ARG PYTHON_IMAGE=<base image>' line")
    return match.group(1)


@dataclass(frozen=True)
class Podman:
    """podman with a private store and this machine's settings, for every call."""

    home: Path

    @classmethod
    def default(cls) -> Podman:
        return cls(cache_root() / "podman")

    def environ(self) -> dict[str, str]:
        self.home.mkdir(parents=True, exist_ok=True)
        storage, containers = self.home / "storage.conf", self.home / "containers.conf"
        storage.write_text(
            "[storage]\n"
            'driver = "overlay"\n'
            f'runroot = "{self.home / "runroot"}"\n'
            f'graphroot = "{self.home / "graphroot"}"\n'
        )
        containers.write_text(
            "[containers]\n"
            f"default_ulimits = [{', '.join(f'{chr(34)}{u}{chr(34)}' for u in ulimits())}]\n"
            'netns = "host"\n'
            "[engine]\n"
            'runtime = "runc"\n'
            'cgroup_manager = "cgroupfs"\n'
            'events_logger = "file"\n'
        )
        return {
            **os.environ,
            "CONTAINERS_STORAGE_CONF": str(storage),
            "CONTAINERS_CONF": str(containers),
        }

    def argv(self, *args: str) -> list[str]:
        return ["podman", *args]

    def run(
        self, *args: str, check: bool = True, stdin: int | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            self.argv(*args), env=self.environ(), capture_output=True, text=True, stdin=stdin
        )
        if check and done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise ImageError(f"podman {args[0]} failed: {last}")
        return done

    def exists(self, image: str) -> bool:
        return self.run("image", "exists", image, check=False).returncode == 0


def ulimits() -> list[str]:
    """The open-files and process limits podman may set here (it asks for more by default)."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nofile = 1048576 if nofile == resource.RLIM_INFINITY else nofile
    return [f"nofile={nofile}:{nofile}", f"nproc={NPROC_LIMIT}:{NPROC_LIMIT}"]


def debian_release(tag: str) -> str:
    """The Debian release whose packages stand in for the official python image ``tag``
    (``docker.io/library/python:3.13-slim-trixie``: trixie); refused in one line when the tag
    names no such release, or a Python other than the release's own."""
    version, _, variant = tag.rpartition(":")[2].partition("-")
    release = variant.rpartition("-")[2]
    if DEBIAN_PYTHON.get(release) != version:
        known = [f"docker.io/library/python:{py}-slim-{name}" for name, py in DEBIAN_PYTHON.items()]
        raise ImageError(
            f"no base image {tag} here, and Debian's packages make only {', '.join(known)}: "
            f"pull it, or build with --build-arg PYTHON_IMAGE={known[-1]}"
        )
    return release


def ensure_base(podman: Podman, tag: str, progress: Progress = _no_progress) -> None:
    """Make ``tag`` from Debian's mirror with mmdebstrap, unless the store has it already."""
    if podman.exists(tag):
        return
    release = debian_release(tag)
    progress(f"making the base image {tag} from Debian {release} (mmdebstrap, 1-3 minutes)")
    debstrap = subprocess.Popen(
        [
            "mmdebstrap",
            "--variant=minbase",
            f"--include={','.join(BASE_PACKAGES)}",
            "--aptopt=APT::Install-Recommends false",
            "--quiet",
            release,
            "-",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert debstrap.stdout is not None
    imported = podman.run(
        "import",
        "--change",
        'CMD ["/bin/bash"]',
        "-",
        tag,
        stdin=debstrap.stdout.fileno(),
        check=False,
    )
    _, stderr = debstrap.communicate()
    if debstrap.returncode != 0:
        podman.run("rmi", "--force", tag, check=False)
        last = (stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        raise ImageError(f"mmdebstrap failed: {last}")
    if imported.returncode != 0:
        raise ImageError(f"podman import failed: {imported.stderr.strip()}")


def build(
    podman: Podman,
    context: Path,
    tag: str,
    build_args: Mapping[str, str] | None = None,
    progress: Progress = _no_progress,
    file: str = "Dockerfile",
) -> float:
    """Build ``file`` (in ``context``) as ``tag``; the seconds it took. An image FROM scratch
    (the OLM bundle's bundle.Dockerfile) needs no base image."""
    dockerfile = context / file
    if not dockerfile.is_file():
        raise ImageError(f"{dockerfile}: no such file")
    if not re.search(r"^FROM scratch\s*$", dockerfile.read_text(), re.M):
        base = (build_args or {}).get("PYTHON_IMAGE") or dockerfile_base(dockerfile)
        ensure_base(podman, base, progress)
    argv = ["build", "--pull=never", "--network=host", "--tag", tag, "--file", str(dockerfile)]
    for limit in ulimits():
        argv += ["--ulimit", limit]
    if CA_BUNDLE.exists():  # pip inside a RUN step trusts what the host trusts; not kept
        argv += ["--volume", f"{CA_BUNDLE}:{CA_BUNDLE}:ro"]
    for key, value in (build_args or {}).items():
        argv += ["--build-arg", f"{key}={value}"]
    progress(f"building {tag} from {dockerfile}")
    started = time.monotonic()
    done = subprocess.run(
        podman.argv(*argv, str(context)), env=podman.environ(), capture_output=True, text=True
    )
    if done.returncode != 0:
        tail = "\n".join(
            done.stdout.strip().splitlines()[-15:] + done.stderr.strip().splitlines()[-5:]
        )
        raise ImageError(f"podman build failed:\n{tail}")
    return time.monotonic() - started


def size_bytes(podman: Podman, tag: str) -> int:
    return int(podman.run("image", "inspect", "--format", "{{.Size}}", tag).stdout.strip())


def passthrough(podman: Podman, args: Sequence[str]) -> int:
    """Run podman with this store and settings, its output as it comes (``dev-image podman``)."""
    return subprocess.run(podman.argv(*args), env=podman.environ()).returncode
