"""The YAML every run parses alike, parsed once in the fork server instead of in every run.

Each ansible-playbook parses Ansible's config definitions (`ansible/config/base.yml`, most of
`import ansible.constants`), the collection routing metadata (`ansible_builtin_runtime.yml`,
thousands of redirects) and the `meta/runtime.yml` of each collection it uses: together about
half of a one-task playbook's own CPU time. What comes out depends on the bytes alone and reads
no configuration, so the fork server parses the installed files ahead, keyed by their bytes. The
first parse of the same bytes in a run's process takes the parsed result, popped: the run's
copy-on-write copy of the server's, so what a run changes stays in that run, and a second parse
in the same process is done as usual. Any other bytes are parsed as usual.
"""

from __future__ import annotations

import contextlib
import os
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ansible_operator.runner.warm import notices

# The collections operator roles use, besides ansible.builtin.
PREPARSED_COLLECTIONS = ("kubernetes/core", "operator_sdk/util")


def install() -> None:
    """Parse the installed files now and serve each once per process afterwards. A hook that
    fails (this ansible-core lacks what it replaces) leaves runs parsing as usual, and says so."""
    for hook in (_install_config_definitions, _install_routing):
        try:
            hook()
        except Exception as err:
            notices.tell(
                "patch-failed", f"parsed-yaml, {hook.__name__}: {err!r}", patch="parsed-yaml"
            )


def _take_once(parse: Callable[[bytes], Any], files: list[bytes]) -> Callable[[bytes], Any]:
    """A parse of `files` done now; the returned function hands out each result once."""
    parsed: dict[bytes, Any] = {}
    for data in files:
        with contextlib.suppress(Exception):  # a broken file fails in the run, as usual
            parsed[data] = parse(data)
    return lambda data: parsed.pop(data, None)


def _install_config_definitions() -> None:
    """`ConfigManager._read_config_yaml_file(path)` (2.18 and 2.19) reads and parses a file."""
    from ansible.config import manager

    read = manager.ConfigManager._read_config_yaml_file
    definitions = Path(manager.__file__).with_name("base.yml")
    with contextlib.suppress(OSError):
        take = _take_once(lambda data: manager.yaml_load(data) or {}, [definitions.read_bytes()])

        def read_config_yaml_file(self: Any, yml_file: Any) -> Any:
            try:
                found = take(Path(os.fsdecode(yml_file)).read_bytes())
            except (OSError, TypeError):
                found = None
            return found if found is not None else read(self, yml_file)

        manager.ConfigManager._read_config_yaml_file = read_config_yaml_file  # type: ignore[method-assign]


def _install_routing() -> None:
    """`_meta_yml_to_dict(yaml_data, content_id)` parses routing metadata given as bytes."""
    from ansible.utils.collection_loader import _collection_finder

    parse = _collection_finder._meta_yml_to_dict
    take = _take_once(lambda data: parse(data, None), _installed_routing_files())

    def meta_yml_to_dict(yaml_data: Any, content_id: Any) -> Any:
        found = take(yaml_data) if isinstance(yaml_data, bytes) else None
        return found if found is not None else parse(yaml_data, content_id)

    _collection_finder._meta_yml_to_dict = meta_yml_to_dict


def _installed_routing_files() -> list[bytes]:
    files = []
    with contextlib.suppress(OSError):
        builtin = pkgutil.get_data("ansible.config", "ansible_builtin_runtime.yml")
        if builtin:
            files.append(builtin)
    for entry in sys.path:
        for collection in PREPARSED_COLLECTIONS:
            runtime = Path(entry) / "ansible_collections" / collection / "meta" / "runtime.yml"
            with contextlib.suppress(OSError):
                files.append(runtime.read_bytes())
    return files
