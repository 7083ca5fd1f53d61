"""Zygotes: Ansible's controller imported once per kind of run, for the runs of that kind to fork.

A warm run's ansible-playbook imports Ansible's controller anew (the CLI, constants, executor,
strategies, plugins), about a third of a short run's CPU. Those imports read the configuration:
ansible.cfg and the ANSIBLE_* variables become constants and plugin paths when imported, so the
fork server, which serves runs of any configuration, cannot make them. A zygote can: a fork of
the fork server that has imported them in the environment and working directory of an earlier
run of the same kind, and then forks the runs of that kind as the server does.

- Kind (`routing_key`): ansible-runner's command line without the private data dir and the run
  id, the working directory, and the variables that can change a setting (ANSIBLE_*, HOME,
  locale...), less those that differ by run (`PER_RUN_ENV`).
- Record: a run of a kind without a usable zygote writes, at its end, its ansible-playbook's
  environment, working directory and imported controller modules (`write_record`); the fork
  server starts the kind's zygote from it (`prepare`) when the next run of that kind comes.
- Check (`adopt`): the ansible-playbook of a run forked from a zygote compares what it would
  read itself (the variables, the ini file Ansible finds and its content, the path settings,
  which a relative path makes the working directory's) with what the zygote read. Equal: it
  keeps the zygote's modules and redoes what belongs to one process (the local temporary
  directory, the fact cache's directory, the display's terminal, colours, the ids of tasks).
  Different: it removes the record and execs a new ansible-playbook, as a cold run does; the
  kind's next run records anew.
- A zygote whose imports print anything (a configuration warning, which each run must show) or
  fail exits, and its record is not used again. A kind whose zygotes did not fit MAX_MISFITS
  times (server.py) gets none.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ansible_operator.runner import proctree
from ansible_operator.runner.warm import cachedir, notices
from ansible_operator.runner.warm.patches import zygote_state

PER_RUN_ENV = frozenset(
    {
        proctree.MARKER_ENV,
        "KUBECONFIG",
        "K8S_AUTH_KUBECONFIG",
        "AWX_ISOLATED_DATA_DIR",  # ansible-runner's, per run id
        "ANSIBLE_CACHE_PLUGIN_CONNECTION",  # ansible-runner's, per run id
    }
)
# What Ansible reads when imported, besides its ANSIBLE_* variables (base.yml's other names).
_SETTING_ENV = frozenset(
    {"HOME", "PATH", "TMPDIR", "LANG", "LANGUAGE", "TERM", "NO_COLOR", "EDITOR", "PAGER"}
)
_SETTING_PREFIXES = ("ANSIBLE_", "_ANSIBLE_", "LC_")
_TEMPORARY_TYPES = ("tmp", "temppath", "tmppath")  # made anew (mkdtemp) when evaluated
_PATH_TYPES = ("path", "pathspec", "pathlist")  # a relative path is the working directory's
REFUSED = 3
"""A zygote's exit status when its imports printed something or failed."""
ADOPTED_ENV = "ANSIBLE_OPERATOR_WARM_CONTROLLER"
"""Set in the environment of a run whose ansible-playbook is a zygote's, so a test can tell."""


@dataclass(frozen=True)
class Record:
    """What a zygote is started from: one run's ansible-playbook."""

    env: dict[str, str]
    cwd: str
    modules: list[str]
    digest: str  # of the record file's content


@dataclass(frozen=True)
class Snapshot:
    """What a zygote's imports read, for `adopt` to compare."""

    setting_env: dict[str, str]
    config_file: str | None
    config_digest: str | None
    settings: dict[str, Any]  # path settings a variable or the ini file gave
    per_run: list[str]  # settings made anew for each run


snapshot: Snapshot | None = None
"""Set in a zygote once it has imported the controller; inherited by the runs it forks."""


def setting_env(env: Mapping[str, str]) -> dict[str, str]:
    return {
        name: value
        for name, value in env.items()
        if (name in _SETTING_ENV or name.startswith(_SETTING_PREFIXES)) and name not in PER_RUN_ENV
    }


