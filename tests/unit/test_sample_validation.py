"""Samples that stay valid: `generate crds` adds placeholders for what a CR must set, and
`--check` fails on a sample the API server would refuse, naming the sample, the field and the
rule. The CEL of the generated rules is evaluated by `scaffold.cel` (its verdicts against the
API server's: tests/e2e/test_crd_rules.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_operator import cli
from ansible_operator.scaffold import cel, cel_rules, samples

# --- the CEL the rules are written in ---------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "value", "holds"),
    [
        ("has(self.a) || has(self.b)", {"b": 1}, True),
        ("has(self.a) || has(self.b)", {}, False),
        ("!(has(self.a) && has(self.b))", {"a": 1, "b": 2}, False),
        ("(has(self.a) ? 1 : 0) + (has(self.b) ? 1 : 0) + (has(self.c) ? 1 : 0) <= 1", {"c": 0},
         True),
        ("(has(self.a) ? 1 : 0) + (has(self.b) ? 1 : 0) + (has(self.c) ? 1 : 0) <= 1",
         {"a": 0, "c": 0}, False),
        ('!(has(self.state) && self.state == "present") || has(self.path)', {"state": "absent"},
         True),
        ('!(has(self.state) && self.state == "present") || has(self.path)',
         {"state": "present"}, False),
        ("!(has(self.tls) && self.tls == true) || has(self.p)", {"tls": True}, False),
        ("!(has(self.ratio) && self.ratio == 1.0) || has(self.p)", {"ratio": 1}, False),
        ("!(has(self.size) && self.size == 0) || has(self.p)", {"size": False}, True),
        ('!(has(self.s) && self.s == "say \\"hi\\"") || has(self.p)', {"s": 'say "hi"'}, False),
        ("has(self.__namespace__) || has(self.user__dash__name)", {"user-name": "x"}, True),
        ("has(self.__namespace__)", {"namespace": "x"}, True),
    ],
)  # fmt: skip
def test_the_rules_cel(rule, value, holds):
    assert cel.holds(rule, value) is holds


@pytest.mark.parametrize(
    "rule",
    ["self.items.all(x, x > 0)", "size(self.name) > 1", "self.a", "has(self.a) ||", "self"],
)
def test_cel_outside_the_rules_is_refused_not_guessed(rule):
    with pytest.raises(cel.CelError):
        cel.holds(rule, {"a": 1, "items": [1], "name": "n"})


@pytest.mark.parametrize("name", ["namespace", "user-name", "a.b", "x/y", "a__b", "plain"])
def test_field_names_unescape_as_they_were_escaped(name):
    assert cel.field_name(cel_rules.cel_field(name)) == name


# --- a kind with required options and one-of rules -------------------------------------------

ARGUMENT_SPECS = """\
---
argument_specs:
  main:
    short_description: A cache.
    options:
      name:
        type: str
        required: true
      size:
        type: int
      replicas:
        type: int
      mode:
        type: str
        choices: [fast, slow]
      backend:
        type: dict
        options:
          host:
            type: str
            required: true
    mutually_exclusive: [[size, replicas]]
    required_one_of: [[size, replicas]]
    required_if: [[mode, slow, [backend]]]
