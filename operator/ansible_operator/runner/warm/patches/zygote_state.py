"""What a zygote (warm/zygote.py) reads of Ansible's configuration, and redoes per process.

A zygote imports Ansible's controller once for the runs of one kind; each run's ansible-playbook
then checks that configuration against its own (the ini file Ansible finds, the path settings)
and redoes what the zygote's imports made for the zygote's own process (the display's terminal,
colours, task ids). Those reads and renewals reach into ansible.constants, the config manager
and the display; they are all here.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Collection
from typing import Any


def config_file() -> str | None:
    """The ini file the imported ansible.constants read."""
    from ansible import constants as C

    found: str | None = C.config._config_file
    return found


def find_config_file() -> tuple[set[str], str | None]:
    """The warnings of looking for the ini file, and the file, in this process's setting."""
    from ansible.config.manager import find_ini_config_file

    warnings: set[str] = set()
    return warnings, find_ini_config_file(warnings)


def set_paths(path_types: Collection[str], per_run: list[str]) -> dict[str, Any]:
    """The path settings given by a variable or the ini file (defaults are absolute paths),
    less the `per_run` ones."""
    from ansible import constants as C

    paths = {}
    for name, definition in C.config.get_configuration_definitions().items():
        if definition.get("type") in path_types and name not in per_run:
            value, origin = C.config.get_config_value_and_origin(name, variables=vars(C))
            if origin != "default":
                paths[name] = value
    return paths


def per_run_settings(temporary_types: Collection[str], per_run_env: Collection[str]) -> list[str]:
    """The settings made anew by each process: temporary paths, and those read from a variable
    that differs by run."""
    from ansible import constants as C

    names = []
    for name, definition in C.config.get_configuration_definitions().items():
        env_names = {entry.get("name") for entry in definition.get("env") or ()}
        if definition.get("type") in temporary_types or env_names & set(per_run_env):
            names.append(name)
    return names


def settings_are(settings: dict[str, Any]) -> bool:
    """Whether this process's configuration gives `settings` (read again: relative paths are the
    working directory's)."""
    from ansible import constants as C

    own = vars(C)
    return all(C.config.get_config_value(n, variables=own) == v for n, v in settings.items())


def renew(per_run: list[str]) -> None:
    """Redo, for this process, what the zygote's imports made for the zygote's: the `per_run`
    settings, the terminal the display measured and wrapped (this process has its own sys.std*),
    colours, and the ids given to tasks."""
    from ansible import constants as C
    from ansible.utils import color
    from ansible.utils import vars as ansible_vars
    from ansible.utils.display import Display, _synchronize_textiowrapper

    own = vars(C)
    for name in per_run:
        C.set_constant(name, C.config.get_config_value(name, variables=own))
    display = Display()
    display._set_column_width()
    for stream in (sys.stdout, sys.stderr):
        _synchronize_textiowrapper(stream, display._lock)
        stream.reconfigure(errors="_replacing_warning_handler")  # type: ignore[union-attr]
    importlib.reload(color)  # colours depend on whether stdout is a terminal
    importlib.reload(ansible_vars)  # a random part of task ids, and their counter
