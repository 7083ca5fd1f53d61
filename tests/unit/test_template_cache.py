"""Templates compiled once and kept across warm runs (ansible-core 2.18): a kept template is
taken only where it would compile alike, and a compile that called a filter is not kept."""

from __future__ import annotations

import marshal
import os
from pathlib import Path

import pytest
from jinja2.utils import pass_context

from ansible_operator.runner.warm import cachedir, patches
from ansible_operator.runner.warm.patches import template_cache

pytestmark = [
    pytest.mark.ansible_core,
    pytest.mark.skipif(
        not patches.tested_here("template-cache"), reason="not tested here (patches.PATCHES)"
    ),
]


@pytest.fixture
def templar(tmp_path, monkeypatch):
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import AnsibleEnvironment, Templar

    monkeypatch.setattr(cachedir, "directory", str(tmp_path))
    monkeypatch.setattr(AnsibleEnvironment, "compile", AnsibleEnvironment.compile)
    template_cache.install()
    return Templar(loader=DataLoader(), variables={"x": 3, "words": ["b", "a"]})


def entries(templar) -> list:
    directory = Path(cachedir.directory) / "templates"
    return sorted(directory.iterdir()) if os.path.isdir(directory) else []


def test_a_template_is_kept_and_later_compiles_load_it(templar):
    assert templar.template("{{ x + 1 }}") == "4"
    [entry] = entries(templar)
    lookups, _ = marshal.loads(entry.read_bytes())
    assert lookups == []
    # A later compile of the same source comes from the kept file: planted code shows through.
    planted = templar.environment.compile("{{ x + 100 }}")
    entry.write_bytes(marshal.dumps((lookups, planted)))
    assert templar.template("{{ x + 1 }}") == "103"


def test_a_compile_that_called_a_filter_is_not_kept(templar):
    draws = {templar.template("{{ 1000000000 | random }}") for _ in range(5)}
    assert len(draws) > 1  # drawn at each render, as ansible-core does
    assert templar.template("{{ [3, 1] | sort }}") == [1, 3]
    assert entries(templar) == []
    assert templar.template("{{ words | sort }}") == ["a", "b"]  # not constant: kept
    assert len(entries(templar)) == 1


def test_a_kept_template_is_not_taken_once_its_filter_is_passed_something_else(templar):
    templar.environment.filters["bump"] = lambda value: value + 1
    assert templar.template("{{ x | bump }}") == "4"
    [entry] = entries(templar)
    assert marshal.loads(entry.read_bytes())[0] == [("filter", "bump", "")]

    @pass_context
    def bump(context, value):  # the generated call must now pass the context
        return context["x"] * 10 + value

    templar.environment.filters["bump"] = bump
    assert templar.template("{{ x | bump }}") == "33"


def test_the_compile_settings_are_in_the_key(templar):
    env = templar.environment
    key = template_cache.template_key(env, "{{ x }}", None, None)
    assert key is not None
    assert template_cache.template_key(env, "{{ x }} ", None, None) != key
    for changed in (
        env.overlay(variable_start_string="[[", variable_end_string="]]"),
        env.overlay(trim_blocks=False),
        env.overlay(keep_trailing_newline=True),
        env.overlay(optimized=False),
    ):
        assert template_cache.template_key(changed, "{{ x }}", None, None) != key
    assert template_cache.template_key(env, "{{ x }}", "name", None) != key
    # Extensions may parse and generate as they like: such an environment compiles as usual.
    with_do = env.overlay(extensions=["jinja2.ext.do"])
    assert template_cache.template_key(with_do, "{{ x }}", None, None) is None


def test_past_the_bound_templates_compile_as_usual(templar, monkeypatch):
    monkeypatch.setattr(template_cache, "MAX_KEPT", 2)
    assert [templar.template(f"{{{{ x * {n} }}}}") for n in range(1, 5)] == ["3", "6", "9", "12"]
    assert len(entries(templar)) == 2
    assert templar.template("{{ x * 4 }}") == "12"
