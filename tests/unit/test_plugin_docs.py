"""Plugin documentation kept across warm runs: parsed once per text and file name (and, from
ansible-core 2.19, the text's tags), else anew; each core's own call is made as Ansible makes it."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
import yaml
from ansible.plugins import loader
from ansible.utils import plugin_docs as ansible_plugin_docs

from ansible_operator.runner.warm import cachedir, patches
from ansible_operator.runner.warm.patches import plugin_docs

pytestmark = [
    pytest.mark.ansible_core,
    pytest.mark.skipif(
        not patches.tested_here("plugin-docs"), reason="not tested here (patches.PATCHES)"
    ),
]
DOC = "short_description: a plugin\noptions:\n  colour:\n    default: blue\n"
try:  # 2.19+: the text is tagged with where it comes from and passed to yaml.load
    from ansible._internal._datatag._tags import Origin, TrustedAsTemplate
except ImportError:  # up to 2.18: the file name is passed to the loader
    Origin = TrustedAsTemplate = None  # type: ignore[assignment,misc]


def parse(text: str, path: str, module: Any = loader, trusted: bool = True) -> Any:
    """What Ansible's plugin loader (or doc fragments, `module`) does with a plugin's docs."""
    if Origin is None:
        return module.AnsibleLoader(text, file_name=path).get_single_data()
    if trusted:
        text = TrustedAsTemplate().tag(text)
    return yaml.load(Origin(path=path).tag(text), Loader=module.AnsibleLoader)


def position(value: Any) -> tuple[str, int]:
    """The file and line a parsed value comes from."""
    if Origin is None:
        return value.ansible_pos[0], value.ansible_pos[1]
    origin = Origin.get_tag(value)
    return origin.path, origin.line_num


@pytest.fixture
def installed(tmp_path, monkeypatch):
    monkeypatch.setattr(cachedir, "directory", str(tmp_path))
    monkeypatch.setattr(loader, "AnsibleLoader", loader.AnsibleLoader)
    monkeypatch.setattr(ansible_plugin_docs, "AnsibleLoader", ansible_plugin_docs.AnsibleLoader)
    plugin_docs.install()
    return tmp_path / "plugin-docs"


def test_the_first_parse_is_kept_and_later_ones_take_it(installed):
    first = parse(DOC, "/p/colour.py")
    [entry] = installed.iterdir()
    assert pickle.loads(entry.read_bytes()) == first

    # What a later run gets comes from the kept file: planted data shows through.
    entry.write_bytes(pickle.dumps({"short_description": "planted"}))
    assert parse(DOC, "/p/colour.py", module=ansible_plugin_docs) == {
        "short_description": "planted"
    }


def test_a_kept_parse_keeps_positions_and_is_a_fresh_object(installed):
    first = parse(DOC, "/p/colour.py")
    again = parse(DOC, "/p/colour.py")
    assert again == first and again is not first
    assert position(again["options"]["colour"]) == position(first["options"]["colour"])
    assert position(again["options"]["colour"]) == ("/p/colour.py", 4)


def test_other_text_or_another_file_is_parsed_anew(installed):
    parse(DOC, "/p/colour.py")
    edited = parse(DOC.replace("blue", "red"), "/p/colour.py")
    assert edited["options"]["colour"]["default"] == "red"
    moved = parse(DOC, "/q/colour.py")
    assert position(moved["options"]["colour"]) == ("/q/colour.py", 4)
    assert len(list(installed.iterdir())) == 3


@pytest.mark.skipif(Origin is None, reason="ansible-core 2.18 tags nothing")
def test_text_with_other_tags_is_parsed_anew(installed):
    trusted = parse(DOC, "/p/colour.py")
    untrusted = parse(DOC, "/p/colour.py", trusted=False)
    assert len(list(installed.iterdir())) == 2
    assert TrustedAsTemplate.is_tagged_on(trusted["short_description"])
    assert not TrustedAsTemplate.is_tagged_on(untrusted["short_description"])


def test_without_a_directory_nothing_is_replaced(monkeypatch):
    monkeypatch.setattr(cachedir, "directory", None)
    before = loader.AnsibleLoader
    plugin_docs.install()
    assert loader.AnsibleLoader is before
