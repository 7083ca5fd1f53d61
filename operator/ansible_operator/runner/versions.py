"""Which ansible-core and ansible-runner the runs use, and whether that ansible-core is supported.

The answer comes from the executables a run starts (`ansible-runner` and the `ansible-playbook`
it finds on the run's PATH), each asked with `--version`, not from what this Python can import:
the two differ when the operator and Ansible live in different environments. The operator asks
once at start and refuses an ansible-core older than `MINIMUM_CORE`, or one that cannot find
the collections every operator's roles need (`REQUIRED_COLLECTIONS`), in one line. The same
start asks that ansible-core, through the interpreter of its `ansible-playbook`, for the names it
gives a meaning of its own (magic variables, play keywords, template globals): a spec key that
shadows one is worth a warning; and, on ansible-core 2.21 and later, whether its local RPC server
can start (`check_rpc_socket`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass

from ansible_operator.core import ansible_cores
from ansible_operator.runner.process import run_path
from ansible_operator.runner.types import RunnerError

MINIMUM_CORE = ansible_cores.CORES[0].release
SUPPORTED_RANGE = ansible_cores.supported_range()

_CORE_VERSION = re.compile(r"\[core (\d+)\.(\d+)\.(\S+)\]")  # ansible-playbook [core 2.18.6]
_RUNNER_VERSION = re.compile(r"^(\d+\.\d+\S*)\s*$", re.MULTILINE)
_PROBE_TIMEOUT = 60.0
# The roles reach the API server through kubernetes.core's modules (upstream's image has it too).
REQUIRED_COLLECTIONS = ("kubernetes.core",)
# ansible-core's own lists, not a copy: play keywords and template globals (`get_reserved_names`)
# and the magic variables it sets itself (`INTERNAL_STATIC_VARS`).
_NAMES_PROGRAM = (
    "import json\n"
    "from ansible.constants import INTERNAL_STATIC_VARS\n"
    "from ansible.vars.reserved import get_reserved_names\n"
    "print(json.dumps(sorted(set(get_reserved_names()) | set(INTERNAL_STATIC_VARS))))\n"
)
# ansible-core 2.21 and later start a local RPC server in every ansible-playbook: a
# multiprocessing manager listening on a Unix socket under the temporary directory
# (<TMPDIR>/pymp-XXXXXXXX/listener-XXXXXXXX). When it cannot listen (a TMPDIR too long for a
# socket's path, a sandbox without Unix sockets), every run fails after 5 s with "Local RPC server
# did not start" and not the reason (ansible/ansible#87031). The same listener made here says why.
_RPC_SOCKET_PROGRAM = (
    "import importlib.util, json, tempfile\n"
    "from multiprocessing.connection import Listener\n"
    "if importlib.util.find_spec('ansible._internal._rpc_host'):\n"
    "    try:\n"
    "        Listener(backlog=128).close()\n"
    "    except OSError as err:\n"
    "        print(json.dumps({'error': str(err), 'tmpdir': tempfile.gettempdir()}))\n"
)
_SOCKET_PATH_MAX = 107  # a Unix socket's path on Linux: sun_path's 108 bytes, less the NUL
RPC_TMPDIR_MAX = _SOCKET_PATH_MAX - len("/pymp-XXXXXXXX/listener-XXXXXXXX")
"""The longest temporary directory under which ansible-core 2.21's RPC socket fits."""


class UnsupportedAnsible(RunnerError):
    """The installed ansible-core is outside the supported range, or cannot be asked."""


@dataclass(frozen=True)
class AnsibleVersions:
    """The versions a run uses (`core` as `2.18.6`, `runner` as `2.4.1`) and the
    `ansible-playbook` that said which ansible-core it is."""

    core: str
    runner: str
    playbook: str
    # The names ansible-core gives a meaning of its own; None when it could not be asked.
    ansible_names: frozenset[str] | None = None
    names_problem: str = ""  # why ansible_names is None

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
    galaxy = _galaxy(versions.playbook)
    _check_listed(galaxy, _outputs(_collection_lists(galaxy), environ), environ)


def _galaxy(playbook: str) -> str:
    return os.path.join(os.path.dirname(playbook), "ansible-galaxy")


def _collection_lists(galaxy: str) -> list[list[str]]:
    return [
        [galaxy, "collection", "list", name, "--format", "json"] for name in REQUIRED_COLLECTIONS
    ]


def _check_listed(
    galaxy: str, listed: list[str | UnsupportedAnsible], environ: Mapping[str, str]
) -> None:
    for name, output in zip(REQUIRED_COLLECTIONS, listed, strict=True):
        if name not in parse_collections(_text(output)):
            where = environ.get("ANSIBLE_COLLECTIONS_PATH") or "its default paths"
            raise UnsupportedAnsible(
                f"the Ansible collection {name} is not installed where {galaxy} looks "
                f"({where} and Python's site-packages): install it (it comes with the "
                f"`ansible` package, or: ansible-galaxy collection install {name})"
            )


def probe(runner_executable: str, env: Mapping[str, str] | None = None) -> AnsibleVersions:
    """Ask the executables a run of `runner_executable` uses for their versions."""
    environ = dict(os.environ if env is None else env)
    playbook = _find_playbook(runner_executable, environ)
    return _versions(
        runner_executable, playbook, _outputs(_version_asks(runner_executable, playbook), environ)
    )


