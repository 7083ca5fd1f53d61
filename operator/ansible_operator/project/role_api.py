"""A role's API on disk: the argument spec of the version its watch names, and the conversion
file (``meta/conversion.yml``) that declares the kind's other served versions.

Read by ``generate crds`` (the CRD's versions and its conversion webhook) and by ``run`` (the
conversions it serves), so both see one declaration, checked the same way (``core.conversion``);
each problem is one ``RoleApiError`` line naming the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ansible_operator.core import Watch, conversion

SPEC_FILES = ("meta/argument_specs.yml", "meta/argument_specs.yaml")


class RoleApiError(Exception):
    """A role's argument spec or conversion file that cannot be used; one line."""


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())


def load_entry(role_dir: Path) -> tuple[Path, Mapping[str, Any]] | None:
    """The role's `main` argument spec entry point and its file, or None if it has none."""
    candidates = [role_dir / name for name in SPEC_FILES]
    candidates.append(role_dir / "meta/main.yml")
    for path in candidates:
        if not path.is_file():
            continue
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
            raise RoleApiError(f"{path}: cannot read: {_one_line(err)}") from None
        specs = data.get("argument_specs") if isinstance(data, dict) else None
        if specs is None:
            if path.name.startswith("argument_specs"):
                raise RoleApiError(f"{path}: no `argument_specs` mapping at the top")
            continue
        if not isinstance(specs, dict) or "main" not in specs:
            raise RoleApiError(f"{path}: argument_specs has no `main` entry point")
        return path, specs["main"] or {}
    return None


def load_conversion(
    watch: Watch,
    role_dir: Path,
    entry: Mapping[str, Any] | None = None,  # None: read from the role
    shown: str | None = None,  # the file as the user would write it (default: its path)
) -> conversion.KindConversion | None:
    """The conversion `role_dir` declares for `watch`'s kind, checked (None: no file)."""
    path = role_dir / conversion.FILE
    if not path.is_file():
        return None
    shown = shown or str(path)
    if watch.role is None:
        raise RoleApiError(
            f"{shown}: {watch.gvk.kind} runs a playbook; a conversion file is read from the "
            "role a watch names with role:"
        )
    if entry is None:
        loaded = load_entry(role_dir)
        entry = loaded[1] if loaded else {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise RoleApiError(f"{shown}: cannot read: {_one_line(err)}") from None
    try:
        return conversion.parse(
            data,
            group=watch.gvk.group,
            kind=watch.gvk.kind,
            hub=watch.gvk.version,
            hub_options=entry.get("options"),
            camel=watch.snake_case_parameters,
            where=shown,
        )
    except conversion.ConversionError as err:
        raise RoleApiError(str(err)) from None
