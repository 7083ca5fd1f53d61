"""What the runner tests share besides fixtures: where their playbooks and roles are, and the
processes a run leaves, read from /proc (a tag in each run's environment finds them).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ansible_operator.procfs import fields_after_name
from ansible_operator.runner import RunRequest

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
PLAYBOOKS = DATA / "playbooks"
ROLES = DATA / "roles"
TAG_ENV = "RUNNER_TEST_TAG"


@dataclass(frozen=True)
class Proc:
    pid: int
    pgid: int
    sid: int
    cmdline: str


def tagged_processes(tag: str, env: str = TAG_ENV) -> list[Proc]:
    """Live processes whose environment has <env>=<tag> (zombies excluded)."""
    entry = f"\0{env}={tag}\0".encode()
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
        fields = fields_after_name(stat)
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
        fields = fields_after_name(stat)
        if fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(int(name))
    return members


MakeRequest = Callable[..., RunRequest]
