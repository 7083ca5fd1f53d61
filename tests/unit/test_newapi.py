"""`ansible-operator new-api`: every scaffolded file, edits of existing files, and bad input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from ansible_operator import cli
from ansible_operator.gocompat.strcase import to_snake
from ansible_operator.project import load_watches
from ansible_operator.scaffold import generate, yaml_text
from ansible_operator.scaffold import new_api as newapi

REPO = Path(__file__).resolve().parents[2]
FRESH_WATCHES = (
    "---\n# Use the 'new-api' subcommand to add watches to this file.\n"
    "# +kubebuilder:scaffold:watch\n"
)


@pytest.fixture
def fresh(tmp_path, monkeypatch) -> Path:
    """A project with nothing but upstream's initial watches.yaml."""
    (tmp_path / "watches.yaml").write_text(FRESH_WATCHES)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def new_api(*args: str) -> int:
    return cli.main(["new-api", *args])


def memcached(*extra: str) -> int:
    return new_api("--group", "cache.example.com", "--version", "v1alpha1", "--kind", "Memcached",
                   *extra)  # fmt: skip


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def load(path: Path):
    return yaml.safe_load(path.read_text())


# --- a fresh project ------------------------------------------------------------------------------


def test_a_fresh_project_gets_every_file(fresh, capsys):
    assert memcached() == 0
    out = capsys.readouterr().out
    expected = [
        "roles/memcached/tasks/main.yml",
        "roles/memcached/defaults/main.yml",
        "roles/memcached/meta/main.yml",
        "roles/memcached/meta/argument_specs.yml",
        "roles/memcached/README.md",
        "config/samples/cache_v1alpha1_memcached.yaml",
        "config/crd/bases/cache.example.com_memcacheds.yaml",
        "config/argocd/health-checks.yaml",
        "config/rbac/role.yaml",
        "molecule/memcached/molecule.yml",
        "molecule/memcached/converge.yml",
        "molecule/memcached/verify.yml",
        "molecule/memcached/tasks/memcached_test.yml",
        "molecule/common/vars.yml",
        "molecule/common/create.yml",
        "molecule/common/destroy.yml",
        "molecule/common/operator_log.yml",
    ]
    assert sorted(tree(fresh)) == sorted([*expected, "watches.yaml"])
    for path in expected:
        assert f"created {path}" in out
    assert "updated watches.yaml" in out
    for path in expected:
        if path.endswith((".yml", ".yaml")):
            assert load(fresh / path) is not None, f"{path} is empty or not YAML"


def test_the_watches_entry_loads_and_keeps_the_file_s_comments(fresh):
    memcached()
    text = (fresh / "watches.yaml").read_text()
    assert text.startswith("---\n# Use the 'new-api' subcommand")
    assert text.rstrip().endswith(newapi.WATCH_MARKER), "the marker stays last"
    [watch] = load_watches(fresh / "watches.yaml", cwd=fresh)
    assert (watch.gvk.group, watch.gvk.version, watch.gvk.kind) == (
        "cache.example.com",
        "v1alpha1",
        "Memcached",
    )
    assert watch.role == str(fresh / "roles/memcached")


def test_the_crd_is_what_generate_crds_writes(fresh):
    memcached()
    result = generate.plan(Path("watches.yaml"), generate.DEFAULT_OUTPUT)
    [planned] = result.crds
    assert planned.path == Path("config/crd/bases/cache.example.com_memcacheds.yaml")
    assert planned.up_to_date
    assert (fresh / planned.path).read_text() == generate.render(planned)
    assert result.health_checks is not None and result.health_checks.up_to_date


