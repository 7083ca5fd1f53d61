"""What warm runs keep across runs: the fork server's directory, written atomically.

A warm run is a new ansible-playbook process each time, so what Ansible caches per process is
lost at its end. The fork server makes a private directory (its second argument, removed when it
exits) where runs keep what is expensive and depends on content alone: packaged modules
(ansiballzcache.py), parsed plugin documentation (plugindocs.py), compiled collection code
(codecache.py) and compiled templates (templatecache.py). A reader checks what it takes, and a
writer replaces files whole, so runs side by side never see a half-written one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

directory: str | None = None
"""Set by the fork server before it forks runs (None: nothing is kept)."""


def directory_on_core_2_18(name: str) -> Path | None:
    """`directory`/`name`, for what a patch of ansible-core 2.18's internals keeps; None when
    nothing is kept or the running ansible-core is another: 2.19 moved or replaced what those
    patches touch, and there every run does that work itself, as a cold run does."""
    if directory is None:
        return None
    from ansible.release import __version__ as core_version

    return Path(directory) / name if core_version.startswith("2.18.") else None


def write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, part = tempfile.mkstemp(dir=path.parent, prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(part, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise
