"""Plugin documentation parsed once and kept across warm runs.

Every ansible-playbook loads all connection, shell, become and callback plugins at its start and
parses the YAML documentation of each (and of its doc fragments) to learn their settings: about
a tenth of a one-task run's CPU time, the same every run. The parse depends on the text and the
file name it is attributed to alone (from 2.19, on the text and its tags: the `Origin` that names
the file, and whether it is trusted as a template), so the first run keeps each result, pickled,
in the fork server's cachedir under a key of ansible-core's version, the file name, the tags and
the text; later runs unpickle it (on 2.21, 1.4 ms instead of 4 ms for the local connection's;
tagged values pickle with their tags). An edited plugin has other text, so another key: it is
parsed anew.

`install()` replaces the `AnsibleLoader` that Ansible's plugin loader and doc fragments use (up to
2.18 called as `AnsibleLoader(text, file_name=...)`, from 2.19 passed to `yaml.load`), in the
process of a warm run only.
"""

from __future__ import annotations

import contextlib
import hashlib
import pickle
from typing import Any

from ansible_operator.runner.warm import cachedir


def install() -> None:
    """Make plugin documentation come from the cachedir, if one is set."""
    kept_in = cachedir.subdirectory("plugin-docs")
    if kept_in is None:
        return
    directory = kept_in  # not Optional: read in the class below
    from ansible.plugins import loader
    from ansible.release import __version__ as core_version
    from ansible.utils import plugin_docs

    parse = loader.AnsibleLoader

    class KeptDocs:
        """`AnsibleLoader(text, ...).get_single_data()`, from the kept parse if any."""

        def __init__(self, stream: Any, *args: Any, **kwargs: Any) -> None:
            self.stream, self.args, self.kwargs = stream, args, kwargs

        def get_single_data(self) -> Any:
            if not isinstance(self.stream, str) or self.args or set(self.kwargs) - {"file_name"}:
                return self._parse()  # vault secrets, or a stream: not kept
            file_name = str(self.kwargs.get("file_name"))
            key = "\0".join((core_version, file_name, _tags(self.stream), self.stream))
            entry = directory / hashlib.sha256(key.encode()).hexdigest()
            with contextlib.suppress(Exception):  # not kept yet, or unreadable: parsed below
                return pickle.loads(entry.read_bytes())
            data = self._parse()
            with contextlib.suppress(Exception):  # unpicklable or a full disk: not kept
                cachedir.write_atomically(entry, pickle.dumps(data))
            return data

        def dispose(self) -> None:
            """For `yaml.load` (2.19+); `_parse` disposes of the loader it makes."""

        def _parse(self) -> Any:
            parser = parse(self.stream, *self.args, **self.kwargs)
            try:
                return parser.get_single_data()
            finally:
                parser.dispose()

    loader.AnsibleLoader = plugin_docs.AnsibleLoader = KeptDocs  # type: ignore[misc,assignment]


def _tags(text: str) -> str:
    """The data tags of `text` (2.19+: where it comes from, whether it is trusted), as text."""
    try:
        from ansible.module_utils._internal._datatag import AnsibleTagHelper
    except ImportError:  # up to 2.18: no data tagging
        return ""
    return repr(sorted(repr(tag) for tag in AnsibleTagHelper.tags(text)))
