"""Each role's `defaults/main.yml` and its `meta/argument_specs.yml` say the same defaults.

Ansible validates a role's variables against the argument spec but takes their values from
`defaults/main.yml`, never from the spec's `default:`; and the CRDs are generated from the spec.
So a default written in only one of them, or differently in both, is a default the CR's schema
and the role disagree on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ROLES = sorted(p.parent.parent for p in (REPO / "roles").glob("*/meta/argument_specs.yml"))


def spec_defaults(role: Path) -> dict[str, dict[str, Any]]:
    """Per entry point, the options that have a default, with it."""
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())
    return {
        name: {
            option: details["default"]
            for option, details in (entry.get("options") or {}).items()
            if "default" in details
        }
        for name, entry in specs["argument_specs"].items()
    }


def spec_options(role: Path) -> set[str]:
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())
    return {
        option
        for entry in specs["argument_specs"].values()
        for option in (entry.get("options") or {})
    }


def role_defaults(role: Path) -> dict[str, Any]:
    path = role / "defaults" / "main.yml"
    return (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}


def test_every_example_role_has_an_argument_spec():
    assert [r.name for r in ROLES] == [
        "at",
        "etcdbackup",
        "etcdrestore",
        "etcdstore",
        "foo",
        "memcached",
        "memfin",
        "nginx",
        "prometheus",
        "servicemonitor",
    ]


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.name)
def test_the_spec_defaults_are_the_role_defaults(role):
    defaults = role_defaults(role)
    for entry, wanted in spec_defaults(role).items():
        for option, value in wanted.items():
            assert option in defaults, (
                f"{role.name}: {entry} gives {option} the default {value!r}, "
                "defaults/main.yml gives it none"
            )
            assert defaults[option] == value, (
                f"{role.name}: {option} defaults to {value!r} in the argument spec ({entry}) "
                f"and to {defaults[option]!r} in defaults/main.yml"
            )


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.name)
def test_a_role_default_of_an_option_is_in_its_spec(role):
    defaults = role_defaults(role)
    with_default = {option for entry in spec_defaults(role).values() for option in entry}
    for option in set(defaults) & spec_options(role):
        assert option in with_default, (
            f"{role.name}: defaults/main.yml gives {option} a default, its argument spec none"
        )


def test_a_disagreement_is_found(tmp_path):
    role = tmp_path / "r"
    (role / "meta").mkdir(parents=True)
    (role / "defaults").mkdir()
    (role / "meta" / "argument_specs.yml").write_text(
        "argument_specs:\n  main:\n    options:\n      size: {type: int, default: 1}\n"
    )
    (role / "defaults" / "main.yml").write_text("size: 2\n")
    with pytest.raises(AssertionError, match="size defaults to 1 in the argument spec"):
        test_the_spec_defaults_are_the_role_defaults(role)