def test_sample_argument_spec_defaults_and_crd_agree(fresh):
    memcached()
    spec = load(fresh / "roles/memcached/meta/argument_specs.yml")["argument_specs"]["main"]
    defaults = load(fresh / "roles/memcached/defaults/main.yml")
    sample = load(fresh / "config/samples/cache_v1alpha1_memcached.yaml")
    crd = load(fresh / "config/crd/bases/cache.example.com_memcacheds.yaml")
    [option] = spec["options"]
    assert defaults == {option: spec["options"][option]["default"]}
    assert sample["apiVersion"] == "cache.example.com/v1alpha1"
    assert sample["kind"] == "Memcached"
    assert sample["metadata"]["name"] == "memcached-sample"
    assert {to_snake(k) for k in sample["spec"]} == {option}
    properties = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    assert set(properties["spec"]["properties"]) == set(sample["spec"])


def test_the_role_is_a_role(fresh):
    memcached()
    meta = load(fresh / "roles/memcached/meta/main.yml")
    assert meta["collections"] == ["operator_sdk.util", "kubernetes.core"]
    tasks = load(fresh / "roles/memcached/tasks/main.yml")
    assert isinstance(tasks, list) and tasks
    assert "example_option" in tasks[0]["ansible.builtin.debug"]["msg"]


def test_the_rbac_rule_lets_the_operator_manage_its_kind(fresh):
    memcached()
    role = load(fresh / "config/rbac/role.yaml")
    assert role["kind"] == "ClusterRole"
    assert role["metadata"]["name"] == "manager-role"
    assert role["rules"] == [
        {
            "apiGroups": ["cache.example.com"],
            "resources": ["memcacheds"],
            "verbs": ["get", "list", "watch", "patch"],
        },
        {
            "apiGroups": ["cache.example.com"],
            "resources": ["memcacheds/status"],
            "verbs": ["patch", "update"],
        },
    ]


def test_the_molecule_scenario_applies_the_sample_and_has_a_failing_placeholder(fresh):
    memcached()
    scenario = fresh / "molecule/memcached"
    config = load(scenario / "molecule.yml")
    assert config["driver"]["name"] == "default"
    assert config["ansible"]["playbooks"]["create"] == "../common/create.yml"
    converge = (scenario / "converge.yml").read_text()
    assert '"{{ samples_dir }}/cache_v1alpha1_memcached.yaml"' in converge
    [play] = load(scenario / "converge.yml")
    [wait] = [t for t in play["tasks"][0]["block"] if t["name"].startswith("Wait until")]
    assert (
        "selectattr('type', '==', 'Successful') | selectattr('status', '==', 'True')"
        in (wait["ansible.builtin.assert"]["that"])
    )
    assert "api_version='cache.example.com/v1alpha1', kind='Memcached'" in wait["vars"]["cr"]
    assert "resource_name='memcached-sample'" in wait["vars"]["cr"]
    assert wait["until"] == "reconciled is success" and wait["retries"] == 600
    [test_assert] = [
        t
        for t in load(scenario / "tasks/memcached_test.yml")
        if t["name"].startswith("Placeholder")
    ]
    assert test_assert["ansible.builtin.assert"] == {
        "that": False,
        "fail_msg": "FIXME Add real assertions for your operator",
    }
    variables = load(fresh / "molecule/common/vars.yml")
    assert "K8S_AUTH_KUBECONFIG" in variables["kubeconfig"]
    assert "watches.yaml" in variables["watched_kinds"]


def test_generate_playbook_points_the_watch_at_a_playbook(fresh):
    assert memcached("--generate-playbook") == 0
    [play] = load(fresh / "playbooks/memcached.yml")
    assert play["hosts"] == "localhost"
    assert play["tasks"][0]["ansible.builtin.import_role"] == {"name": "memcached"}
    [watch] = load_watches(fresh / "watches.yaml", cwd=fresh)
    assert watch.playbook == str(fresh / "playbooks/memcached.yml")
    assert watch.role is None
    assert generate.plan(Path("watches.yaml"), generate.DEFAULT_OUTPUT).crds[0].up_to_date


def test_a_second_kind_extends_what_the_first_made(fresh):
    memcached()
    assert new_api("--group", "cache.example.com", "--version", "v1", "--kind", "Backup") == 0
    watches = load_watches(fresh / "watches.yaml", cwd=fresh)
    assert [w.gvk.kind for w in watches] == ["Memcached", "Backup"]
    rules = load(fresh / "config/rbac/role.yaml")["rules"]
    assert [r["resources"][0] for r in rules] == [
        "memcacheds",
        "memcacheds/status",
        "backups",
        "backups/status",
    ]
    assert "# What the operator may do." in (fresh / "config/rbac/role.yaml").read_text()
    assert generate.plan(Path("watches.yaml"), generate.DEFAULT_OUTPUT).crds[1].up_to_date


@pytest.mark.parametrize(
    ("args", "group"),
    [
        (["--group", "cache", "--domain", "example.com"], "cache.example.com"),
        (["--group", "cache.example.com"], "cache.example.com"),
        (["--group", "apps.my", "--domain", "corp.io"], "apps.my.corp.io"),
    ],
)
def test_group_and_domain(fresh, args, group):
    assert new_api(*args, "--version", "v1", "--kind", "Thing") == 0
    [watch] = load_watches(fresh / "watches.yaml", cwd=fresh)
    assert watch.gvk.group == group
    assert (fresh / f"config/crd/bases/{group}_things.yaml").is_file()


@pytest.mark.parametrize("group", ["cache.example.com", "example.com"])
def test_a_group_that_already_ends_with_the_domain_is_kept_and_said(fresh, capsys, group):
    assert new_api("--group", group, "--domain", "example.com",
                   "--version", "v1", "--kind", "Thing") == 0  # fmt: skip
    [watch] = load_watches(fresh / "watches.yaml", cwd=fresh)
    assert watch.gvk.group == group
    err = capsys.readouterr().err
    assert f"note: group {group} already ends with --domain example.com: kept as it is" in err


def test_a_kind_without_a_role_leaves_later_commands_working(fresh, capsys):
    """--generate-role=false: the watch names the role to come; a later new-api and generate
    crds work, and generate crds says where it looked for the role."""
    assert memcached("--generate-role=false") == 0
    assert not (fresh / "roles/memcached").exists()
    capsys.readouterr()
    assert new_api("--group", "cache.example.com", "--version", "v1", "--kind", "Backup") == 0
    crd = fresh / "config/crd/bases/cache.example.com_memcacheds.yaml"
    before = crd.read_text()
    assert cli.main(["generate", "crds"]) == 0
    err = capsys.readouterr().err
    assert (
        "skipped Memcached.cache.example.com/v1alpha1: role: memcached was not found "
        f"(looked in {fresh}/roles/memcached); its CRD is left as it is"
    ) in err
    assert crd.read_text() == before
    assert cli.main(["generate", "crds", "--check"]) == 0
    # once the role is there, it is the kind's role like any other
    shutil.copytree(fresh / "roles/backup", fresh / "roles/memcached")
    assert cli.main(["generate", "crds"]) == 0
    out, err = capsys.readouterr()
    assert "skipped" not in err
    assert f"{crd.relative_to(fresh)} (from roles/memcached/meta/argument_specs.yml)" in out


def test_a_group_without_domain_takes_the_domain_of_the_project_file(fresh):
    (fresh / "PROJECT").write_text(
        "domain: example.org\nlayout: ansible.sdk.operatorframework.io/v1\n"
    )
    assert new_api("--group", "cache", "--version", "v1", "--kind", "Thing") == 0
    assert load_watches(fresh / "watches.yaml", cwd=fresh)[0].gvk.group == "cache.example.org"


def test_plural_can_be_given(fresh):
    assert new_api("--group", "x.example.com", "--version", "v1", "--kind", "Policy",
                   "--plural", "policyset") == 0  # fmt: skip
    crd = load(fresh / "config/crd/bases/x.example.com_policyset.yaml")
    assert crd["spec"]["names"]["plural"] == "policyset"
    assert load(fresh / "config/rbac/role.yaml")["rules"][0]["resources"][0] == "policyset"
    # generate crds keeps the plural from the file
    assert generate.plan(Path("watches.yaml"), generate.DEFAULT_OUTPUT).crds[0].up_to_date


