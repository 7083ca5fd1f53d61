"""Packaged modules (AnsiballZ zips) kept across warm runs, in the fork server's cachedir.

Ansible packages each Python module once per ansible-playbook process, into its per-process local
tmp (`ansiballz_cache/<module fqn>-<compression>`), and a warm run is a new process each time: the
packaging (parsing the module and its module_utils, zipping them) was redone on every run. Here each
packaged zip is also kept in the cachedir, under a key made of everything that picks the files
Ansible reads (ansible-core's version and install, this Python, the module's path, bytes and
compression, the module_utils search paths with their directories' mtimes, the collections paths
that exist), with the list of files the packaging read and their SHA-256, plus the files it looked
for and did not find. A run takes a kept zip only if every listed file still has the same content
and every missing one is still missing: an edited role `library/` module or module_utils file is
packaged anew. As git's index does, a file whose inode, size, mtime and ctime are those recorded
is taken as unchanged without reading it (a module task checks hundreds of module_utils files),
except a file changed within RACY_SECONDS of its recording, which is always read. The kept zip
is put where Ansible looks for its per-process copy, so Ansible's own code then reads it as its
own.

`install()` patches Ansible's `module_common`, in the process of a warm run only.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import stat
import sys
import time
import types
from pathlib import Path
from typing import Any

from ansible_operator.runner.warm import cachedir

RACY_SECONDS = 2.0  # a file changed so recently may change again within the same timestamp


def install() -> None:
    """Make Ansible's module packaging reuse the zips kept in the cachedir, if one is set."""
    directory = cachedir.subdirectory("modules")
    if directory is None:
        return
    from ansible.executor import module_common

    build = module_common._find_module_utils
    if getattr(build, "kept", False):
        return

    def find_module_utils(
        module_name: str,
        b_module_data: bytes,
        module_path: str,
        module_args: Any,
        task_vars: Any,
        templar: Any,
        module_compression: str,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        own_copy = _own_copy_path(module_common, module_name, module_path, module_compression)
        if os.path.exists(own_copy):  # packaged earlier in this run: Ansible's own cache
            return build(module_name, b_module_data, module_path, module_args, task_vars,
                         templar, module_compression, *args, **kwargs)  # fmt: skip
        key = _key(module_common, b_module_data, module_path, module_compression)
        entry = directory / key
        zipdata = _valid_zip(entry)
        if zipdata is not None:
            cachedir.write_atomically(Path(own_copy), zipdata)
            return build(module_name, b_module_data, module_path, module_args, task_vars,
                         templar, module_compression, *args, **kwargs)  # fmt: skip
        with _recording(module_common) as read:
            result = build(module_name, b_module_data, module_path, module_args, task_vars,
                           templar, module_compression, *args, **kwargs)  # fmt: skip
        with contextlib.suppress(OSError):  # not a Python module, or a full disk: not kept
            manifest = {"files": read, "zipdata": Path(own_copy).read_text()}
            cachedir.write_atomically(entry, json.dumps(manifest).encode())
        return result

    find_module_utils.kept = True  # type: ignore[attr-defined]
    module_common._find_module_utils = find_module_utils


def _own_copy_path(module_common: Any, name: str, path: str, compression: str) -> str:
    """Where Ansible keeps this run's packaged copy of the module (as module_common names it)."""
    try:
        fqn = module_common._get_ansible_module_fqn(path)
    except ValueError:
        fqn = f"ansible.modules.{name}"
    local_tmp = module_common.C.DEFAULT_LOCAL_TMP
    return os.path.join(local_tmp, "ansiballz_cache", f"{fqn}-{compression}")


def _key(module_common: Any, module: bytes, path: str, compression: str) -> str:
    from ansible import __version__
    from ansible.plugins.loader import module_utils_loader
    from ansible.utils.collection_loader import AnsibleCollectionConfig

    search = [p for p in module_utils_loader._get_paths(subdirs=False) if os.path.isdir(p)]
    search.append(module_common._MODULE_UTILS_PATH)
    parts = [
        __version__,
        module_common.__file__,
        sys.executable,
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


def _valid_zip(entry: Path) -> bytes | None:
    """The kept zip if every file its packaging read is unchanged (and every missing one is
    still missing), else None."""
    try:
        manifest = json.loads(entry.read_bytes())
    except (OSError, ValueError):
        return None
    for path, digest, signature in manifest["files"]:
        if not unchanged(path, digest, signature):
            return None
    return str(manifest["zipdata"]).encode()


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


@contextlib.contextmanager
def _recording(module_common: Any) -> Any:
    """Note each file module_common reads while packaging (`recorded`)."""
    read: list[list[Any]] = []
    slurp, pkgutil = module_common._slurp, module_common.pkgutil

    def recording_slurp(path: str) -> bytes:
        data: bytes = slurp(path)
        read.append(recorded(path, hashlib.sha256(data).hexdigest()))
        return data

    def recording_get_data(package: str, resource: str) -> bytes | str | None:
        # Where pkgutil.get_data reads from: beside the package's __init__.
        where = None
        try:
            origin = getattr(importlib.import_module(package), "__file__", None)
            where = os.path.join(os.path.dirname(origin), resource) if origin else None
            data: bytes | str | None = pkgutil.get_data(package, resource)
        except ImportError:  # module_common takes it as "not there", as None
            data = None
        if where is None:
            read.append([f"{package}:{resource}", "unlocatable", None])  # never matches
        else:
            # Bytes: the file. '' (a str): no file, but its directory makes it a package.
            found = hashlib.sha256(data).hexdigest() if isinstance(data, bytes) else None
            read.append(recorded(where, found))
            read.append(recorded(os.path.dirname(where), _digest(os.path.dirname(where))))
        return data

    module_common._slurp = recording_slurp
    module_common.pkgutil = types.SimpleNamespace(get_data=recording_get_data)
    try:
        yield read
    finally:
        module_common._slurp, module_common.pkgutil = slurp, pkgutil
