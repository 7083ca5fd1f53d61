"""runner.inputdir: the per-CR private data dir, rewritten on every run."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import yaml

from ansible_operator.runner.inputdir import (
    DEFAULT_BASE_DIR,
    LOCAL_INVENTORY,
    InputDirError,
    input_dir_path,
    new_ident,
    prepare_input_dir,
    remove_input_dir,
    strip_ansible_args,
)


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (
            ("cache.example.com", "v1alpha1", "Memcached", "ns", "m"),
            "cache.example.com/v1alpha1/Memcached/ns/m",
        ),
        (("", "v1", "Secret", "default", "s"), "v1/Secret/default/s"),  # core group
        (("example.com", "v1", "Cluster", "", "c"), "example.com/v1/Cluster/c"),  # cluster-scoped
    ],
)
def test_input_dir_path_drops_empty_parts(parts: tuple[str, ...], expected: str) -> None:
    assert input_dir_path(*parts) == DEFAULT_BASE_DIR / expected
    assert input_dir_path(*parts, base=Path("/b")) == Path("/b") / expected


@pytest.mark.parametrize("bad", ["..", ".", "a/b"])
def test_input_dir_path_refuses_escaping_parts(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid path component"):
        input_dir_path("g", "v1", "K", "ns", bad)


def test_new_ident_is_a_63_bit_decimal() -> None:
    idents = {new_ident() for _ in range(50)}
    assert len(idents) == 50
    assert all(ident.isdigit() and 0 <= int(ident) < 2**63 for ident in idents)


@pytest.mark.parametrize(
    ("given", "written"),
    [
        ("'--vault-password-file /opt/pwd'", "--vault-password-file /opt/pwd"),
        ("--check", "--check"),
        ("''", ""),
        ("'a", "'a"),
        ("''x''", "'x'"),  # only one pair
        ("'", "'"),
    ],
)
def test_strip_ansible_args(given: str, written: str) -> None:
    assert strip_ansible_args(given) == written


def prepare(path: Path, **kwargs: object) -> Path:
    defaults: dict[str, object] = {
        "ident": "42",
        "extravars": {"size": 3, "name": "ü"},
        "kubeconfig": "/tmp/kc",
        "environ": {},
    }
    defaults.update(kwargs)
    return prepare_input_dir(path, **defaults)  # type: ignore[arg-type]


def test_prepare_writes_upstream_layout(tmp_path: Path) -> None:
    pdd = prepare(tmp_path / "pdd", ansible_args="'-e x=1'")

    env = pdd / "env"
    assert json.loads((env / "envvars").read_text()) == {
        "K8S_AUTH_KUBECONFIG": "/tmp/kc",
        "KUBECONFIG": "/tmp/kc",
    }
    assert yaml.safe_load((env / "extravars").read_text(encoding="utf-8")) == {
        "size": 3,
        "name": "ü",
    }
    settings = json.loads((env / "settings").read_text())
    assert settings["runner_http_url"] == "/tmp/ansibleoperator-42"
    assert settings["runner_http_path"] == "/events/"
    assert (env / "cmdline").read_text() == "-e x=1"
    assert (pdd / "inventory" / "hosts").read_text() == LOCAL_INVENTORY + "\n"
    assert (pdd / "project").is_dir() and (pdd / "artifacts").is_dir()
    for name in ("envvars", "extravars", "settings", "cmdline"):
        assert stat.S_IMODE((env / name).stat().st_mode) == 0o600


def test_prepare_rewrites_everything_and_drops_leftovers(tmp_path: Path) -> None:
    pdd = prepare(tmp_path / "pdd", ansible_args="--check", extravars={"old": True})
    # What a previous run or ansible-runner itself may have left behind:
    (pdd / "env" / "passwords").write_text("{}")
    (pdd / "env" / "ssh_key").write_text("key")
    (pdd / "args").write_text("ansible-playbook other.yml")
    (pdd / "inventory" / "group_vars").mkdir()
    (pdd / "project" / "0123abcd.json").write_text("[]")
    (pdd / "artifacts" / "7").mkdir()

    prepare(pdd, ident="43", extravars={"new": True}, kubeconfig="/tmp/kc2")

    assert sorted(p.name for p in (pdd / "env").iterdir()) == ["envvars", "extravars", "settings"]
    assert yaml.safe_load((pdd / "env" / "extravars").read_text()) == {"new": True}
    assert json.loads((pdd / "env" / "envvars").read_text())["KUBECONFIG"] == "/tmp/kc2"
    assert not (pdd / "args").exists()
    assert [p.name for p in (pdd / "inventory").iterdir()] == ["hosts"]
    assert list((pdd / "project").iterdir()) == []
    assert (pdd / "artifacts" / "7").is_dir()  # artifacts are rotated by ansible-runner


def test_virtualenv_python_is_the_interpreter(tmp_path: Path) -> None:
    pdd = prepare(tmp_path / "pdd", environ={"VIRTUAL_ENV": "/opt/venv"})
    assert (pdd / "inventory" / "hosts").read_text() == (
        "localhost ansible_connection=local ansible_python_interpreter=/opt/venv/bin/python3\n"
    )


def test_ansible_inventory_file_replaces_hosts(tmp_path: Path) -> None:
    source = tmp_path / "my-inventory"
    source.write_text("[test]\nlocalhost sentinel=test\n")
    pdd = prepare(tmp_path / "pdd", environ={"ANSIBLE_INVENTORY": str(source), "VIRTUAL_ENV": "/v"})
    assert (pdd / "inventory" / "hosts").read_text() == source.read_text()


def test_ansible_inventory_dir_is_copied(tmp_path: Path) -> None:
    source = tmp_path / "inv"
    (source / "group_vars").mkdir(parents=True)
    (source / "hosts.yml").write_text("all: {}\n")
    (source / "group_vars" / "all.yml").write_text("x: 1\n")
    pdd = prepare(tmp_path / "pdd", environ={"ANSIBLE_INVENTORY": str(source)})
    inventory = pdd / "inventory"
    assert sorted(str(p.relative_to(inventory)) for p in inventory.rglob("*")) == [
        "group_vars",
        "group_vars/all.yml",
        "hosts.yml",
    ]


def test_missing_ansible_inventory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputDirError, match="ANSIBLE_INVENTORY=/nope: no such file"):
        prepare(tmp_path / "pdd", environ={"ANSIBLE_INVENTORY": "/nope"})


def test_remove_input_dir_prunes_empty_parents_only(tmp_path: Path) -> None:
    base = tmp_path / "runner"
    one = prepare(input_dir_path("g", "v1", "K", "ns", "one", base=base))
    two = prepare(input_dir_path("g", "v1", "K", "ns", "two", base=base))

    assert remove_input_dir(one, base=base)
    assert not one.exists() and two.exists()
    assert remove_input_dir(two, base=base)
    assert base.is_dir() and list(base.iterdir()) == []
    assert not remove_input_dir(two, base=base)  # already gone


@pytest.mark.parametrize("target", ["runner", "elsewhere/x", "runner/../elsewhere", "runner/g/.."])
def test_remove_input_dir_refuses_paths_outside_base(tmp_path: Path, target: str) -> None:
    (tmp_path / "elsewhere" / "x").mkdir(parents=True)
    (tmp_path / "runner" / "g").mkdir(parents=True)
    with pytest.raises(ValueError, match="refusing to remove"):
        remove_input_dir(tmp_path / target, base=tmp_path / "runner")
    assert (tmp_path / "elsewhere" / "x").is_dir() and (tmp_path / "runner" / "g").is_dir()