def routing_key(argv: Sequence[str], env: Mapping[str, str], cwd: str) -> str:
    """The kind of a run request (ansible-runner's argv as process.build_command makes it)."""
    masked = list(argv)
    if len(masked) > 2:
        masked[2] = "<private data dir>"
    for index, arg in enumerate(masked[:-1]):
        if arg in ("-i", "--ident"):
            masked[index + 1] = "<run id>"
    data = json.dumps([masked, cwd, setting_env(env)], sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()[:32]


def record_path(key: str) -> Path | None:
    directory = cachedir.subdirectory("zygotes")
    return None if directory is None else directory / f"{key}.json"


def read_record(key: str) -> Record | None:
    path = record_path(key)
    try:
        data = path.read_bytes() if path is not None else b""
        fields = json.loads(data)
        return Record(
            env={str(k): str(v) for k, v in fields["env"].items()},
            cwd=str(fields["cwd"]),
            modules=[str(name) for name in fields["modules"]],
            digest=hashlib.sha256(data).hexdigest(),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def write_record(key: str, env: Mapping[str, str], cwd: str) -> None:
    """In a run's ansible-playbook that imported the controller itself, at its end: record it
    (`env` and `cwd` as it started) for a zygote, unless its kind has a record already."""
    path = record_path(key)
    if path is None or path.exists():
        return
    package = os.path.dirname(sys.modules["ansible"].__file__ or "") + os.sep
    modules = sorted(
        name
        for name, module in list(sys.modules.items())
        if name.startswith("ansible.")
        # Not a plugin of a role or collection loaded under an `ansible.plugins.*` name.
        and (getattr(module, "__file__", None) or "").startswith(package)
    )
    started = {k: v for k, v in env.items() if k != proctree.MARKER_ENV}
    data = json.dumps({"env": started, "cwd": cwd, "modules": modules}).encode()
    cachedir.write_atomically(path, data)


def forget(key: str) -> None:
    path = record_path(key)
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


def prepare(record: Record) -> None:
    """In a new zygote: import the controller as `record`'s run did; raises SystemExit(REFUSED)
    if that printed anything or failed."""
    global snapshot
    os.environ.clear()
    os.environ.update(record.env)
    # The recorded run's custom resource may be gone with its directory; each run checks what
    # its own directory changes (an ansible.cfg there, relative paths).
    os.chdir(record.cwd if os.path.isdir(record.cwd) else "/")
    sys.argv = ["ansible-playbook"]
    with tempfile.TemporaryFile() as printed:
        saved = os.dup(1), os.dup(2)
        os.dup2(printed.fileno(), 1)
        os.dup2(printed.fileno(), 2)
        try:
            for name in record.modules:
                with contextlib.suppress(ImportError):
                    importlib.import_module(name)
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            raise SystemExit(REFUSED) from None
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        if os.fstat(printed.fileno()).st_size or "ansible.constants" not in sys.modules:
            raise SystemExit(REFUSED)
    config_file = zygote_state.config_file()
    per_run = zygote_state.per_run_settings(_TEMPORARY_TYPES, PER_RUN_ENV)
    snapshot = Snapshot(
        setting_env=setting_env(os.environ),
        config_file=config_file,
        config_digest=_file_digest(config_file),
        settings=zygote_state.set_paths(_PATH_TYPES, per_run),
        per_run=per_run,
    )


def fits() -> bool:
    """`adopt()`, saying why not when it does not fit (notices.py): a cold ansible-playbook then
    meets (and reports) whatever made the check fail, as a cold run would."""
    try:
        misfit = adopt()
    except Exception as err:
        notices.tell("zygote-error", repr(err))
        return False
    if misfit is not None:
        notices.tell("zygote-misfit", misfit)
    return misfit is None


def adopt() -> str | None:
    """In a run's ansible-playbook, with the run's environment and working directory: None if
    the controller a zygote imported fits this run, made ready for it; else what differs."""
    if snapshot is None:
        return "no zygote"
    warnings, config_file = zygote_state.find_config_file()
    if warnings:
        return "finding the ansible.cfg warned"
    if setting_env(os.environ) != snapshot.setting_env:
        return "the variables that change a setting differ"
    if config_file != snapshot.config_file:
        return f"the ansible.cfg found differs ({config_file} for {snapshot.config_file})"
    if _file_digest(config_file) != snapshot.config_digest:
        return f"{config_file} changed"
    # The same variables and ini content give the same settings, but for relative paths, which
    # are the working directory's (each custom resource has its own): those are read again.
    if not zygote_state.settings_are(snapshot.settings):
        return "a setting with a relative path reads differently here"
    zygote_state.renew(snapshot.per_run)
    os.environ[ADOPTED_ENV] = "1"
    return None


def _file_digest(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "unreadable"
