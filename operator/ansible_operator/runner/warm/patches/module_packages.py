"""Packaged modules (AnsiballZ zips) kept across warm runs, in the fork server's cachedir.

Ansible packages each Python module once per ansible-playbook process, into its per-process local
tmp (`ansiballz_cache/<module fqn>-<compression>`, and `-<AnsiballZ extensions>` from 2.19, a
pickle then), and a warm run is a new process each time: the packaging (parsing the module and
its module_utils, zipping them) was redone on every run; on 2.19 and later, which parse each
module_utils file into an AST and compile it, it was about half of a warm memcached run's worker
CPU. Here each packaged copy is also kept in the cachedir, under a key made of everything that
picks the files Ansible reads (ansible-core's version and install, this Python, the module's
name, path, bytes and compression, the module_utils search paths with their directories' mtimes,
the collections paths that exist), with the list of files the packaging read and their SHA-256,
plus the files it looked for and did not find. A run takes a kept copy only if every listed file
still has the same content and every missing one is still missing: an edited role `library/`
module or module_utils file is packaged anew. As git's index does, a file whose inode, size,
mtime and ctime are those recorded is taken as unchanged without reading it (a module task checks
hundreds of module_utils files), except a file changed within RACY_SECONDS of its recording,
which is always read. The kept copy is put where Ansible looks for its per-process copy (the one
file its packaging added there, whose name is kept with it), so Ansible's own code then reads it
as its own. A packaging that embeds resource files (`EmbedManager`, 2.21) is not kept: it reads
files the recording does not see.

`install()` patches Ansible's `module_common`, in the process of a warm run only.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import marshal
import os
import stat
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ansible_operator.runner.warm import cachedir

RACY_SECONDS = 2.0  # a file changed so recently may change again within the same timestamp
NO_PACKAGE = "no package"  # the digest of a package that could not be imported
# _find_module_utils's parameters, by position up to 2.18 (keywords only from 2.19)
ARGUMENTS = ("module_name", "b_module_data", "module_path", "module_args", "task_vars", "templar",
             "module_compression")  # fmt: skip


def install() -> None:
    """Make Ansible's module packaging reuse the copies kept in the cachedir, if one is set."""
    directory = cachedir.subdirectory("modules")
    if directory is None:
        return
    from ansible.executor import module_common

    build = module_common._find_module_utils
    if getattr(build, "kept", False):
        return

    def find_module_utils(*args: Any, **kwargs: Any) -> Any:
        given = {**dict(zip(ARGUMENTS, args, strict=False)), **kwargs}
        module_data, path = given["b_module_data"], given["module_path"]
        name, compression = given["module_name"], given["module_compression"]
        own_copies = Path(module_common.C.DEFAULT_LOCAL_TMP, "ansiballz_cache")
        entry = directory / _key(module_common, name, module_data, path, compression)
        kept = _read(entry)
        if kept is not None and (own_copies / kept[0]).exists():
            return build(*args, **kwargs)  # packaged earlier in this run: Ansible's own cache
        if kept is not None and _valid(kept[1]):
            cachedir.write_atomically(own_copies / kept[0], kept[2])
            return build(*args, **kwargs)
        before = _listing(own_copies)
        with _recording(module_common) as read:
            result = build(*args, **kwargs)
        added = _listing(own_copies) - before
        if len(added) == 1 and not read.embedded:  # else another worker's too, or not Python
            (own_name,) = added
            with contextlib.suppress(OSError):  # a full disk: not kept
                own = (own_copies / own_name).read_bytes()
                cachedir.write_atomically(entry, marshal.dumps((own_name, read.files, own)))
        return result

    find_module_utils.kept = True  # type: ignore[attr-defined]
    module_common._find_module_utils = find_module_utils


