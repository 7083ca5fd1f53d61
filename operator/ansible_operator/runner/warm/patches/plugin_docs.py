"""Plugin documentation parsed once and kept across warm runs (ansible-core 2.18).

Every ansible-playbook loads all connection, shell, become and callback plugins at its start and
parses the YAML documentation of each (and of its doc fragments) to learn their settings: about
a tenth of a one-task run's CPU time, the same every run. The parse depends on the text and the
file name it is attributed to alone, so the first run keeps each result, pickled, in the fork
server's cachedir.directory under a key of ansible-core's version, the file name and the text; later
runs unpickle it. An edited plugin has other text, so another key: it is parsed anew.

`install()` replaces the `AnsibleLoader` that Ansible's plugin loader and doc fragments use, in
the process of a warm run only. ansible-core 2.19 parses documentation with tagged origins
through another call; there every run parses it itself, as a cold run does.
"""

from __future__ import annotations

import contextlib
import hashlib
import pickle
from typing import Any

from ansible_operator.runner.warm import cachedir


def install() -> None:
    """Make plugin documentation come from cachedir.directory, if one is set (2.18 only)."""
    kept_in = cachedir.subdirectory("plugin-docs")
    if kept_in is None:
        return
    directory = kept_in  # not Optional: read in the class below
    from ansible.plugins import loader
    from ansible.release import __version__ as core_version
    from ansible.utils import plugin_docs

    parse = loader.AnsibleLoader

    class KeptDocs:
        """`AnsibleLoader(text, file_name=...).get_single_data()`, from the kept parse if any."""

        def __init__(self, stream: Any, file_name: Any = None, vault_secrets: Any = None) -> None:
            self.stream, self.file_name, self.vault_secrets = stream, file_name, vault_secrets

        def get_single_data(self) -> Any:
            if not isinstance(self.stream, str) or self.vault_secrets is not None:
                return self._parse()
            key = "\0".join((core_version, str(self.file_name), self.stream))
            entry = directory / hashlib.sha256(key.encode()).hexdigest()
            with contextlib.suppress(Exception):  # not kept yet, or unreadable: parsed below
                return pickle.loads(entry.read_bytes())
            data = self._parse()
            with contextlib.suppress(Exception):  # unpicklable or a full disk: not kept
                cachedir.write_atomically(entry, pickle.dumps(data))
            return data

        def _parse(self) -> Any:
            return parse(self.stream, self.file_name, self.vault_secrets).get_single_data()

    loader.AnsibleLoader = plugin_docs.AnsibleLoader = KeptDocs  # type: ignore[misc,assignment]
