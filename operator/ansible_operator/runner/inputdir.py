"""The ansible-runner private data dir of one custom resource, written afresh before every run.

The layout is upstream's (`/tmp/ansible-operator/runner/<group>/<version>/<kind>/<ns>/<name>/`,
empty parts dropped) because users exec into it. The dir is reused across runs of the same CR,
and ansible-runner only writes env files that are absent, so this module rewrites every file of
`env/` and `inventory/` on each run and deletes anything else there: nothing leaks from one run
into the next. Files are written atomically and privately (the extra vars hold the whole CR).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ansible_operator.core import extravars_document
from ansible_operator.runner.types import RunnerError

DEFAULT_BASE_DIR = Path("/tmp/ansible-operator/runner")
LOCAL_INVENTORY = (
    "localhost ansible_connection=local ansible_python_interpreter={{ansible_playbook_python}}"
)


class InputDirError(RunnerError):
    """The input dir cannot be prepared (e.g. ANSIBLE_INVENTORY names nothing); one clear line."""


def new_ident() -> str:
    """A run id as upstream makes them: a random non-negative 63-bit integer, in decimal."""
    return str(secrets.randbits(63))


def input_dir_path(
    group: str,
    version: str,
    kind: str,
    namespace: str,
    name: str,
    *,
    base: Path = DEFAULT_BASE_DIR,
) -> Path:
    """`<base>/<group>/<version>/<kind>/<namespace>/<name>`, empty parts dropped (filepath.Join).

    Raises ValueError for a part that would leave the base dir (`..`, `/`), which no valid
    Kubernetes name or GVK contains.
    """
    parts = [part for part in (group, version, kind, namespace, name) if part]
    for part in parts:
        if "/" in part or part in (".", ".."):
            raise ValueError(f"invalid path component {part!r} for a runner input dir")
    return Path(base).joinpath(*parts)


def strip_ansible_args(args: str) -> str:
    """`--ansible-args` with one surrounding pair of single quotes removed, as upstream does."""
    if len(args) >= 2 and args[0] == "'" and args[-1] == "'":
        return args[1:-1]
    return args


def prepare_input_dir(
    path: Path,
    *,
    ident: str,
    extravars: Mapping[str, Any],
    kubeconfig: str,
    ansible_args: str = "",
    environ: Mapping[str, str] | None = None,
) -> Path:
    """Create or refresh the input dir at `path` for run `ident`; returns `path`.

    `environ` is the environment the run will see (default `os.environ`); it decides the
    inventory: a copy of `ANSIBLE_INVENTORY` (file or dir) if set, else a local `localhost`
    whose interpreter is `$VIRTUAL_ENV/bin/python3` if set, else Ansible's own Python.
    """
    env = os.environ if environ is None else environ
    path = Path(path)
    for sub in ("env", "inventory", "project", "artifacts"):
        (path / sub).mkdir(mode=0o700, parents=True, exist_ok=True)

    env_dir = path / "env"
    files: dict[str, str] = {
        "envvars": json.dumps({"K8S_AUTH_KUBECONFIG": kubeconfig, "KUBECONFIG": kubeconfig}),
        "extravars": extravars_document(extravars),  # YAML: core/extravars.py says why
        "settings": json.dumps(
            {
                # Upstream's event transport settings, kept for anyone reading the dir; events
                # are read from artifacts/<ident>/job_events here, so nothing listens there.
                "runner_http_url": f"/tmp/ansibleoperator-{ident}",
                "runner_http_path": "/events/",
                # ansible-runner would also copy Ansible's output to its own stdout; the copy
                # in artifacts/<ident>/stdout is the one that is kept.
                "suppress_ansible_output": True,
            }
        ),
    }
    cmdline = strip_ansible_args(ansible_args)
    if cmdline:
        files["cmdline"] = cmdline
    for name, text in files.items():
        _write_private(env_dir / name, text)
    _remove_all_but(env_dir, keep=set(files))
    # A file named `args` at the top would replace the whole ansible-playbook command line.
    _remove(path / "args")

    _write_inventory(path / "inventory", env)
    # Nothing is read from project/ (playbooks are passed by absolute path), but a role run
    # that was killed leaves ansible-runner's generated play there.
    _remove_all_but(path / "project", keep=set())
    return path


def remove_input_dir(path: Path, *, base: Path = DEFAULT_BASE_DIR) -> bool:
    """Delete a CR's whole input dir (artifacts included) and the parents it leaves empty.

    Only paths strictly inside `base` are touched. Returns whether anything was removed.
    """
    base = Path(base).resolve()
    given = Path(path).absolute()
    if given.name in ("", ".", ".."):
        raise ValueError(f"refusing to remove {given}: not a CR's input dir")
    target = given.parent.resolve() / given.name  # `..` and symlinked parents resolved
    if base == target or base not in target.parents:
        raise ValueError(f"refusing to remove {target}: not inside {base}")
    if not target.exists() and not target.is_symlink():
        return False
    if target.is_symlink() or not target.is_dir():
        target.unlink()
    else:
        shutil.rmtree(target)
    parent = target.parent
    while parent != base and base in parent.parents:
        try:
            parent.rmdir()
        except OSError:  # not empty (another CR's dir), or already gone
            break
        parent = parent.parent
    return True


def _write_inventory(inventory_dir: Path, env: Mapping[str, str]) -> None:
    _remove_all_but(inventory_dir, keep=set())
    source = env.get("ANSIBLE_INVENTORY", "")
    if source:
        src = Path(source)
        if src.is_dir():
            shutil.copytree(src, inventory_dir, dirs_exist_ok=True)
        elif src.is_file():
            shutil.copy2(src, inventory_dir / "hosts")
        else:
            raise InputDirError(f"ANSIBLE_INVENTORY={source}: no such file or directory")
        return
    hosts = LOCAL_INVENTORY
    venv = env.get("VIRTUAL_ENV", "")
    if venv:
        hosts = f"localhost ansible_connection=local ansible_python_interpreter={venv}/bin/python3"
    _write_private(inventory_dir / "hosts", hosts + "\n")


def _write_private(target: Path, text: str) -> None:
    """Write `text` to `target` atomically, readable by the owner only."""
    tmp = target.with_name(f".{target.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, target)


def _remove_all_but(directory: Path, *, keep: set[str]) -> None:
    for entry in directory.iterdir():
        if entry.name not in keep:
            _remove(entry)


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry)
    elif entry.exists() or entry.is_symlink():
        entry.unlink()
