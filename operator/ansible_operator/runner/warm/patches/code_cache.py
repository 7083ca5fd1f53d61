"""Collection code compiled once and kept across warm runs, as Python keeps .pyc files.

Ansible's collection loader compiles the source of every collection module, module utility and
plugin it imports (`compile()` in `_collection_finder`), with no bytecode cache: in every run,
and in every module task, which imports kubernetes.core's module utilities afresh. A compile
depends on its arguments and on this Python alone, so the first compile of each is kept,
marshalled as a .pyc is, in the fork server's cachedir.directory under a key of Python's bytecode
magic number, the file name, the flags and the source; later ones load it. Edited source has
another key: it is compiled anew.

`install()` gives the collection loader's module this `compile`, in the process of a warm run
only; its module tasks, forks of it, inherit it.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import importlib.util
import marshal
from typing import Any

from ansible_operator.runner.warm import cachedir


def install() -> None:
    """Make the collection loader's compiles come from cachedir.directory, if one is set."""
    directory = cachedir.subdirectory("code")
    if directory is None:
        return
    from ansible.utils.collection_loader import _collection_finder

    def kept_compile(
        source: Any, filename: Any, mode: str, flags: int = 0, dont_inherit: bool = False
    ) -> Any:
        if not isinstance(source, (bytes, str)) or not isinstance(filename, str):
            return builtins.compile(source, filename, mode, flags, dont_inherit)
        data = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else source
        key = hashlib.sha256()
        for part in (
            importlib.util.MAGIC_NUMBER,
            filename.encode("utf-8", "surrogatepass"),
            f"{mode}:{flags}:{dont_inherit}:{type(source).__name__}".encode(),
            data,
        ):
            key.update(len(part).to_bytes(8, "big") + part)
        entry = directory / key.hexdigest()
        with contextlib.suppress(Exception):  # not kept yet, or unreadable: compiled below
            return marshal.loads(entry.read_bytes())
        code = builtins.compile(source, filename, mode, flags, dont_inherit)
        with contextlib.suppress(Exception):  # a full disk: not kept
            cachedir.write_atomically(entry, marshal.dumps(code))
        return code

    _collection_finder.compile = kept_compile  # type: ignore[attr-defined]