"""


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A new kind whose argument spec now has required options and one-of rules."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["init", "--domain", "example.com", "--project-name", "op"]) == 0
    assert cli.main(["new-api", "--group", "cache", "--version", "v1", "--kind", "Cache"]) == 0
    (tmp_path / "roles/cache/meta/argument_specs.yml").write_text(ARGUMENT_SPECS)
    return tmp_path


SAMPLE = "config/samples/cache_v1_cache.yaml"


def test_generate_fills_placeholders_and_check_then_passes(project, capsys):
    capsys.readouterr()
    assert cli.main(["generate", "crds", "--check"]) == 1
    err = capsys.readouterr().err
    assert f"{SAMPLE} sets Cache/cache-sample: spec.exampleOption, no longer options" in err
    assert cli.main(["generate", "crds"]) == 0
    out = capsys.readouterr().out
    assert (
        f"filled {SAMPLE}: placeholders for Cache/cache-sample: spec.name (required), "
        "Cache/cache-sample: spec.size (one of size or replicas is required)"
    ) in out
    text = (project / SAMPLE).read_text()
    assert text.endswith(
        "spec:\n"
        "  name: example  # placeholder from the argument spec (required)\n"
        "  size: 1  # placeholder from the argument spec (one of size or replicas is required)\n"
    )
    assert cli.main(["generate", "crds", "--check"]) == 0
    assert "every sample valid" in capsys.readouterr().out


def test_a_pruned_sample_fails_the_check_naming_what_it_lacks(project, capsys):
    assert cli.main(["generate", "crds"]) == 0
    (project / SAMPLE).write_text(
        "apiVersion: cache.example.com/v1\nkind: Cache\nmetadata:\n  name: cache-sample\nspec:\n"
    )
    capsys.readouterr()
    assert cli.main(["generate", "crds", "--check"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        "ansible-operator generate crds --check: samples: "
        f"{SAMPLE} lacks Cache/cache-sample: spec.name (required), "
        "Cache/cache-sample: spec.size (one of size or replicas is required); "
        "run 'ansible-operator generate crds'"
    )


def test_a_sample_breaking_a_rule_fails_with_the_field_and_the_rule(project, capsys):
    assert cli.main(["generate", "crds"]) == 0
    (project / SAMPLE).write_text(
        "apiVersion: cache.example.com/v1\nkind: Cache\nmetadata:\n  name: cache-sample\n"
        "spec:\n  name: n\n  size: 1\n  replicas: 2\n  mode: medium\n"
    )
    capsys.readouterr()
    assert cli.main(["generate", "crds", "--check"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert f'{SAMPLE}: Cache/cache-sample: spec.mode: must be one of "fast", "slow"' in line
    assert (
        f"{SAMPLE}: Cache/cache-sample: spec: size and replicas are mutually exclusive "
        "(rule: !(has(self.size) && has(self.replicas)))"
    ) in line
    assert line.endswith("; fix the samples")
    # generate writes what it can and says, one line each, what it cannot fix
    assert cli.main(["generate", "crds"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (
        f"ansible-operator generate crds: {SAMPLE}: Cache/cache-sample: spec: size and replicas "
        "are mutually exclusive (rule: !(has(self.size) && has(self.replicas)))"
    )


def test_a_rule_is_filled_in_a_nested_object_and_comments_stay(project, capsys):
    assert cli.main(["generate", "crds"]) == 0
    (project / SAMPLE).write_text(
        "apiVersion: cache.example.com/v1\nkind: Cache\nmetadata:\n  name: cache-sample\n"
        "spec:\n  # mine\n  name: n  # as I like it\n  replicas: 2\n  mode: slow\n"
    )
    assert cli.main(["generate", "crds"]) == 0
    assert (
        (project / SAMPLE)
        .read_text()
        .endswith(
            "spec:\n  # mine\n  name: n  # as I like it\n  replicas: 2\n  mode: slow\n"
            "  backend:  # placeholder from the argument spec "
            "(backend is required when mode is slow)\n"
            "    host: example\n"
        )
    )


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "string", "default": "d"}, "d"),
        ({"type": "string", "enum": ["b", "a"]}, "b"),
        ({"type": "integer"}, 1),
        ({"type": "number"}, 1.0),
        ({"type": "boolean"}, False),
        ({"type": "array", "items": {"type": "string"}}, []),
        ({"x-kubernetes-int-or-string": True}, 1),
        (
            {
                "type": "object",
                "required": ["a"],
                "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
            },
            {"a": 1},
        ),
    ],
)
def test_a_placeholder_is_a_default_a_first_choice_or_an_example(schema, value):
    assert samples.placeholder(schema) == value
    assert samples.problems(value, schema) == []


def test_defaults_are_filled_in_before_the_check_as_the_api_server_does():
    schema = {
        "type": "object",
        "properties": {
            "limits": {
                "type": "object",
                "default": {},
                "properties": {"cpu": {"type": "integer", "default": 2}},
            },
            "size": {"type": "integer", "default": 1},
        },
        "x-kubernetes-validations": [{"rule": "has(self.size)", "message": "size"}],
    }
    assert samples.defaulted({"size": None}, schema) == {"size": 1, "limits": {"cpu": 2}}
    assert samples.problems(samples.defaulted({}, schema), schema) == []
