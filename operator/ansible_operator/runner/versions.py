"""Which ansible-core and ansible-runner the runs use, and whether that ansible-core is supported.

The answer comes from the executables a run starts (`ansible-runner` and the `ansible-playbook`
it finds on the run's PATH), each asked with `--version`, not from what this Python can import:
the two differ when the operator and Ansible live in different environments. The operator asks
once at start and refuses an ansible-core older than `MINIMUM_CORE`, or one that cannot find
the collections every operator's roles need (`REQUIRED_COLLECTIONS`), in one line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from ansible_operator.runner.process import run_path
from ansible_operator.runner.types import RunnerError

MINIMUM_CORE = (2, 18)
SUPPORTED_RANGE = "ansible-core 2.18 or newer (2.18 is the default, as upstream's image)"

_CORE_VERSION = re.compile(r"\[core (\d+)\.(\d+)\.(\S+)\]")  # ansible-playbook [core 2.18.6]
_RUNNER_VERSION = re.compile(r"^(\d+\.\d+\S*)\s*$", re.MULTILINE)
_PROBE_TIMEOUT = 60.0
# The roles reach the API server through kubernetes.core's modules (upstream's image has it too).
REQUIRED_COLLECTIONS = ("kubernetes.core",)


class UnsupportedAnsible(RunnerError):
    """The installed ansible-core is outside the supported range, or cannot be asked."""


@dataclass(frozen=True)
class AnsibleVersions:
    """The versions a run uses (`core` as `2.18.6`, `runner` as `2.4.1`) and the
    `ansible-playbook` that said which ansible-core it is."""

    core: str
    runner: str
    playbook: str

    @property
    def core_release(self) -> tuple[int, int]:
        major, minor, *_ = self.core.split(".")
        return int(major), int(minor)


def find_ansible_playbook(runner_executable: str, env: Mapping[str, str]) -> str | None:
    """The `ansible-playbook` a run of `runner_executable` starts: the first on the run's PATH."""
    return shutil.which("ansible-playbook", path=run_path(runner_executable, env.get("PATH", "")))


def parse_core_version(output: str) -> str | None:
    """`2.18.6` from `ansible-playbook --version` output (`ansible-playbook [core 2.18.6]`)."""
    match = _CORE_VERSION.search(output)
    return ".".join(match.groups()) if match else None


def parse_runner_version(output: str) -> str | None:
    """`2.4.1` from `ansible-runner --version` output (the version alone on a line)."""
    match = _RUNNER_VERSION.search(output)
    return match.group(1) if match else None


def check_supported(versions: AnsibleVersions) -> None:
    """Refuse an ansible-core older than `MINIMUM_CORE`, in one line."""
    if versions.core_release < MINIMUM_CORE:
        raise UnsupportedAnsible(
            f"ansible-core {versions.core} (of {versions.playbook}) is not supported: "
            f"install {SUPPORTED_RANGE}"
        )


def parse_collections(output: str) -> set[str]:
    """The collection names in `ansible-galaxy collection list --format json` output."""
    try:
        listed = json.loads(output or "{}")
    except ValueError:
        return set()
    if not isinstance(listed, dict):
        return set()
    return {name for found in listed.values() if isinstance(found, dict) for name in found}


def check_collections(versions: AnsibleVersions, env: Mapping[str, str] | None = None) -> None:
    """Refuse, in one line, an Ansible that cannot find one of `REQUIRED_COLLECTIONS`: every run
    would fail with "couldn't resolve module" otherwise."""
    environ = dict(os.environ if env is None else env)
    galaxy = os.path.join(os.path.dirname(versions.playbook), "ansible-galaxy")
    for name in REQUIRED_COLLECTIONS:
        listed = _output([galaxy, "collection", "list", name, "--format", "json"], environ)
        if name not in parse_collections(listed):
            where = environ.get("ANSIBLE_COLLECTIONS_PATH") or "its default paths"
            raise UnsupportedAnsible(
                f"the Ansible collection {name} is not installed where {galaxy} looks "
                f"({where} and Python's site-packages): install it (it comes with the "
                f"`ansible` package, or: ansible-galaxy collection install {name})"
            )


def probe(runner_executable: str, env: Mapping[str, str] | None = None) -> AnsibleVersions:
    """Ask the executables a run of `runner_executable` uses for their versions."""
    environ = dict(os.environ if env is None else env)
    playbook = find_ansible_playbook(runner_executable, environ)
    if playbook is None:
        raise UnsupportedAnsible(
            f"ansible-playbook not found beside {runner_executable} nor on PATH; "
            f"install {SUPPORTED_RANGE}"
        )
    core = parse_core_version(_output([playbook, "--version"], environ))
    if core is None:
        raise UnsupportedAnsible(f"{playbook} --version does not name an ansible-core version")
    runner = parse_runner_version(_output([runner_executable, "--version"], environ))
    if runner is None:
        raise UnsupportedAnsible(f"{runner_executable} --version does not name a version")
    return AnsibleVersions(core=core, runner=runner, playbook=playbook)


def _output(command: list[str], env: Mapping[str, str]) -> str:
    try:
        done = subprocess.run(
            command,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise UnsupportedAnsible(f"cannot run {' '.join(command)}: {err}") from None
    return done.stdout
