"""watches.yaml loading: fields and defaults, coercion, role search, validation messages."""

from __future__ import annotations

import dataclasses
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ansible_operator.core.selectors import LabelSelector
from ansible_operator.core.watches import (
    GVK,
    Finalizer,
    RoleSearch,
    Watch,
    WatchesError,
)
from ansible_operator.core.watches_parser import expand_env, parse_watches
from ansible_operator.project import load_watches, resolve_role, role_candidates

MEMCACHED = GVK("cache.example.com", "v1alpha1", "Memcached")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project dir with roles/memcached, roles/finalizer and playbook.yml."""
    (tmp_path / "roles" / "memcached" / "tasks").mkdir(parents=True)
    (tmp_path / "roles" / "finalizer" / "tasks").mkdir(parents=True)
    (tmp_path / "playbook.yml").write_text("- hosts: localhost\n")
    (tmp_path / "home").mkdir()
    return tmp_path


def _env(project: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(project / "home"), **extra}


def write(project: Path, text: str) -> Path:
    path = project / "watches.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def load(project: Path, text: str, **env: str) -> list[Watch]:
    return load_watches(write(project, text), environ=_env(project, **env), cwd=project)


def load_error(project: Path, text: str, **env: str) -> str:
    with pytest.raises(WatchesError) as excinfo:
        load(project, text, **env)
    message = str(excinfo.value)
    assert "\n" not in message
    return message


# --- GVK --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gvk", "text", "api_version", "group_kind"),
    [
        (
            MEMCACHED,
            "cache.example.com/v1alpha1, Kind=Memcached",
            "cache.example.com/v1alpha1",
            "Memcached.cache.example.com",
        ),
        (GVK("", "v1", "Secret"), "/v1, Kind=Secret", "v1", "Secret"),
    ],
)
def test_gvk_forms(gvk: GVK, text: str, api_version: str, group_kind: str) -> None:
    assert str(gvk) == text
    assert gvk.api_version == api_version
    assert gvk.group_kind == group_kind
    assert GVK.from_api_version(api_version, gvk.kind) == gvk


# --- fields and defaults ----------------------------------------------------------------------


def test_defaults(project: Path) -> None:
    [watch] = load(
        project,
        """
        - version: v1alpha1
          group: cache.example.com
          kind: Memcached
          role: memcached
        """,
    )
    assert watch == Watch(gvk=MEMCACHED, role=str(project / "roles" / "memcached"))
    assert watch.max_runner_artifacts == 20
    assert watch.reconcile_period is None
    assert watch.manage_status is True
    assert watch.watch_dependent_resources is True
    assert watch.watch_cluster_scoped_resources is False
    assert watch.snake_case_parameters is True
    assert watch.watch_annotations_changes is False
    assert watch.mark_unsafe is None
    assert watch.marks_spec_unsafe is True
    assert watch.blacklist == ()
    assert watch.finalizer is None
    assert watch.selector.is_empty
    assert watch.run_timeout is None
    assert watch.ansible_path == str(project / "roles" / "memcached")
    assert not watch.is_playbook


def test_every_field(project: Path) -> None:
    [watch] = load(
        project,
        """
        - version: v1alpha1
          group: cache.example.com
          kind: Memcached
          playbook: playbook.yml
          role: memcached
          vars:
            meta: '{{ ansible_operator_meta }}'
            nested: {a: [1, two]}
          maxRunnerArtifacts: 7
          reconcilePeriod: 1m30s
          manageStatus: false
          watchDependentResources: false
          watchClusterScopedResources: true
          snakeCaseParameters: false
          watchAnnotationsChanges: true
          markUnsafe: false
          runTimeout: 10m
          blacklist:
            - group: apps
              version: v1
              kind: Deployment
            - version: v1
              kind: Secret
          finalizer:
            name: cache.example.com/finalizer
            role: finalizer
            vars:
              state: absent
          selector:
            matchLabels:
              app: memcached
            matchExpressions:
              - key: tier
                operator: In
                values: [cache]
        """,
    )
    assert watch == Watch(
        gvk=MEMCACHED,
        role=str(project / "roles" / "memcached"),
        playbook=str(project / "playbook.yml"),
        vars={"meta": "{{ ansible_operator_meta }}", "nested": {"a": [1, "two"]}},
        max_runner_artifacts=7,
        reconcile_period=90.0,
        manage_status=False,
        watch_dependent_resources=False,
        watch_cluster_scoped_resources=True,
        snake_case_parameters=False,
        watch_annotations_changes=True,
        mark_unsafe=False,
        blacklist=(GVK("apps", "v1", "Deployment"), GVK("", "v1", "Secret")),
        finalizer=Finalizer(
            name="cache.example.com/finalizer",
            role=str(project / "roles" / "finalizer"),
            vars={"state": "absent"},
        ),
        selector=LabelSelector.parse(
            {
                "matchLabels": {"app": "memcached"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["cache"]}],
            }
        ),
        run_timeout=600.0,
    )
    # The playbook wins over the role.
    assert watch.is_playbook
    assert watch.ansible_path == str(project / "playbook.yml")
    assert watch.marks_spec_unsafe is False
    assert watch.is_blacklisted(GVK("apps", "v1", "Deployment"))
    assert not watch.is_blacklisted(GVK("apps", "v1beta1", "Deployment"))


@pytest.mark.parametrize(
    ("snippet", "attribute", "expected"),
    [
        # Keys match case-insensitively (Go encoding/json).
        ("ManageStatus: false", "manage_status", False),
        ("managestatus: false", "manage_status", False),
        ("MAXRUNNERARTIFACTS: 3", "max_runner_artifacts", 3),
        ("ReconcilePeriod: 5s", "reconcile_period", 5.0),
        # The later of two spellings wins.
        ("manageStatus: false\n  ManageStatus: true", "manage_status", True),
        # YAML 1.1 booleans.
        ("manageStatus: no", "manage_status", False),
        ("manageStatus: off", "manage_status", False),
        ("watchAnnotationsChanges: yes", "watch_annotations_changes", True),
        ("watchAnnotationsChanges: on", "watch_annotations_changes", True),
        ("watchAnnotationsChanges: True", "watch_annotations_changes", True),
        # null means "not set".
        ("manageStatus: null", "manage_status", True),
        ("markUnsafe: null", "mark_unsafe", None),
        ("markUnsafe: true", "mark_unsafe", True),
        ("markUnsafe: false", "mark_unsafe", False),
        ("kstatusConditions: null", "kstatus_conditions", None),
        ("kstatusConditions: false", "kstatus_conditions", False),
        ("kstatusConditions: yes", "kstatus_conditions", True),
        ("stallAfterFailures: null", "stall_after_failures", None),
        ("stallAfterFailures: 3", "stall_after_failures", 3),
        ("hold: null", "hold", False),
        ("hold: true", "hold", True),
        ("maxRunnerArtifacts: 0", "max_runner_artifacts", 20),
        ("maxRunnerArtifacts: null", "max_runner_artifacts", 20),
        ("maxRunnerArtifacts: -1", "max_runner_artifacts", -1),
        ("maxRunnerArtifacts: 0x10", "max_runner_artifacts", 16),
        ("reconcilePeriod: '0'", "reconcile_period", None),
        ("reconcilePeriod: 0s", "reconcile_period", None),
        ("reconcilePeriod: '1h'", "reconcile_period", 3600.0),
        ("reconcilePeriod: -1s", "reconcile_period", -1.0),
        ("runTimeout: 0s", "run_timeout", None),
        ("runTimeout: 1h30m", "run_timeout", 5400.0),
        ("maxVerbosity: null", "max_verbosity", None),
        ("maxVerbosity: 0", "max_verbosity", 0),
        ("maxVerbosity: 7", "max_verbosity", 7),
        ("vars: null", "vars", {}),
        ("vars: {2: two, true: yes, 2.5: x}", "vars", {"2": "two", "true": True, "2.5": "x"}),
        # Timestamps stay strings, as go-yaml v2 leaves them.
        ("vars: {when: 2001-12-14}", "vars", {"when": "2001-12-14"}),
        # Plain scalars are typed as go-yaml v2 types them: no base-60, exponents are floats.
        (
            "vars: {at: 12:30, big: 1e3, hex: 0x1F}",
            "vars",
            {"at": "12:30", "big": 1000.0, "hex": 31},
        ),
        ("blacklist: null", "blacklist", ()),
        ("finalizer: null", "finalizer", None),
        (
            "allowReservedVars: [ansible_port, ansible_user]",
            "allow_reserved_vars",
            ("ansible_port", "ansible_user"),
        ),
        ("allowreservedvars: [ansible_port]", "allow_reserved_vars", ("ansible_port",)),
        # Unknown keys, including upstream's no-op ones, are ignored.
        ("maxWorkers: 4", "vars", {}),
        ("ansibleVerbosity: 7", "vars", {}),
        ("somethingElse: {a: b}", "vars", {}),
    ],
)
def test_field_parsing(project: Path, snippet: str, attribute: str, expected: Any) -> None:
    [watch] = load(
        project,
        f"""
