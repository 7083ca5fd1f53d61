"""A watches file on disk: read it, find its playbooks and roles where upstream looks, and hand
the text to the pure `core.parse_watches`.

Roles are searched in upstream's order: an FQCN in the collections paths, then each
`ANSIBLE_ROLES_PATH` entry (`<entry>/<role>`, `<entry>/roles/<role>`), then `roles/<role>`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ansible_operator.core import RoleSearch, Watch, WatchesError, parse_watches

DEFAULT_COLLECTIONS_ROOT = "/usr/share/ansible/collections"


def _path_list(value: str, environ: Mapping[str, str], cwd: str) -> list[str]:
    """Split a colon-separated search path; relative entries are taken from `cwd`."""
    home = environ.get("HOME")
    entries = []
    for entry in value.split(":"):
        if home and (entry == "~" or entry.startswith("~/")):
            entry = home + entry[1:]
        entries.append(os.path.normpath(os.path.join(cwd, entry)))
    return entries


def role_candidates(role: str, *, environ: Mapping[str, str], cwd: str) -> list[str]:
    """Where upstream looks for a role, in order; the first path that exists wins."""
    if os.path.isabs(role):
        return [role]
    candidates: list[str] = []
    parts = role.split(".")
    if len(parts) == 3:  # an FQCN: namespace.collection.role
        collections = environ.get("ANSIBLE_COLLECTIONS_PATH", "")
        if not collections:
            collections = DEFAULT_COLLECTIONS_ROOT
            home = environ.get("HOME")
            if home:
                collections += ":" + os.path.join(home, ".ansible/collections")
        namespace, collection, name = parts
        for entry in _path_list(collections, environ, cwd):
            candidates.append(
                os.path.join(entry, "ansible_collections", namespace, collection, "roles", name)
            )
    roles_path = environ.get("ANSIBLE_ROLES_PATH", "")
    if roles_path:
        for entry in _path_list(roles_path, environ, cwd):
            candidates.append(os.path.normpath(os.path.join(entry, role)))
            candidates.append(os.path.normpath(os.path.join(entry, "roles", role)))
    candidates.append(os.path.normpath(os.path.join(cwd, "roles", role)))
    return candidates


def resolve_role(role: str, *, environ: Mapping[str, str], cwd: str) -> str | None:
    """The first existing candidate path for `role`, or None."""
    return DiskLocator(environ, cwd).role(role).path


@dataclass(frozen=True)
class DiskLocator:
    """Playbooks relative to `cwd`; roles searched with `environ`'s paths (`ANSIBLE_ROLES_PATH`,
    `ANSIBLE_COLLECTIONS_PATH`, `HOME`)."""

    environ: Mapping[str, str]
    cwd: str

    def playbook(self, playbook: str) -> tuple[str, bool]:
        if not os.path.isabs(playbook):
            playbook = os.path.normpath(os.path.join(self.cwd, playbook))
        return playbook, os.path.exists(playbook)

    def role(self, role: str) -> RoleSearch:
        looked_in = role_candidates(role, environ=self.environ, cwd=self.cwd)
        found = next((path for path in looked_in if os.path.exists(path)), None)
        return RoleSearch(found, tuple(looked_in))


def load_watches(
    path: str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    warn: Callable[[str], None] | None = None,
    missing: Callable[[WatchesError], None] | None = None,
) -> list[Watch]:
    """Read a watches file and parse it (`core.parse_watches`, which says what `warn` and
    `missing` are told); raise WatchesError on the first problem.

    `environ` (default `os.environ`) feeds `$VAR` expansion and the role search paths; `cwd`
    (default the process's) anchors relative playbooks and `roles/<role>`.
    """
    shown = os.fspath(path)
    env: Mapping[str, str] = os.environ if environ is None else environ
    base = os.path.abspath(os.getcwd() if cwd is None else os.fspath(cwd))
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise WatchesError(shown, "cannot read: not valid UTF-8") from None
    except OSError as e:
        raise WatchesError(shown, f"cannot read: {e.strerror or e}") from None
    locate = DiskLocator(env, base)
    return parse_watches(text, source=shown, environ=env, locate=locate, warn=warn, missing=missing)
