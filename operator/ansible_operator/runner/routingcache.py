"""Ansible's collection routing metadata, parsed once in the fork server instead of in every run.

Each ansible-playbook parses `ansible_builtin_runtime.yml` (thousands of redirects, in YAML) and
the `meta/runtime.yml` of each collection it uses: about half of a one-task playbook's own time.
The result depends on those bytes alone (ansible-core's collection loader lets this step be
replaced for caching, by content), so the fork server parses the installed files ahead, and the
first request of a run for the same bytes gets the parsed dict: the run's copy-on-write copy of
the server's, so what a run changes stays in that run. Anything else is parsed as usual.
"""

from __future__ import annotations

import contextlib
import pkgutil
import sys
from pathlib import Path
from typing import Any

# The collections operator roles use, besides ansible.builtin.
PREPARSED_COLLECTIONS = ("kubernetes/core", "operator_sdk/util")


def install() -> None:
    """Parse the installed routing files now; serve each once per process afterwards."""
    from ansible.utils.collection_loader import _collection_finder

    parse = _collection_finder._meta_yml_to_dict
    parsed: dict[bytes, Any] = {}
    for data in _installed_routing_files():
        with contextlib.suppress(Exception):  # a broken file fails in the run, as usual
            parsed[data] = parse(data, None)

    def meta_yml_to_dict(yaml_data: Any, content_id: Any) -> Any:
        found = parsed.pop(yaml_data, None) if isinstance(yaml_data, bytes) else None
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