def probe_checked(runner_executable: str, env: Mapping[str, str] | None = None) -> AnsibleVersions:
    """`probe`, `check_supported` and `check_collections` in one: the executables are asked side
    by side, so an operator's start waits for the slowest of them, not for their sum."""
    environ = dict(os.environ if env is None else env)
    playbook = _find_playbook(runner_executable, environ)
    galaxy = _galaxy(playbook)
    asks = _version_asks(runner_executable, playbook)
    lists = _collection_lists(galaxy)
    python = script_interpreter(playbook) or ["python3"]  # the interpreter of the runs' Ansible
    programs = [[*python, "-c", _RPC_SOCKET_PROGRAM], [*python, "-c", _NAMES_PROGRAM]]
    outputs = _outputs([*asks, *lists, *programs], environ)
    found = _versions(runner_executable, playbook, outputs[: len(asks)])
    check_supported(found)
    _check_listed(galaxy, outputs[len(asks) : len(asks) + len(lists)], environ)
    check_rpc_socket(found, outputs[-2])
    names, problem = parse_ansible_names(outputs[-1])
    return dataclasses.replace(found, ansible_names=names, names_problem=problem)


def script_interpreter(script: str) -> list[str]:
    """The interpreter command of `script` (its `#!` line); empty if it has none."""
    try:
        with open(script, encoding="utf-8", errors="replace") as opened:
            first = opened.readline()
    except OSError:
        first = ""
    return shlex.split(first[2:]) if first.startswith("#!") else []


def check_rpc_socket(versions: AnsibleVersions, output: str | UnsupportedAnsible) -> None:
    """Refuse, in one line, an ansible-core whose local RPC server could not listen, as
    `_RPC_SOCKET_PROGRAM` found (it prints nothing when it could, or on a core without one).
    A program that could not run says nothing here: the names' ask that follows says it."""
    if isinstance(output, UnsupportedAnsible):
        return
    try:
        found = json.loads(output or "null")
    except ValueError:
        return
    if not isinstance(found, dict):
        return
    error, tmpdir = str(found.get("error")), str(found.get("tmpdir"))
    if len(tmpdir) > RPC_TMPDIR_MAX:
        remedy = (
            f"the temporary directory {tmpdir} is {len(tmpdir)} characters long, the socket's "
            f"path fits under one of at most {RPC_TMPDIR_MAX}: set TMPDIR to a shorter one"
        )
    else:
        remedy = f"under the temporary directory {tmpdir} (TMPDIR): let it make Unix sockets there"
    raise UnsupportedAnsible(
        f"ansible-core {versions.core} cannot start its local RPC server, so every run would "
        f'fail with "Local RPC server did not start" ({error}); {remedy}'
    )


def parse_ansible_names(output: str | UnsupportedAnsible) -> tuple[frozenset[str] | None, str]:
    """The names `_NAMES_PROGRAM` printed, or None and why not."""
    if isinstance(output, UnsupportedAnsible):
        return None, str(output)
    try:
        names = json.loads(output or "null")
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        return None, "ansible-core did not list them (its reserved names moved?)"
    return frozenset(names), ""


def _find_playbook(runner_executable: str, environ: Mapping[str, str]) -> str:
    playbook = find_ansible_playbook(runner_executable, environ)
    if playbook is None:
        raise UnsupportedAnsible(
            f"ansible-playbook not found beside {runner_executable} nor on PATH; "
            f"install {SUPPORTED_RANGE}"
        )
    return playbook


def _version_asks(runner_executable: str, playbook: str) -> list[list[str]]:
    return [[playbook, "--version"], [runner_executable, "--version"]]


def _versions(
    runner_executable: str, playbook: str, outputs: list[str | UnsupportedAnsible]
) -> AnsibleVersions:
    playbook_output, runner_output = outputs
    core = parse_core_version(_text(playbook_output))
    if core is None:
        raise UnsupportedAnsible(f"{playbook} --version does not name an ansible-core version")
    runner = parse_runner_version(_text(runner_output))
    if runner is None:
        raise UnsupportedAnsible(f"{runner_executable} --version does not name a version")
    return AnsibleVersions(core=core, runner=runner, playbook=playbook)


def _outputs(commands: list[list[str]], env: Mapping[str, str]) -> list[str | UnsupportedAnsible]:
    """The standard output of each command, all started at once and awaited together; the error
    of one that could not run in its place (raised by `_text` where its output is read, so the
    errors come in the order of the checks)."""
    procs: list[tuple[list[str], subprocess.Popen[str] | UnsupportedAnsible]] = []
    try:
        for command in commands:
            try:
                proc = subprocess.Popen(
                    command,
                    env=dict(env),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
            except OSError as err:
                procs.append(
                    (command, UnsupportedAnsible(f"cannot run {' '.join(command)}: {err}"))
                )
            else:
                procs.append((command, proc))
        deadline = time.monotonic() + _PROBE_TIMEOUT
        outputs: list[str | UnsupportedAnsible] = []
        for command, started in procs:
            if isinstance(started, UnsupportedAnsible):
                outputs.append(started)
                continue
            try:
                out, _ = started.communicate(timeout=max(0.0, deadline - time.monotonic()))
                outputs.append(out)
            except subprocess.TimeoutExpired as err:
                outputs.append(UnsupportedAnsible(f"cannot run {' '.join(command)}: {err}"))
        return outputs
    finally:
        for _, started in procs:
            if isinstance(started, subprocess.Popen) and started.poll() is None:
                started.kill()
                started.communicate()


def _text(output: str | UnsupportedAnsible) -> str:
    if isinstance(output, UnsupportedAnsible):
        raise output
    return output