def test_the_default_plural_is_the_kinds_english_plural(fresh):
    assert new_api("--group", "x.example.com", "--version", "v1", "--kind", "Policy") == 0
    crd = load(fresh / "config/crd/bases/x.example.com_policies.yaml")
    assert crd["spec"]["names"]["plural"] == "policies"
    assert load(fresh / "config/rbac/role.yaml")["rules"][0]["resources"][0] == "policies"
    # generate crds keeps the plural from the file
    assert generate.plan(Path("watches.yaml"), generate.DEFAULT_OUTPUT).crds[0].up_to_date


# --- the repository's layout ----------------------------------------------------------------------


@pytest.fixture
def repo_copy(tmp_path, monkeypatch) -> Path:
    """This repository's project files (watches, roles, config, molecule), copied."""
    for name in ("watches.yaml", "roles", "config", "molecule", "playbooks"):
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name)
        elif source.is_file():
            shutil.copy(source, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_in_the_repository_layout_existing_files_are_extended_in_place(repo_copy):
    before = tree(repo_copy)
    assert new_api("--group", "shop.example.com", "--version", "v1beta1", "--kind", "PetStore") == 0
    after = tree(repo_copy)
    changed = {p for p in before if before[p] != after[p]}
    assert changed <= {
        "watches.yaml",
        "config/argocd/health-checks.yaml",
        "config/crd/kustomization.yaml",
        "config/samples/kustomization.yaml",
        "config/rbac/role.yaml",
        "molecule/common/vars.yml",
    }
    assert not any(p.startswith("molecule/common/") for p in set(after) - set(before)), (
        "an existing molecule/common is used, not replaced"
    )
    for path in changed:
        old_lines = before[path].splitlines()
        new_lines = after[path].splitlines()
        kept = [line for line in old_lines if line in new_lines]
        assert kept == old_lines, f"{path}: every old line (comments too) is kept, in order"

    watches = load_watches(repo_copy / "watches.yaml", cwd=repo_copy)
    assert watches[-1].gvk.kind == "PetStore"
    crd_kustomization = load(repo_copy / "config/crd/kustomization.yaml")
    assert crd_kustomization["resources"][-1] == "bases/shop.example.com_petstores.yaml"
    samples = load(repo_copy / "config/samples/kustomization.yaml")
    assert samples["resources"][-1] == "shop_v1beta1_petstore.yaml"
    for marker in (newapi.CRD_MARKER, newapi.SAMPLES_MARKER, newapi.WATCH_MARKER):
        for path in changed:
            if marker in before[path]:
                assert after[path].rstrip().endswith(marker)
    planned = generate.plan(Path("watches.yaml"), generate.DEFAULT_OUTPUT)
    assert all(p.up_to_date for p in planned.crds), generate.summary(
        [p for p in planned.crds if not p.up_to_date]
    )


def test_an_existing_role_file_gets_the_rule_appended_and_keeps_its_comments(fresh):
    (fresh / "config/rbac").mkdir(parents=True)
    (fresh / "config/rbac/role.yaml").write_text(
        "---\n# the operator's permissions\napiVersion: rbac.authorization.k8s.io/v1\n"
        "kind: Role\nmetadata:\n  name: manager-role\nrules:\n"
        '  # core\n  - apiGroups: [""]\n    resources: [configmaps]\n    verbs: [get]\n'
    )
    memcached()
    text = (fresh / "config/rbac/role.yaml").read_text()
    assert "# the operator's permissions" in text and "  # core\n" in text
    rules = load(fresh / "config/rbac/role.yaml")["rules"]
    assert rules[0]["resources"] == ["configmaps"]
    assert rules[1]["resources"][0] == "memcacheds"


def test_a_role_file_of_several_documents_gets_the_rule_on_the_manager_role(fresh):
    (fresh / "config/rbac").mkdir(parents=True)
    docs = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "manager-role"}, "rules": []},
    ]  # fmt: skip
    (fresh / "config/rbac/role.yaml").write_text(yaml.safe_dump_all(docs))
    memcached()
    loaded = list(yaml.safe_load_all((fresh / "config/rbac/role.yaml").read_text()))
    assert loaded[0] == docs[0]
    assert loaded[1]["rules"][0]["resources"][0] == "memcacheds"


