"""Where the installed runtime came from, as pip recorded it (PEP 610 ``direct_url.json``): the
requirement that installs the same runtime again, which ``init`` writes into the project's
README, and the git commit it was built from, which ``version`` shows.

ansible-operator-py is on no public index, so ``pip install ansible-operator-py`` fails; the
URL pip was given (a source directory, a wheel, a git repository) is the one that works.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

DISTRIBUTION = "ansible-operator-py"


def direct_url(distribution: str = DISTRIBUTION) -> dict[str, Any]:
    """What pip recorded of the URL it installed `distribution` from ({}: an index, or none)."""
    try:
        text = metadata.distribution(distribution).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return {}
    try:
        data = json.loads(text or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def requirement(
    recorded: Mapping[str, Any], version: str, extras: str = "molecule", name: str = DISTRIBUTION
) -> str:
    """The pip requirement for the runtime installed from `recorded` (a direct_url.json)."""
    url = recorded.get("url")
    if not isinstance(url, str) or not url:
        return f"{name}[{extras}]=={version}"  # from an index: the same version from it
    vcs = recorded.get("vcs_info")
    if isinstance(vcs, Mapping) and vcs.get("vcs"):
        commit = vcs.get("commit_id")
        url = f"{vcs['vcs']}+{url}" + (f"@{commit}" if commit else "")
    return f"{name}[{extras}] @ {url}"


def _git_describe(directory: Path) -> str | None:
    if not (directory / ".git").exists():
        return None
    try:
        done = subprocess.run(
            ["git", "-C", str(directory), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def commit(recorded: Mapping[str, Any], checkout: Path | None) -> str:
    """The git commit the runtime runs from: its checkout's (``-dirty`` with local changes),
    else the one pip installed from a git URL, else that of the source directory pip built it
    from; "unknown" otherwise (a wheel from elsewhere records none)."""
    if checkout is not None:
        found = _git_describe(checkout)
        if found:
            return found
    vcs = recorded.get("vcs_info")
    if isinstance(vcs, Mapping) and vcs.get("commit_id"):
        return str(vcs["commit_id"])[:12]
    url = urlparse(str(recorded.get("url") or ""))
    if url.scheme == "file" and "dir_info" in recorded:
        return _git_describe(Path(unquote(url.path))) or "unknown"
    return "unknown"
