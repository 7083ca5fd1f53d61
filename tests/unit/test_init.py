"""`ansible-operator init`: a complete project, bad input refused with nothing written, and
this repository's generic files byte-equal to what init + new-api produce for its kinds."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_operator import cli
from ansible_operator.core import ansible_cores
from ansible_operator.scaffold import init

REPO = Path(__file__).resolve().parents[2]
# This repository as a project: its PROJECT file names its domain, name and kinds.
REPO_PROJECT = yaml.safe_load((REPO / "PROJECT").read_text())
# The files of the repository that are exactly the scaffold's. Not shared, and why:
# - watches.yaml, roles/, playbooks/, molecule/<role>/, config/samples/<sample>, the CRDs and
#   config/rbac/role.yaml: the example operators' own content, written after new-api (the
#   generic part of role.yaml is checked below as a subset);
# - README.md: the repository's is the runtime's manual.
# Makefile, Dockerfile and .dockerignore are symbolic links to the templates (LINKED); the files
# of SHARED are copies (git reads no .gitignore through a link, kustomize no file outside its
# directory, and PROJECT is rendered).
LINKED = {
    "Makefile": "Makefile",
    "Dockerfile": "Dockerfile",
    ".dockerignore": "dot-dockerignore",
}
# config/manifests/bases (the base ClusterServiceVersion) is the project's own: `generate
# kustomize manifests` writes it.
GENERIC_CONFIG = (
    "default",
    "grafana",
    "ha",
    "manager",
    "manifests",
    "prometheus",
    "rbac",
    "scorecard",
    "testing",
)
SHARED = [
    "PROJECT",
    ".gitignore",
    ".ansible-lint",
    "requirements.yml",
    "config/crd/kustomization.yaml",
    "config/samples/kustomization.yaml",
    "docs/alerts.md",
    *(
        str(p.relative_to(REPO))
        for d in GENERIC_CONFIG
        for p in sorted((REPO / "config" / d).iterdir())
        if p.is_file() and p.name != "role.yaml"
    ),
    *(f"molecule/common/{p.name}" for p in sorted((REPO / "molecule/common").iterdir())),
]


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.fixture
def empty(tmp_path, monkeypatch) -> Path:
    project = tmp_path / "memcached-operator"
    project.mkdir()
    monkeypatch.chdir(project)
    return project


def test_a_project_with_every_file(empty, capsys):
    assert cli.main(["init", "--domain", "example.com"]) == 0
    files = tree(empty)
    for expected in [
        "PROJECT",
        "watches.yaml",
        "requirements.yml",
        "roles/.gitkeep",
        "playbooks/.gitkeep",
        "Dockerfile",
        ".dockerignore",
        "Makefile",
        "README.md",
        ".gitignore",
        ".ansible-lint",
        "config/crd/kustomization.yaml",
        "config/default/kustomization.yaml",
        "config/manager/manager.yaml",
        "config/rbac/role.yaml",
        "config/rbac/leader_election_role.yaml",
        "config/prometheus/monitor.yaml",
        "config/prometheus/alerts.yaml",
        "config/grafana/operator-dashboard.json",
        "docs/alerts.md",
        "config/samples/kustomization.yaml",
        "config/testing/kustomization.yaml",
        "molecule/common/create.yml",
        "molecule/common/vars.yml",
    ]:
        assert expected in files
    project = yaml.safe_load((empty / "PROJECT").read_text())
    assert project["domain"] == "example.com"
    assert project["projectName"] == "memcached-operator"  # the directory's name
    assert project["layout"] == ["ansible.sdk.operatorframework.io/v1"]
    default = yaml.safe_load((empty / "config/default/kustomization.yaml").read_text())
    assert default["namespace"] == "memcached-operator-system"
    assert default["namePrefix"] == "memcached-operator-"
    for name in files:  # every placeholder filled in, every YAML file parses
        text = (empty / name).read_text()
        assert "@{" not in text, name
        if name.endswith((".yaml", ".yml")) or name in ("PROJECT", ".ansible-lint"):
            list(yaml.safe_load_all(text))
    assert yaml.safe_load((empty / "watches.yaml").read_text()) is None
    makefile = (empty / "Makefile").read_text()
    targets = ("run", "test", "molecule", "image", "deploy", "undeploy", "build-installer", "help")
    for target in (*targets, "bundle", "bundle-build", "bundle-push"):
        assert f"\n{target}:" in makefile, target
    assert "ansible-operator-py==" in (empty / "Dockerfile").read_text()
    assert not [p for p in empty.iterdir() if p.name.startswith(".init-")], "staging left"
    assert "wrote the project memcached-operator" in capsys.readouterr().out


def test_runtime_rules_events_and_leases(empty):
    assert cli.main(["init", "--domain", "example.com"]) == 0
    role = yaml.safe_load((empty / "config/rbac/role.yaml").read_text())
    assert {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]} in role["rules"]
    leader = yaml.safe_load((empty / "config/rbac/leader_election_role.yaml").read_text())
    leases = [r for r in leader["rules"] if r["resources"] == ["leases"]]
    assert leases and {"get", "create", "update"} <= set(leases[0]["verbs"])


def test_init_then_new_api_adds_the_kind_to_project(empty):
    assert cli.main(["init", "--domain", "example.com", "--project-name", "mc"]) == 0
    assert cli.main(["new-api", "--group", "cache", "--version", "v1alpha1",
                     "--kind", "Memcached"]) == 0  # fmt: skip
    project = yaml.safe_load((empty / "PROJECT").read_text())
    assert project["projectName"] == "mc"
    assert project["resources"] == [
        {
            "api": {"crdVersion": "v1", "namespaced": True},
            "domain": "example.com",
            "group": "cache",
            "kind": "Memcached",
            "version": "v1alpha1",
        }
    ]
    watches = yaml.safe_load((empty / "watches.yaml").read_text())
    assert watches == [
        {"version": "v1alpha1", "group": "cache.example.com", "kind": "Memcached",
         "role": "memcached"}
    ]  # fmt: skip
    crd_kustomization = yaml.safe_load((empty / "config/crd/kustomization.yaml").read_text())
    assert crd_kustomization["resources"] == ["bases/cache.example.com_memcacheds.yaml"]


def test_init_with_a_kind_chains_new_api(empty):
    argv = ["init", "--domain", "example.com", "--group", "cache", "--version", "v1alpha1"]
    assert cli.main([*argv, "--kind", "Memcached", "--generate-playbook"]) == 0
    assert (empty / "roles/memcached/tasks/main.yml").is_file()
    assert (empty / "playbooks/memcached.yml").is_file()
    assert len(yaml.safe_load((empty / "PROJECT").read_text())["resources"]) == 1


def test_new_api_without_the_role(empty):
    assert cli.main(["init", "--domain", "example.com"]) == 0
    argv = ["new-api", "--group", "cache", "--version", "v1alpha1", "--kind", "Memcached"]
    assert cli.main([*argv, "--generate-role=false"]) == 0
    assert not (empty / "roles/memcached").exists()
    assert (empty / "molecule/memcached/molecule.yml").is_file()
    assert (empty / "config/crd/bases/cache.example.com_memcacheds.yaml").is_file()


def test_new_api_refuses_a_kind_that_exists(empty, capsys):
    assert cli.main(["init", "--domain", "example.com"]) == 0
    argv = ["new-api", "--group", "cache", "--version", "v1alpha1", "--kind", "Memcached"]
    assert cli.main(argv) == 0
    before = {p: (empty / p).read_bytes() for p in tree(empty)}
    capsys.readouterr()
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Memcached.cache.example.com/v1alpha1 is already in" in err
    assert {p: (empty / p).read_bytes() for p in tree(empty)} == before


# --- bad input: one line, nothing written ---------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--domain", "Example.com"], "invalid domain 'Example.com'"),
        (["--domain", "example..com"], "invalid domain 'example..com'"),
        (["--domain=-x.com"], "invalid domain '-x.com'"),
        (["--project-name", "My_Operator"], "invalid project name 'My_Operator'"),
        (["--project-name", "a" * 64], "invalid project name"),
        (["--group", "cache"], "--group, --version and --kind go together"),
        (["--generate-playbook"], "--generate-playbook needs --group, --version and --kind"),
        (["--group", "cache", "--version", "v1", "--kind", "mem"], "invalid kind 'mem'"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(empty, capsys, argv, message):
    assert cli.main(["init", *argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ansible-operator init: ") and message in err, err
    assert err.count("\n") == 1, err
    assert list(empty.iterdir()) == []


def test_a_directory_name_that_is_no_project_name(tmp_path, monkeypatch, capsys):
    project = tmp_path / "My Operator"
    project.mkdir()
    monkeypatch.chdir(project)
    assert cli.main(["init"]) == 1
    err = capsys.readouterr().err
    assert "invalid project name 'My Operator' (the directory's name; give --project-name)" in err
    assert list(project.iterdir()) == []


def test_a_directory_with_files_is_refused_listing_them(empty, capsys):
    (empty / ".git").mkdir()  # allowed
    (empty / "notes.txt").write_text("mine")
    (empty / "roles").mkdir()
    assert cli.main(["init"]) == 1
    err = capsys.readouterr().err
    assert "is not empty (only .git may be there): notes.txt, roles" in err
    assert err.count("\n") == 1
    assert sorted(p.name for p in empty.iterdir()) == [".git", "notes.txt", "roles"]
    assert list((empty / "roles").iterdir()) == []


def test_only_a_git_directory_is_fine(empty):
    (empty / ".git").mkdir()
    assert cli.main(["init"]) == 0
    assert (empty / "PROJECT").is_file()


def test_a_failed_write_leaves_nothing(empty, monkeypatch, capsys):
    texts = init.files("x", "example.com")
    texts["config/rbac/role.yaml/oops"] = "config/rbac/role.yaml is a file: this cannot be written"
    monkeypatch.setattr(init, "files", lambda *_: texts)
    assert cli.main(["init"]) == 1
    assert "cannot write the project" in capsys.readouterr().err
    assert list(empty.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "core", "package", "kubernetes_core"),
    [
        ([], "2.21", "ansible>=14,<15", "6.6.0"),  # the newest supported, by default
        (["--ansible-core", "2.18"], "2.18", "ansible>=11,<12", "5.4.1"),  # upstream's image's
    ],
)
def test_the_chosen_ansible_core_is_the_images_and_the_virtualenvs(
    empty, capsys, argv, core, package, kubernetes_core
):
    assert cli.main(["init", "--domain", "example.com", *argv]) == 0
    assert f"(domain example.com, ansible-core {core})" in capsys.readouterr().out
    dockerfile = (empty / "Dockerfile").read_text()
    assert f'ARG ANSIBLE="{package}"' in dockerfile
    assert 'pip install --no-compile --find-links=dist "$OPERATOR_PACKAGE" "$ANSIBLE"' in dockerfile
    readme = (empty / "README.md").read_text()
    (line,) = [line for line in readme.splitlines() if line.startswith("pip install ")]
    assert line.endswith(f" '{package}'")
    assert f"ansible-core {core} in a virtualenv" in readme
    (collection,) = yaml.safe_load((empty / "requirements.yml").read_text())["collections"]
    assert collection == {"name": "kubernetes.core", "version": kubernetes_core}


def test_an_ansible_core_not_supported_is_refused_in_one_line(empty, capsys):
    assert cli.main(["init", "--domain", "example.com", "--ansible-core", "2.17"]) == 1
    assert capsys.readouterr().err == (
        "ansible-operator init: --ansible-core=2.17: choose one of 2.18, 2.19, 2.20, 2.21\n"
    )
    assert list(empty.iterdir()) == []


# --- one source: this repository is init + new-api for its kinds ---------------------------------


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    """init + new-api, for this repository's PROJECT and kinds, in a temporary directory."""
    project = tmp_path_factory.mktemp("render") / REPO_PROJECT["projectName"]
    project.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(project)
        # This repository's image and virtualenv are on the default core, as upstream's image.
        argv = ["init", "--domain", REPO_PROJECT["domain"]]
        assert cli.main([*argv, "--ansible-core", ansible_cores.DEFAULT.name]) == 0
        for resource in REPO_PROJECT["resources"]:
            argv = ["new-api", "--group", resource["group"], "--domain", resource["domain"]]
            argv += ["--version", resource["version"], "--kind", resource["kind"]]
            assert cli.main(argv) == 0
    return project