def _listing(directory: Path) -> set[str]:
    """The packaged copies in Ansible's per-process cache (not its locks or partial files)."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return set()
    return {n for n in names if not n.endswith((".lock", "-part"))}


def _read(entry: Path) -> tuple[str, list[Any], bytes] | None:
    """(the own copy's file name, the files its packaging read, its bytes), if kept."""
    try:
        name, files, data = marshal.loads(entry.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    return str(name), list(files), bytes(data)


def _valid(files: list[Any]) -> bool:
    """Whether every file the packaging read is unchanged (and every missing one, or missing
    package, is still missing)."""
    return all(
        not _importable(path) if digest == NO_PACKAGE else unchanged(path, digest, signature)
        for path, digest, signature in files
    )


def _importable(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except ImportError:  # its parent package is not there either
        return False


def _key(module_common: Any, name: str, module: bytes, path: str, compression: str) -> str:
    from ansible import __version__
    from ansible.plugins.loader import module_utils_loader
    from ansible.utils.collection_loader import AnsibleCollectionConfig

    search = [p for p in module_utils_loader._get_paths(subdirs=False) if os.path.isdir(p)]
    search.append(module_common._MODULE_UTILS_PATH)
    parts = [
        __version__,
        module_common.__file__,
        sys.executable,
        name,
        path,
        compression,
        hashlib.sha256(module).hexdigest(),
        # A file added to a search directory can shadow one found later: its mtime changes.
        *(f"{p}@{_mtime_ns(p)}" for p in search),
        # Only those that exist: each CR's input dir adds its own `project/collections`, which
        # is rarely there, and would otherwise make every CR package its modules anew.
        *(p for p in AnsibleCollectionConfig.collection_paths if os.path.isdir(p)),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _mtime_ns(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def unchanged(path: str, digest: str | None, signature: list[int] | None) -> bool:
    """Whether `path` is as recorded: its SHA-256 `digest` ("directory", None: absent), read
    only if its stat `signature` is not the recorded one."""
    try:
        info = os.stat(path)
    except OSError:
        return digest is None
    if stat.S_ISDIR(info.st_mode):
        return digest == "directory"
    if signature is not None and _signature(info) == signature:
        return True
    return _digest(path) == digest


def recorded(path: str, digest: str | None) -> list[Any]:
    """[path, digest, stat signature], the signature None if the file changed too recently to
    be trusted (or is absent or a directory)."""
    try:
        info = os.stat(path)
    except OSError:
        return [path, digest, None]
    racy = time.time() - RACY_SECONDS
    if stat.S_ISDIR(info.st_mode) or max(info.st_mtime, info.st_ctime) >= racy:
        return [path, digest, None]
    return [path, digest, _signature(info)]


def _signature(info: os.stat_result) -> list[int]:
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def _digest(path: str) -> str | None:
    """The SHA-256 of a file, "directory" for a directory, None if there is neither."""
    if os.path.isdir(path):
        return "directory"
    try:
        with open(path, "rb") as file:
            return hashlib.sha256(file.read()).hexdigest()
    except OSError:
        return None


class _Read:
    """What a packaging read: `files` ([path, digest, signature], as `recorded`), and whether
    it embedded resource files, which are not among them."""

    def __init__(self) -> None:
        self.files: list[list[Any]] = []
        self.embedded = False


@contextlib.contextmanager
def _recording(module_common: Any) -> Any:
    """Note each file module_common reads while packaging (`recorded`)."""
    read = _Read()
    slurp, pkgutil = module_common._slurp, module_common.pkgutil
    # 2.21's EmbedManager resources are found through importlib.resources.files (`ir_files`).
    embeds: Callable[..., Any] | None = getattr(module_common, "ir_files", None)

    def recording_slurp(path: str) -> bytes:
        data: bytes = slurp(path)
        read.files.append(recorded(path, hashlib.sha256(data).hexdigest()))
        return data

    def recording_get_data(package: str, resource: str) -> bytes | str | None:
        # Where pkgutil.get_data reads from: beside the package's __init__.
        where = None
        try:
            origin = getattr(importlib.import_module(package), "__file__", None)
            where = os.path.join(os.path.dirname(origin), resource) if origin else None
            data: bytes | str | None = pkgutil.get_data(package, resource)
        except ImportError:  # module_common takes it as "not there", as None
            read.files.append([package, NO_PACKAGE, None])  # an optional import: still missing?
            return None
        if where is None:
            read.files.append([f"{package}:{resource}", "unlocatable", None])  # never matches
        else:
            # Bytes: the file, unless there is none (2.19+'s collection loader gives b'' for a
            # package without an __init__.py). '' (a str): no file, but its directory makes it
            # a package.
            found = None
            if isinstance(data, bytes) and os.path.isfile(where):
                found = hashlib.sha256(data).hexdigest()
            read.files.append(recorded(where, found))
            read.files.append(recorded(os.path.dirname(where), _digest(os.path.dirname(where))))
        return data

    def noting_embeds(*args: Any, **kwargs: Any) -> Any:
        assert embeds is not None
        read.embedded = True
        return embeds(*args, **kwargs)

    module_common._slurp = recording_slurp
    module_common.pkgutil = types.SimpleNamespace(get_data=recording_get_data)
    if embeds is not None:
        module_common.ir_files = noting_embeds
    try:
        yield read
    finally:
        module_common._slurp, module_common.pkgutil = slurp, pkgutil
        if embeds is not None:
            module_common.ir_files = embeds
