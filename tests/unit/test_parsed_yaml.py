"""The fork server's pre-parsed YAML: taken once per process for the same bytes, else parsed."""

from __future__ import annotations

import pkgutil
from pathlib import Path

import pytest
from ansible.config import manager
from ansible.module_utils.common.yaml import yaml_load
from ansible.utils.collection_loader import _collection_finder

from ansible_operator.runner.warm.patches import parsed_yaml

pytestmark = pytest.mark.ansible_core

BASE_YML = Path(manager.__file__).with_name("base.yml")


def counting(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[object]:
    """Replace owner.name by a wrapper that records each call's first argument (restored after)."""
    calls: list[object] = []
    original = getattr(owner, name)

    def wrapper(*args: object) -> object:
        calls.append(args[1] if isinstance(owner, type) else args[0])
        return original(*args)

    monkeypatch.setattr(owner, name, wrapper)
    return calls


def test_config_definitions_are_taken_once_then_read_as_usual(monkeypatch):
    reads = counting(monkeypatch, manager.ConfigManager, "_read_config_yaml_file")
    parsed_yaml.install()

    first = manager.ConfigManager()
    assert reads == [], "the first ConfigManager takes the pre-parsed definitions"
    second = manager.ConfigManager()
    assert len(reads) == 1, "a second one reads the file as usual"
    assert first._base_defs == second._base_defs
    assert first._base_defs is not second._base_defs
    assert "DEFAULT_ROLES_PATH" in first._base_defs


def test_other_definitions_are_read_as_usual(monkeypatch, tmp_path):
    reads = counting(monkeypatch, manager.ConfigManager, "_read_config_yaml_file")
    parsed_yaml.install()
    edited = tmp_path / "base.yml"
    definitions = yaml_load(BASE_YML.read_bytes())
    definitions["DEFAULT_ROLES_PATH"]["description"] = "edited"
    edited.write_text(__import__("yaml").safe_dump(definitions))

    config = manager.ConfigManager(defs_file=str(edited))
    assert reads == [str(edited)]
    assert config._base_defs["DEFAULT_ROLES_PATH"]["description"] == "edited"


def test_routing_metadata_is_taken_once_then_parsed_as_usual(monkeypatch):
    parses = counting(monkeypatch, _collection_finder, "_meta_yml_to_dict")
    parsed_yaml.install()
    ahead = len(parses)
    assert ahead >= 1, "the installed routing files were parsed ahead"
    builtin = pkgutil.get_data("ansible.config", "ansible_builtin_runtime.yml")

    first = _collection_finder._meta_yml_to_dict(builtin, ("ansible.builtin", "runtime.yml"))
    assert len(parses) == ahead, "the first parse of the same bytes takes the pre-parsed dict"
    second = _collection_finder._meta_yml_to_dict(builtin, ("ansible.builtin", "runtime.yml"))
    assert len(parses) == ahead + 1
    assert first == second and first is not second

    other = b"plugin_routing: {}\n"
    assert _collection_finder._meta_yml_to_dict(other, ("x.y", "runtime.yml")) == {
        "plugin_routing": {}
    }
    assert parses[-1] == other