- version: v1alpha1
  group: cache.example.com
  kind: Memcached
  role: memcached
  {snippet}
""",
    )
    assert getattr(watch, attribute) == expected


@pytest.mark.parametrize(
    ("group", "version", "kind", "expected"),
    [
        ("cache.example.com", "1", "Memcached", GVK("cache.example.com", "1", "Memcached")),
        ("cache.example.com", "1.0", "Memcached", GVK("cache.example.com", "1", "Memcached")),
        ("cache.example.com", "1.5", "Memcached", GVK("cache.example.com", "1.5", "Memcached")),
        (
            "cache.example.com",
            "1e6",
            "Memcached",
            GVK("cache.example.com", "1e+06", "Memcached"),
        ),
        (
            "cache.example.com",
            "0.00001",
            "Memcached",
            GVK("cache.example.com", "1e-05", "Memcached"),
        ),
        (
            "cache.example.com",
            "123456",
            "Memcached",
            GVK("cache.example.com", "123456", "Memcached"),
        ),
        ("true", "v1", "Memcached", GVK("true", "v1", "Memcached")),
        ("yes", "v1", "Memcached", GVK("true", "v1", "Memcached")),
        ("''", "v1", "Secret", GVK("", "v1", "Secret")),
        ("null", "v1", "Secret", GVK("", "v1", "Secret")),
    ],
)
def test_string_coercion(project: Path, group: str, version: str, kind: str, expected: GVK) -> None:
    [watch] = load(
        project,
        f"""
        - group: {group}
          version: {version}
          kind: {kind}
          role: memcached
        """,
    )
    assert watch.gvk == expected


def test_playbook_paths(project: Path) -> None:
    (project / "sub").mkdir()
    (project / "sub" / "site.yml").write_text("[]\n")
    watches = load(
        project,
        f"""
        - {{version: v1, kind: A, playbook: sub/site.yml}}
        - {{version: v1, kind: B, playbook: ./sub/../playbook.yml}}
        - {{version: v1, kind: C, playbook: {project / "playbook.yml"}}}
        """,
    )
    assert [w.playbook for w in watches] == [
        str(project / "sub" / "site.yml"),
        str(project / "playbook.yml"),
        str(project / "playbook.yml"),
    ]


def test_cwd_defaults_to_process_cwd(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    path = write(project, "- {version: v1, kind: A, role: memcached}\n")
    [watch] = load_watches(path, environ=_env(project))
    assert watch.role == str(project / "roles" / "memcached")


def test_same_kind_and_version_in_two_groups_is_allowed(project: Path) -> None:
    watches = load(
        project,
        """
        - {group: a.example.com, version: v1, kind: Thing, role: memcached}
        - {group: b.example.com, version: v1, kind: Thing, role: memcached}
        """,
    )
    assert [w.gvk.group for w in watches] == ["a.example.com", "b.example.com"]


def test_empty_list(project: Path) -> None:
    assert load(project, "[]\n") == []


# --- environment expansion --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${ROLE}", "memcached"),
        ("$ROLE", "memcached"),
        ("pre-${ROLE}-post", "pre-memcached-post"),
        ("$ROLE_x", "$ROLE_x"),  # the name is ROLE_x, which is not defined
        ("${ROLE}_x", "memcached_x"),
        ("${EMPTY}", ""),
        ("${UNDEFINED}", "${UNDEFINED}"),
        ("$UNDEFINED", "$UNDEFINED"),
        ("$$", "$$"),
        ("$$ROLE", "$$ROLE"),
        ("$1", "$1"),
        ("${1}", "${1}"),
        ("$", "$"),
        ("a $ b", "a $ b"),
        ("${a-b}", "${a-b}"),
        ("${ROLE:-x}", "${ROLE:-x}"),
        ("${", "${"),
        ("${ROLE", "${ROLE"),
        ("price: $5", "price: $5"),
        ("$ROLE$ROLE", "memcachedmemcached"),
    ],
)
def test_expand_env(text: str, expected: str) -> None:
    assert expand_env(text, {"ROLE": "memcached", "EMPTY": ""}) == expected


def test_expansion_applies_to_the_whole_file(project: Path) -> None:
    [watch] = load(
        project,
        """
        - version: ${VERSION}
          group: cache.example.com
          kind: Memcached
          role: $ROLE_NAME
          vars:
            password: 'pa$$word'
            template: '${UNSET_VAR}'
            shell: 'echo $1'
        """,
        VERSION="v1alpha1",
        ROLE_NAME="memcached",
    )
    assert watch.gvk == MEMCACHED
    assert watch.role == str(project / "roles" / "memcached")
    assert watch.vars == {"password": "pa$$word", "template": "${UNSET_VAR}", "shell": "echo $1"}


# --- role resolution --------------------------------------------------------------------------


def _mkrole(path: Path) -> str:
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def test_role_candidates_order(project: Path) -> None:
    env = {
        "HOME": "/home/u",
        "ANSIBLE_ROLES_PATH": "/r1:rel",
        "ANSIBLE_COLLECTIONS_PATH": "/c1:/c2",
    }
    assert role_candidates("ns.coll.role", environ=env, cwd=str(project)) == [
        "/c1/ansible_collections/ns/coll/roles/role",
        "/c2/ansible_collections/ns/coll/roles/role",
        "/r1/ns.coll.role",
        "/r1/roles/ns.coll.role",
        f"{project}/rel/ns.coll.role",
        f"{project}/rel/roles/ns.coll.role",
        f"{project}/roles/ns.coll.role",
    ]


@pytest.mark.parametrize(
    ("env", "expected_roots"),
    [
        ({"HOME": "/home/u"}, ["/usr/share/ansible/collections", "/home/u/.ansible/collections"]),
        (
            {"HOME": "/home/u", "ANSIBLE_COLLECTIONS_PATH": ""},
            ["/usr/share/ansible/collections", "/home/u/.ansible/collections"],
        ),
        ({}, ["/usr/share/ansible/collections"]),
        ({"ANSIBLE_COLLECTIONS_PATH": "~/colls", "HOME": "/home/u"}, ["/home/u/colls"]),
    ],
)
def test_default_collections_path(
    project: Path, env: dict[str, str], expected_roots: list[str]
) -> None:
    candidates = role_candidates("a.b.c", environ=env, cwd=str(project))
    assert candidates == [f"{root}/ansible_collections/a/b/roles/c" for root in expected_roots] + [
        f"{project}/roles/a.b.c"
    ]


def test_role_candidates_plain_and_absolute(project: Path) -> None:
    assert role_candidates("/abs/role", environ={}, cwd=str(project)) == ["/abs/role"]
    assert role_candidates("two.parts", environ={}, cwd=str(project)) == [
        f"{project}/roles/two.parts"
    ]
    assert role_candidates("a.b.c.d", environ={}, cwd=str(project)) == [f"{project}/roles/a.b.c.d"]


@pytest.mark.parametrize(
    ("existing", "env_keys", "winner"),
    [
        # Only <cwd>/roles/<role>.
        (["roles/myrole"], {}, "roles/myrole"),
        # ANSIBLE_ROLES_PATH <p>/<role> beats <p>/roles/<role> beats <cwd>/roles/<role>.
        (
            ["rp/myrole", "rp/roles/myrole", "roles/myrole"],
            {"ANSIBLE_ROLES_PATH": "rp"},
            "rp/myrole",
        ),
        (["rp/roles/myrole", "roles/myrole"], {"ANSIBLE_ROLES_PATH": "rp"}, "rp/roles/myrole"),
        # Entries are tried in order.
        (["rp2/myrole", "rp1/roles/myrole"], {"ANSIBLE_ROLES_PATH": "rp1:rp2"}, "rp1/roles/myrole"),
        (["rp2/myrole"], {"ANSIBLE_ROLES_PATH": "rp1:rp2"}, "rp2/myrole"),
        (["roles/myrole"], {"ANSIBLE_ROLES_PATH": "rp1"}, "roles/myrole"),
    ],
)
def test_role_search(
    project: Path, existing: list[str], env_keys: dict[str, str], winner: str
) -> None:
    for rel in existing:
        _mkrole(project / rel)
    found = resolve_role("myrole", environ=_env(project, **env_keys), cwd=str(project))
    assert found == str(project / winner)


def test_fqcn_role_from_collections(project: Path) -> None:
    colls = project / "colls"
    expected = _mkrole(colls / "ansible_collections" / "ns" / "coll" / "roles" / "thing")
    _mkrole(project / "roles" / "ns.coll.thing")  # loses to the collection
    [watch] = load(
        project,
        "- {version: v1, kind: A, role: ns.coll.thing}\n",
        ANSIBLE_COLLECTIONS_PATH=f"/nonexistent:{colls}",
    )
    assert watch.role == expected


def test_fqcn_role_from_home_collections(project: Path) -> None:
    expected = _mkrole(
        project
        / "home"
        / ".ansible"
        / "collections"
        / "ansible_collections"
        / "ns"
        / "coll"
        / "roles"
        / "r"
    )
    [watch] = load(project, "- {version: v1, kind: A, role: ns.coll.r}\n")
    assert watch.role == expected


def test_absolute_role(project: Path) -> None:
    role = _mkrole(project / "elsewhere" / "myrole")
    [watch] = load(project, f"- {{version: v1, kind: A, role: {role}}}\n")
    assert watch.role == role


def test_finalizer_role_and_playbook_resolution(project: Path) -> None:
    watches = load(
        project,
        """
        - version: v1
          kind: A
          role: memcached
          finalizer: {name: f, playbook: playbook.yml}
        - version: v1
          kind: B
          role: memcached
          finalizer: {name: f, role: finalizer}
        - version: v1
          kind: C
          role: memcached
          finalizer: {name: f, vars: {x: 1}}
        """,
    )
    assert [w.finalizer for w in watches] == [
        Finalizer(name="f", playbook=str(project / "playbook.yml")),
        Finalizer(name="f", role=str(project / "roles" / "finalizer")),
        Finalizer(name="f", vars={"x": 1}),
    ]


# --- validation messages ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "- {group: cache.example.com, kind: Memcached, role: memcached}\n",
            "watches.yaml:1: entry 1: invalid GVK: cache.example.com/, Kind=Memcached: "
            "version must not be empty",
        ),
        (
            "- {group: cache.example.com, version: v1, role: memcached}\n",
            "watches.yaml:1: entry 1: invalid GVK: cache.example.com/v1, Kind=: "
            "kind must not be empty",
        ),
        (
            "- {version: v1, kind: A, role: memcached}\n"
            "- {version: v1, kind: A, playbook: playbook.yml}\n",
            "watches.yaml:2: entry 2 (/v1, Kind=A): duplicate GVK: /v1, Kind=A "
            "(first defined in entry 1)",
        ),
        (
            "- {version: v1, kind: A, role: nosuchrole}\n",
            "@ role: nosuchrole was not found (looked in {project}/roles/nosuchrole)",
        ),
        (
            "- {version: v1, kind: A, playbook: missing.yml, role: memcached}\n",
            "@ playbook: {project}/missing.yml was not found",
        ),
        (
            "- {version: v1, kind: A}\n",
            "@ must specify Role or Playbook",
        ),
        (
            "- {version: v1, kind: A, role: ''}\n",
            "@ must specify Role or Playbook",
        ),
        (
            "- {version: v1, kind: A, role: memcached, finalizer: {role: finalizer}}\n",
            "@ finalizer must have name",
        ),
        (
            "- {version: v1, kind: A, role: memcached, finalizer: {name: f}}\n",
            "@ must specify Role or Playbook",
        ),
        (
            "- {version: v1, kind: A, role: memcached, finalizer: {name: f, role: nope}}\n",
            "@ role: nope was not found (looked in {project}/roles/nope)",
        ),
        (
            "- {version: v1, kind: A, role: memcached, finalizer: {name: f, playbook: nope.yml}}\n",
            "@ playbook: {project}/nope.yml was not found",
        ),
        (
            "- {version: v1, kind: A, role: memcached, finalizer: {name: f, vars: {}}}\n",
            "@ must specify Role or Playbook",
        ),
        (
            "- {version: v1, kind: A, role: memcached, reconcilePeriod: 30}\n",
            '@ reconcilePeriod must be a Go duration string such as "30s" '
            'or "1h" (quoted), got number 30',
        ),
        (
            "- {version: v1, kind: A, role: memcached, reconcilePeriod: 0}\n",
            '@ reconcilePeriod must be a Go duration string such as "30s" '
            'or "1h" (quoted), got number 0',
        ),
        (
            "- {version: v1, kind: A, role: memcached, reconcilePeriod: 1d}\n",
            '@ reconcilePeriod: time: unknown unit "d" in duration "1d"',
        ),
        (
            "- {version: v1, kind: A, role: memcached, reconcilePeriod: soon}\n",
            '@ reconcilePeriod: time: invalid duration "soon"',
        ),
        (
            "- {version: v1, kind: A, role: memcached, runTimeout: 5}\n",
            '@ runTimeout must be a Go duration string such as "30s" '
            'or "1h" (quoted), got number 5',
        ),
        (
            "- {version: v1, kind: A, role: memcached, runTimeout: -5s}\n",
            "@ runTimeout must not be negative, got '-5s'",
        ),
        (
            "- {version: v1, kind: A, role: memcached, maxVerbosity: 8}\n",
            "@ maxVerbosity must be 0 to 7, got 8",
        ),
        (
            "- {version: v1, kind: A, role: memcached, maxVerbosity: '3'}\n",
            "@ maxVerbosity must be an integer, got string '3'",
        ),
        (
            "- {version: v1, kind: A, role: memcached, manageStatus: 'false'}\n",
            "@ manageStatus must be a boolean (true/false, unquoted), got string 'false'",
        ),
        (
            "- {version: v1, kind: A, role: memcached, markUnsafe: 1}\n",
            "@ markUnsafe must be a boolean (true/false, unquoted), got number 1",
        ),
        (
            "- {version: v1, kind: A, role: memcached, stallAfterFailures: 0}\n",
            "@ stallAfterFailures must be at least 1, got 0",
        ),
        (
            "- {version: v1, kind: A, role: memcached, kstatusConditions: sometimes}\n",
            "@ kstatusConditions must be a boolean (true/false, unquoted), got string 'sometimes'",
        ),
        (
            "- {version: v1, kind: A, role: memcached, maxRunnerArtifacts: '5'}\n",
            "@ maxRunnerArtifacts must be an integer, got string '5'",
        ),
        (
            "- {version: v1, kind: A, role: memcached, maxRunnerArtifacts: 2.5}\n",
            "@ maxRunnerArtifacts must be an integer, got number 2.5",
        ),
        (
            "- {version: v1, kind: A, role: [memcached]}\n",
            "@ role must be a string, got list",
        ),
        (
            "- {version: [v1], kind: A, role: memcached}\n",
            "watches.yaml:1: entry 1: version must be a string, got list",
        ),
        (
            "- {version: v1, kind: A, role: memcached, vars: [a, b]}\n",
            "@ vars must be a mapping, got list",
        ),
        (
            "- {version: v1, kind: A, role: memcached, vars: {x: .nan}}\n",
            "@ vars.x: nan cannot be represented in JSON",
        ),
        (
            "- {version: v1, kind: A, role: memcached, allowReservedVars: ansible_port}\n",
            "@ allowReservedVars must be a list of variable names, got string",
        ),
        (
            "- {version: v1, kind: A, role: memcached, allowReservedVars: [ansible_port, 8]}\n",
            "@ allowReservedVars[1] must be a variable name, got number",
        ),
        (
            "- {version: v1, kind: A, role: memcached, allowReservedVars: [port]}\n",
            "@ allowReservedVars[0]: 'port' is not a reserved variable: only ansible_* names "
            "other than ansible_operator_meta are refused, so only they can be allowed",
        ),
        (
            "- {version: v1, kind: A, role: memcached, blacklist: {kind: B}}\n",
            "@ blacklist must be a list, got mapping",
        ),
        (
            "- {version: v1, kind: A, role: memcached, blacklist: [Deployment]}\n",
            "@ blacklist[0] must be a mapping, got string",
        ),
        (
            "- {version: v1, kind: A, role: memcached, finalizer: cleanup}\n",
            "@ finalizer must be a mapping, got string",
        ),
        (
            "- {version: v1, kind: A, role: memcached,\n"
            "   selector: {matchExpressions: [{key: a, operator: Equals}]}}\n",
            '@ selector: matchExpressions[0]: "Equals" is not a valid label selector operator',
        ),
        (
            "- {version: v1, kind: A, role: memcached,\n"
            "   selector: {matchExpressions: [{key: a, operator: In}]}}\n",
            "@ selector: matchExpressions[0]: for 'in', 'notin' "
            "operators, values set can't be empty",
        ),
        (
            "- just a string\n",
            "watches.yaml:1: entry 1: must be a mapping with group, version and kind, got string",
        ),
        (
            "version: v1\nkind: A\n",
            "watches.yaml:1: top level must be a list of watches, got mapping",
        ),
        ("just text\n", "watches.yaml:1: top level must be a list of watches, got string"),
        ("", "watches.yaml: no watches: expected a list of entries with group/version/kind"),
        (
            "# only a comment\n",
            "watches.yaml: no watches: expected a list of entries with group/version/kind",
        ),
        (
            "- version: v1\n  kind: A\n   role: x\n",
            "watches.yaml:3:8: invalid YAML: mapping values are not allowed here",
        ),
        (
            "- {version: v1, kind: A\n",
            "watches.yaml:2:1: invalid YAML: expected ',' or '}', but got '<stream end>'",
        ),
        ("- version: 'v1\n", "watches.yaml:2:1: invalid YAML: found unexpected end of stream"),
        (
            "- version: v1\n\tkind: A\n",
            "watches.yaml:2:1: invalid YAML: found character '\\t' that cannot start any token",
        ),
        (
            "- a: b\n - c\n",
            "watches.yaml:2:2: invalid YAML: "
            "expected <block end>, but found '<block sequence start>'",
        ),
    ],
)
def test_validation_messages(project: Path, text: str, message: str) -> None:
    # "@ " abbreviates the usual location of the one entry in these files.
    message = message.replace("@ ", "watches.yaml:1: entry 1 (/v1, Kind=A): ", 1)
    expected = f"{project}/" + message.replace("{project}", str(project))
    assert load_error(project, text) == expected


def test_error_names_line_and_index_of_later_entry(project: Path) -> None:
    message = load_error(
        project,
        """
        # a comment
        - version: v1alpha1
          group: cache.example.com
          kind: Memcached
          role: memcached

        - version: v1alpha1
          group: cache.example.com
          kind: Other
          role: missing
        """,
    )
    assert message == (
        f"{project}/watches.yaml:7: entry 2 (cache.example.com/v1alpha1, Kind=Other): "
        f"role: missing was not found (looked in {project}/roles/missing)"
    )


def test_error_attributes(project: Path) -> None:
    with pytest.raises(WatchesError) as excinfo:
        load(project, "- {version: v1, kind: A, role: nope}\n")
    error = excinfo.value
    assert error.path == str(project / "watches.yaml")
    assert error.index == 0
    assert error.gvk == GVK("", "v1", "A")
    assert error.line == 1
    assert error.problem == f"role: nope was not found (looked in {project}/roles/nope)"


def test_a_missing_role_names_every_place_looked_in(project: Path) -> None:
    environ = {"ANSIBLE_ROLES_PATH": f"{project}/a:b", "HOME": str(project)}
    with pytest.raises(WatchesError) as excinfo:
        load_watches(
            write(project, "- {version: v1, kind: A, role: ns.coll.nope}\n"),
            environ=environ,
            cwd=project,
        )
    looked = [
        f"{project}/.ansible/collections/ansible_collections/ns/coll/roles/nope",
        f"{project}/a/ns.coll.nope",
        f"{project}/a/roles/ns.coll.nope",
        f"{project}/b/ns.coll.nope",
        f"{project}/b/roles/ns.coll.nope",
        f"{project}/roles/ns.coll.nope",
    ]
    assert excinfo.value.problem == (
        "role: ns.coll.nope was not found (looked in "
        f"/usr/share/ansible/collections/ansible_collections/ns/coll/roles/nope, "
        f"{', '.join(looked)})"
    )


def test_missing_roles_and_playbooks_can_be_reported_and_kept(project: Path) -> None:
    """The authoring tools add a kind before its role exists: told, not refused; any other
    problem of the entry is still an error."""
    path = write(
        project,
        """
        - {version: v1, kind: A, role: later}
        - {version: v1, kind: B, playbook: playbooks/later.yml, finalizer: {name: f, role: x}}
        """,
    )
    told: list[WatchesError] = []
    watches = load_watches(path, environ={}, cwd=project, missing=told.append)
    assert [w.gvk.kind for w in watches] == ["A", "B"]
    assert watches[0].role is None
    assert [(e.index, e.problem.split(" (")[0]) for e in told] == [
        (0, "role: later was not found"),
        (1, f"playbook: {project}/playbooks/later.yml was not found"),
        (1, "role: x was not found"),
    ]
    with pytest.raises(WatchesError, match="must specify Role or Playbook"):
        load_watches(write(project, "- {version: v1, kind: A}\n"), cwd=project, missing=told.append)


def test_gvk_errors_come_before_path_errors_of_earlier_entries(project: Path) -> None:
    message = load_error(
        project,
        """
        - {version: v1, kind: A, role: missing}
        - {kind: B, role: memcached}
        """,
    )
    assert message.endswith("entry 2: invalid GVK: /, Kind=B: version must not be empty")


def test_duplicate_is_reported_before_path_problems(project: Path) -> None:
    message = load_error(
        project,
        """
        - {version: v1, kind: A, role: memcached}
        - {version: v1, kind: A, role: missing}
        """,
    )
    assert message.endswith("duplicate GVK: /v1, Kind=A (first defined in entry 1)")


def test_unreadable_file(project: Path) -> None:
    missing = project / "nope.yaml"
    with pytest.raises(WatchesError) as excinfo:
        load_watches(missing, environ={}, cwd=project)
    assert str(excinfo.value) == f"{missing}: cannot read: No such file or directory"


def test_non_utf8_file(project: Path) -> None:
    path = project / "watches.yaml"
    path.write_bytes(b"- {version: v1, kind: \xff}\n")
    with pytest.raises(WatchesError) as excinfo:
        load_watches(path, environ={}, cwd=project)
    assert str(excinfo.value) == f"{path}: cannot read: not valid UTF-8"


# --- finalizer validation (upstream: path problems count only without vars) ------------------


@pytest.mark.parametrize(
    ("finalizer", "expected"),
    [
        ("{name: f, role: finalizer}", Finalizer(name="f", role="{project}/roles/finalizer")),
        (
            "{name: f, playbook: playbook.yml}",
            Finalizer(name="f", playbook="{project}/playbook.yml"),
        ),
        ("{name: f, vars: {state: absent}}", Finalizer(name="f", vars={"state": "absent"})),
        # Vars make a missing role acceptable, as upstream; the raw value is kept.
        ("{name: f, role: nope, vars: {a: 1}}", Finalizer(name="f", role="nope", vars={"a": 1})),
        (
            "{Name: f, PLAYBOOK: playbook.yml, Vars: {a: 1}}",
            Finalizer(name="f", playbook="{project}/playbook.yml", vars={"a": 1}),
        ),
    ],
)
def test_valid_finalizers(project: Path, finalizer: str, expected: Finalizer) -> None:
    [watch] = load(
        project, f"- {{version: v1, kind: A, role: memcached, finalizer: {finalizer}}}\n"
    )
    assert watch.finalizer is not None

    def here(path: str | None) -> str | None:
        return path.replace("{project}", str(project)) if path else path

    assert watch.finalizer == dataclasses.replace(
        expected, playbook=here(expected.playbook), role=here(expected.role)
    )


def test_watch_is_hashable() -> None:
    watch = Watch(gvk=MEMCACHED, role="/r", vars={"a": {"b": 1}})
    assert {watch: 1}[Watch(gvk=MEMCACHED, role="/r", vars={"a": {"b": 1}})] == 1


def test_finalizer_without_own_ansible() -> None:
    assert not Finalizer(name="f", vars={"x": 1}).has_own_ansible
    assert Finalizer(name="f", role="/r").has_own_ansible


def test_watch_without_ansible_path_raises() -> None:
    with pytest.raises(ValueError, match="neither playbook nor role"):
        _ = Watch(gvk=MEMCACHED).ansible_path


def test_role_that_is_a_file_counts_as_found(project: Path) -> None:
    # Upstream only stats the path.
    (project / "roles" / "filerole").write_text("")
    [watch] = load(project, "- {version: v1, kind: A, role: filerole}\n")
    assert watch.role == os.path.join(project, "roles", "filerole")


# --- parse_watches: pure, with the disk behind a Locator ------------------------------------------


class _Locator:
    """A made-up disk: the playbooks and roles that exist, and every question asked."""

    def __init__(self, playbooks: set[str], roles: dict[str, str]) -> None:
        self.playbooks = playbooks
        self.roles = roles
        self.asked: list[str] = []

    def playbook(self, playbook: str) -> tuple[str, bool]:
        self.asked.append(playbook)
        path = playbook if playbook.startswith("/") else f"/project/{playbook}"
        return path, path in self.playbooks

    def role(self, role: str) -> RoleSearch:
        self.asked.append(role)
        return RoleSearch(self.roles.get(role), (f"/a/{role}", f"/b/{role}"))


def test_parse_watches_asks_the_locator_and_nothing_else() -> None:
    locate = _Locator({"/project/site.yml"}, {"memcached": "/roles/memcached"})
    text = (
        "- {group: a.io, version: v1, kind: A, role: memcached}\n"
        "- {group: a.io, version: v1, kind: B, playbook: site.yml,"
        " finalizer: {name: f, role: gone, vars: {x: 1}}}\n"
    )
    a, b = parse_watches(text, source="w.yaml", environ={}, locate=locate)
    assert (a.role, a.playbook) == ("/roles/memcached", None)
    assert (b.role, b.playbook) == (None, "/project/site.yml")
    assert b.finalizer == Finalizer(name="f", role="gone", vars={"x": 1})  # kept as written
    assert locate.asked == ["memcached", "gone", "site.yml"]


def test_parse_watches_names_where_a_missing_role_was_looked_for() -> None:
    locate = _Locator(set(), {})
    with pytest.raises(WatchesError) as excinfo:
        parse_watches(
            "- {version: v1, kind: A, role: ${ROLE}}\n",
            source="w.yaml",
            environ={"ROLE": "nowhere"},
            locate=locate,
        )
    assert str(excinfo.value) == (
        "w.yaml:1: entry 1 (/v1, Kind=A): role: nowhere was not found "
        "(looked in /a/nowhere, /b/nowhere)"
    )


def test_parse_watches_reports_a_missing_playbook_to_missing_and_keeps_the_entry() -> None:
    told: list[WatchesError] = []
    [watch] = parse_watches(
        "- {version: v1, kind: A, playbook: /nope.yml}\n",
        source="w.yaml",
        environ={},
        locate=_Locator(set(), {}),
        missing=told.append,
    )
    assert watch.playbook == "/nope.yml"
    assert [e.problem for e in told] == ["playbook: /nope.yml was not found"]
