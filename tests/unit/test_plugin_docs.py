"""Plugin documentation kept across warm runs: parsed once per text and file name, else anew."""

from __future__ import annotations

import pickle

import pytest
from ansible.plugins import loader
from ansible.utils import plugin_docs as ansible_plugin_docs

from ansible_operator.runner.warm import cachedir, patches
from ansible_operator.runner.warm.patches import plugin_docs

pytestmark = pytest.mark.skipif(
    not patches.tested_here("plugin-docs"), reason="not tested here (patches.PATCHES)"
)
DOC = "short_description: a plugin\noptions:\n  colour:\n    default: blue\n"


@pytest.fixture
def installed(tmp_path, monkeypatch):
    monkeypatch.setattr(cachedir, "directory", str(tmp_path))
    monkeypatch.setattr(loader, "AnsibleLoader", loader.AnsibleLoader)
    monkeypatch.setattr(ansible_plugin_docs, "AnsibleLoader", ansible_plugin_docs.AnsibleLoader)
    plugin_docs.install()
    return tmp_path / "plugin-docs"


def test_the_first_parse_is_kept_and_later_ones_take_it(installed):
    first = loader.AnsibleLoader(DOC, file_name="/p/colour.py").get_single_data()
    [entry] = installed.iterdir()
    assert pickle.loads(entry.read_bytes()) == first

    # What a later run gets comes from the kept file: planted data shows through.
    entry.write_bytes(pickle.dumps({"short_description": "planted"}))
    assert ansible_plugin_docs.AnsibleLoader(DOC, file_name="/p/colour.py").get_single_data() == {
        "short_description": "planted"
    }


def test_a_kept_parse_keeps_positions_and_is_a_fresh_object(installed):
    first = loader.AnsibleLoader(DOC, file_name="/p/colour.py").get_single_data()
    again = loader.AnsibleLoader(DOC, file_name="/p/colour.py").get_single_data()
    assert again == first and again is not first
    assert again["options"]["colour"].ansible_pos == first["options"]["colour"].ansible_pos
    assert again["options"]["colour"].ansible_pos[0] == "/p/colour.py"


def test_other_text_or_another_file_is_parsed_anew(installed):
    loader.AnsibleLoader(DOC, file_name="/p/colour.py").get_single_data()
    edited = loader.AnsibleLoader(DOC.replace("blue", "red"), file_name="/p/colour.py")
    assert edited.get_single_data()["options"]["colour"]["default"] == "red"
    moved = loader.AnsibleLoader(DOC, file_name="/q/colour.py").get_single_data()
    assert moved["options"]["colour"].ansible_pos[0] == "/q/colour.py"
    assert len(list(installed.iterdir())) == 3


def test_without_a_directory_nothing_is_replaced(monkeypatch):
    monkeypatch.setattr(cachedir, "directory", None)
    before = loader.AnsibleLoader
    plugin_docs.install()
    assert loader.AnsibleLoader is before
