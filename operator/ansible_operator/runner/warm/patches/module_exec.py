"""Module tasks on localhost in forks of their worker: Ansible's `local` connection patched.

`install()` makes the builtin `local` connection's `exec_command` run a pipelined module of this
very interpreter through warm/modules.py, in the process of a warm run only; anything else
(become, other commands, another Python) goes to the builtin unchanged. In the module's fork,
`as_module_side()` undoes what the worker has that a new interpreter running the AnsiballZ
payload would not: ansible-core 2.19+'s controller hooks in `ansible.module_utils._internal`
(set by `ansible._internal` on import: a module's warn() and deprecate() would go to the
controller's display instead of its result), the worker's `ansible` modules where the payload's
zip (which AnsiballZ opens to append to, then puts first on sys.path) has other code, and the
modules only the zip has.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import zipfile
import zipimport
import zlib
from typing import Any

from ansible_operator.runner.warm.modules import in_process_command, run_payload


def install() -> None:
    """Make the builtin `local` connection run this interpreter's Python modules in forks."""
    from ansible.plugins.connection import local

    builtin = local.Connection.exec_command
    if getattr(builtin, "warm", False):
        return

    def exec_command(
        self: Any, cmd: str, in_data: bytes | None = None, sudoable: bool = True
    ) -> tuple[int, bytes, bytes]:
        assignments = in_process_command(cmd, sys.executable)
        if assignments is None or not in_data or (self.become is not None and sudoable):
            return builtin(self, cmd, in_data=in_data, sudoable=sudoable)
        # What the builtin does before running anything (connect, display the command).
        super(local.Connection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)
        local.display.vvv(f"EXEC (in-process) {cmd}", host=self._play_context.remote_addr)
        return run_payload(in_data, assignments, as_module_side)

    exec_command.warm = True  # type: ignore[attr-defined]
    local.Connection.exec_command = exec_command


CONTROLLER_HOOKS = ("is_controller", "import_controller_module", "get_controller_serialize_map")
_module_side: dict[str, Any] = {}  # the hooks as they were before the controller replaced them


def keep_module_side() -> None:
    """In the fork server, before anything of Ansible's controller is imported: note the module
    side's hooks (2.19+), for `as_module_side` to put back."""
    internal = sys.modules.get("ansible.module_utils._internal")
    if internal is not None:
        hooks = [name for name in CONTROLLER_HOOKS if hasattr(internal, name)]  # none on 2.18
        _module_side.update({name: getattr(internal, name) for name in hooks})


def as_module_side() -> None:
    """In a module's fork, before its payload runs (see the module docstring)."""
    internal = sys.modules.get("ansible.module_utils._internal")
    for name, value in _module_side.items():
        setattr(internal, name, value)
    shadowed: set[str] = set()
    _forgetting_shadowed(shadowed)
    sys.meta_path.insert(0, PayloadFinder(shadowed))
    sys.meta_path.append(PayloadFinder(None))


def _forgetting_shadowed(shadowed: set[str]) -> None:
    """Make AnsiballZ's opening of its payload zip (to append to it, before it puts it first on
    sys.path) forget the `ansible.*` modules already imported that the zip has in another
    version (a role's module utility shadowing one): they are imported from the zip, as a new
    interpreter would. Then zipfile is as it was."""
    builtin = zipfile.ZipFile

    class PayloadZip(builtin):  # type: ignore[misc,valid-type]
        def __init__(self, file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> None:
            if mode == "a" and isinstance(file, str) and file.endswith(".zip"):
                zipfile.ZipFile = builtin  # type: ignore[misc]
                with builtin(file) as payload:
                    for info in payload.infolist():
                        _forget_if_other(info, shadowed)
            super().__init__(file, mode, *args, **kwargs)

    zipfile.ZipFile = PayloadZip  # type: ignore[misc]


def _forget_if_other(info: zipfile.ZipInfo, shadowed: set[str]) -> None:
    # AnsiballZ's packages' __init__ files are its own: only modules are compared.
    if not info.filename.startswith("ansible/module_utils/") or not info.filename.endswith(".py"):
        return
    if info.filename.endswith("/__init__.py"):
        return
    name = info.filename[: -len(".py")].replace("/", ".")
    loaded = sys.modules.get(name)
    if loaded is None or _same_code(getattr(loaded, "__file__", None), info):
        return
    shadowed.add(name)
    del sys.modules[name]
    parent, _, leaf = name.rpartition(".")
    if getattr(sys.modules.get(parent), leaf, None) is loaded:  # `from parent import leaf`
        delattr(sys.modules[parent], leaf)


def _same_code(path: str | None, info: zipfile.ZipInfo) -> bool:
    try:
        with open(path or "", "rb") as source:
            data = source.read()
    except OSError:
        return False
    return len(data) == info.file_size and zlib.crc32(data) == info.CRC


class PayloadFinder(importlib.abc.MetaPathFinder):
    """Finds `ansible.*` modules in the payload's zip: those named in `only` (first on
    sys.meta_path), or any (last: those only the zip has, a role's `library/` modules and
    `module_utils/`). The worker's `ansible` package (already imported, from the same install as
    the payload's) serves the rest; a new interpreter would have taken the whole package from
    the zip that AnsiballZ puts first on sys.path."""

    def __init__(self, only: set[str] | None) -> None:
        self.only = only

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("ansible.") or (
            self.only is not None and fullname not in self.only
        ):
            return None
        package_dir = fullname.rpartition(".")[0].replace(".", "/")
        for entry in sys.path:
            if not entry.endswith(".zip"):
                continue
            try:
                spec = zipimport.zipimporter(f"{entry}/{package_dir}").find_spec(fullname)
            except zipimport.ZipImportError:
                continue
            if spec is not None:
                return spec
        return None
