"""Fixtures for tests that really run ansible-runner on this machine (no cluster needed).

Every run gets its own private data dir under pytest's tmp_path, the repo's operator_sdk.util
collection on ANSIBLE_COLLECTIONS_PATH, and a tag in its environment (RUNNER_TEST_TAG) so a test
can find the processes a run started by reading /proc, independently of the runner's own marker.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ansible_operator.runner import ColdRunner, RunRequest, new_ident

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
PLAYBOOKS = DATA / "playbooks"
ROLES = DATA / "roles"
COLLECTIONS = REPO / "collections"
TAG_ENV = "RUNNER_TEST_TAG"


@dataclass(frozen=True)
class Proc:
    pid: int
    pgid: int
    sid: int
    cmdline: str


def tagged_processes(tag: str) -> list[Proc]:
    """Live processes whose environment has RUNNER_TEST_TAG=<tag> (zombies excluded)."""
    entry = f"\0{TAG_ENV}={tag}\0".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        base = Path("/proc") / name
        try:
            if entry not in b"\0" + (base / "environ").read_bytes() + b"\0":
                continue
            stat = (base / "stat").read_text()
            cmdline = (base / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] in ("Z", "X"):
            continue
        found.append(Proc(int(name), int(fields[2]), int(fields[3]), cmdline))
    return found


def live_group_members(pgid: int) -> list[int]:
    """Processes of group `pgid` that still run, i.e. are not zombies.

    `os.killpg(pgid, 0)` would also count zombies, which stay until init reaps them (late here,
    never in a container whose PID 1 does not reap); they run nothing, so they do not count.
    """
    members = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = (Path("/proc") / name / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(int(name))
    return members


@pytest.fixture
def runner() -> ColdRunner:
    return ColdRunner(kill_grace=2.0)


MakeRequest = Callable[..., RunRequest]


@pytest.fixture
def make_request(tmp_path: Path) -> MakeRequest:
    """Build a RunRequest with test defaults; keyword arguments override any field."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("# not used by these tests\n")
    pdd = tmp_path / "runner" / "example.com" / "v1" / "Thing" / "ns" / "thing-1"

    def make(**overrides: Any) -> RunRequest:
        extra_env = {
            "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS),
            TAG_ENV: uuid.uuid4().hex,
            **overrides.pop("extra_env", {}),
        }
        fields: dict[str, Any] = {
            "ident": new_ident(),
            "private_data_dir": pdd,
            "extravars": {},
            "kubeconfig": str(kubeconfig),
            "extra_env": extra_env,
        }
        fields.update(overrides)
        return RunRequest(**fields)

    return make