# --- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--group", "cache.example.com", "--version", "v1", "--kind", "memcached"],
         "invalid kind 'memcached': a kind is CamelCase"),
        (["--group", "cache.example.com", "--version", "v1", "--kind", "Mem-cached"],
         "invalid kind 'Mem-cached'"),
        (["--group", "cache.example.com", "--version", "1.0", "--kind", "Memcached"],
         "invalid version '1.0'"),
        (["--group", "Cache.example.com", "--version", "v1", "--kind", "Memcached"],
         "invalid group 'Cache.example.com': not a lowercase DNS subdomain"),
        (["--group", "cache", "--version", "v1", "--kind", "Memcached"],
         "group 'cache' has no domain"),
        (["--group", "cache.example.com", "--version", "v1", "--kind", "Memcached",
          "--plural", "Mems"], "invalid plural 'Mems'"),
        (["--group", "cache.example.com", "--version", "v1", "--kind", "Memcached",
          "--watches-file", "elsewhere/watches.yaml"], "elsewhere/watches.yaml not found"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_exit_1_and_writes_nothing(fresh, capsys, args, message):
    before = tree(fresh)
    assert new_api(*args) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("ansible-operator new-api: ")
    assert "\n" not in err
    assert message in err
    assert tree(fresh) == before


def test_an_existing_kind_is_refused_in_one_line(fresh, capsys):
    memcached()
    before = tree(fresh)
    capsys.readouterr()
    assert memcached() == 1
    err = capsys.readouterr().err.strip()
    assert err == (
        "ansible-operator new-api: Memcached.cache.example.com/v1alpha1 is already in "
        "watches.yaml (entry 1)"
    )
    assert tree(fresh) == before


def test_an_existing_role_directory_is_not_overwritten(fresh, capsys):
    (fresh / "roles/memcached/tasks").mkdir(parents=True)
    (fresh / "roles/memcached/tasks/main.yml").write_text("- debug: {msg: mine}\n")
    before = tree(fresh)
    assert memcached() == 1
    assert "roles/memcached already exists" in capsys.readouterr().err
    assert tree(fresh) == before


def test_a_broken_watches_file_is_reported_not_extended(fresh, capsys):
    (fresh / "watches.yaml").write_text("- version: v1\n  group: a.example.com\n  kind: A\n")
    before = tree(fresh)
    assert memcached() == 1
    assert "must specify Role or Playbook" in capsys.readouterr().err
    assert tree(fresh) == before


# --- text edits -----------------------------------------------------------------------------------


def test_append_to_list_keeps_indentation_and_what_follows():
    text = "a: 1\nitems:\n    - x\n    # note\n    - y\nlast: 2\n"
    assert yaml_text.append_to_list(text, "items", "z") == (
        "a: 1\nitems:\n    - x\n    # note\n    - y\n    - z\nlast: 2\n"
    )
    assert yaml_text.append_to_list("items:\n", "items", "{a: 1}") == "items:\n  - {a: 1}\n"
    assert yaml_text.append_to_list("items:\n- x\n", "items", "y") == "items:\n- x\n- y\n"
    assert yaml_text.append_to_list("items: [x]\n", "items", "y") is None
    assert yaml_text.append_to_list("other: 1\n", "items", "y") is None
    multi = yaml_text.append_to_list("items:\n  - a\n", "items", "k: 1\nl: 2")
    assert yaml.safe_load(multi) == {"items": ["a", {"k": 1, "l": 2}]}


def test_insert_before_marker():
    assert yaml_text.insert_before_marker("a\n# m\n", "# m", "b") == "a\nb\n# m\n"
    assert yaml_text.insert_before_marker("a\n", "# m", "b") is None
