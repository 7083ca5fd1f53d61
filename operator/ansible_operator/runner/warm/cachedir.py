"""What warm runs keep for each other: the fork server's directory, written atomically.

A warm run is a new ansible-playbook process each time, so what Ansible caches per process is lost
at its end. The fork server makes a private directory (its second argument, removed when it exits)
where runs keep what is expensive and depends on content alone: packaged modules, parsed plugin
documentation, compiled collection code and templates (patches/), zygote records. A reader checks
what it takes, and a writer replaces files whole, so runs side by side never see a half-written
one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

directory: str | None = None
"""Set by the fork server before it forks runs (None: nothing is kept)."""


def subdirectory(name: str) -> Path | None:
    """`directory`/`name`, or None when nothing is kept."""
    return None if directory is None else Path(directory) / name


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