@pytest.mark.parametrize("name", SHARED)
def test_the_repositorys_generic_file_is_the_scaffolds(rendered, name):
    assert (REPO / name).read_bytes() == (rendered / name).read_bytes(), (
        f"{name} differs from what `ansible-operator init` + `new-api` write: change the "
        "template (operator/ansible_operator/scaffold/templates/) and copy it here"
    )


@pytest.mark.parametrize("name", LINKED)
def test_the_repositorys_generic_file_links_to_the_template(name):
    link = REPO / name
    assert link.is_symlink(), f"{name} is a copy: make it a link to the scaffold's template"
    target = init.TEMPLATES / "init" / LINKED[name]
    assert link.resolve() == target.resolve()
    assert not Path(link.readlink()).is_absolute(), f"{name} links to an absolute path"


def test_the_repositorys_kinds_are_its_project_files(rendered):
    watches = yaml.safe_load((REPO / "watches.yaml").read_text())
    kinds = [(r["group"] + "." + r["domain"], r["kind"]) for r in REPO_PROJECT["resources"]]
    assert kinds == [(w["group"], w["kind"]) for w in watches]


def test_the_repositorys_rbac_has_the_scaffolds_rules(rendered):
    ours = yaml.safe_load((REPO / "config/rbac/role.yaml").read_text())["rules"]
    template = init.files("x", "example.com")["config/rbac/role.yaml"]
    for rule in yaml.safe_load(template)["rules"]:
        assert rule in ours, rule


def test_make_run_before_any_kind_says_what_to_do(empty, capsys):
    assert cli.main(["init", "--domain", "example.com"]) == 0
    capsys.readouterr()
    assert cli.main(["dev", "run"]) == 1
    err = capsys.readouterr().err
    assert err == (
        "ansible-operator dev run: watches.yaml has no kinds yet: add one with "
        "`ansible-operator new-api`\n"
    )
