"""The ansible-core and ansible-runner versions the runs use, and the refusal of too old a core.

Executables stand in for ansible-runner and ansible-playbook where a version other than the
installed one is needed; the installed ones are asked too, and must agree with the packages.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from importlib.metadata import version
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from ansible_operator.core import ansible_cores
from ansible_operator.runner import find_ansible_runner, versions
from ansible_operator.runtime.observe.metrics import OperatorMetrics

pytestmark = pytest.mark.ansible_core


def fake_ansible(bindir: Path, core: str, runner: str = "2.4.3") -> str:
    """`ansible-runner` and `ansible-playbook` scripts in `bindir` that print their versions."""
    bindir.mkdir(parents=True, exist_ok=True)
    scripts = {
        "ansible-runner": f"echo {runner}",
        "ansible-playbook": f"echo 'ansible-playbook [core {core}]'; echo '  config file = None'",
    }
    for name, body in scripts.items():
        path = bindir / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    return str(bindir / "ansible-runner")


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("ansible-playbook [core 2.18.6]\n  config file = None\n", "2.18.6"),
        ("ansible-playbook [core 2.19.0rc1]\n", "2.19.0rc1"),
        ("ansible-playbook 2.9.27\n", None),  # before ansible-core: no [core ...]
        ("", None),
    ],
)
def test_the_core_version_is_read_from_ansible_playbook(output, expected):
    assert versions.parse_core_version(output) == expected


@pytest.mark.parametrize(("output", "expected"), [("2.4.1\n", "2.4.1"), ("usage: ...\n", None)])
def test_the_runner_version_is_read_from_ansible_runner(output, expected):
    assert versions.parse_runner_version(output) == expected


def test_the_installed_versions_are_the_ones_of_the_packages():
    found = versions.probe(find_ansible_runner())
    assert found.core == version("ansible-core")
    assert found.runner == version("ansible-runner")
    assert found.playbook == str(Path(sys.executable).parent / "ansible-playbook")
    versions.check_supported(found)  # the default is supported


def test_the_ansible_playbook_beside_the_runner_wins_over_path(tmp_path):
    runner = fake_ansible(tmp_path / "beside", core="2.19.1", runner="2.4.2")
    fake_ansible(tmp_path / "onpath", core="2.18.3")
    found = versions.probe(runner, {"PATH": str(tmp_path / "onpath")})
    assert found == versions.AnsibleVersions(
        core="2.19.1", runner="2.4.2", playbook=str(tmp_path / "beside" / "ansible-playbook")
    )


def test_without_an_ansible_playbook_the_probe_says_so(tmp_path):
    runner = fake_ansible(tmp_path / "bin", core="2.18.3")
    (tmp_path / "bin" / "ansible-playbook").unlink()
    with pytest.raises(versions.UnsupportedAnsible, match="ansible-playbook not found beside"):
        versions.probe(runner, {"PATH": str(tmp_path / "empty")})


@pytest.mark.parametrize(
    ("core", "supported"), [("2.17.14", False), ("2.18.0", True), ("2.19.2", True)]
)
def test_the_supported_range_starts_at_2_18(core, supported):
    found = versions.AnsibleVersions(core=core, runner="2.4.3", playbook="/x/ansible-playbook")
    if supported:
        versions.check_supported(found)
    else:
        with pytest.raises(versions.UnsupportedAnsible) as err:
            versions.check_supported(found)
        assert str(err.value) == (
            f"ansible-core {core} (of /x/ansible-playbook) is not supported: "
            "install ansible-core 2.18, 2.19, 2.20 or 2.21 (2.18 is the default, as "
            "upstream's image)"
        )


def test_the_build_info_metric_names_the_ansible_versions():
    ansible = versions.AnsibleVersions(core="2.18.6", runner="2.4.1", playbook="/x")
    metrics = OperatorMetrics()
    metrics.ansible_found(ansible)
    text = generate_latest(metrics.registry).decode()
    assert (
        'ansible_operator_build_info{ansible_core_end_of_life="",ansible_core_version="2.18.6",'
        'ansible_runner_version="2.4.1",commit="unknown",version="v0.1.0"} 1.0'
    ) in text


def python_beside(bindir: Path) -> str:
    """A virtualenv in `bindir/..` that sees this environment's packages: its `python` has
    `bindir` as the directory where the operator looks for ansible-runner first."""
    venv = bindir.parent
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    here = sysconfig.get_path("purelib")
    (purelib / "outer.pth").write_text(f"import site; site.addsitedir({here!r})\n")
    return str(bindir / "python")


def test_version_command_names_the_ansible_of_the_runs(tmp_path):
    python = python_beside(tmp_path / "venv" / "bin")
    fake_ansible(tmp_path / "venv" / "bin", core="2.19.1", runner="2.4.2")
    result = subprocess.run(
        [python, "-m", "ansible_operator.cli", "version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert 'ansible-core version: "2.19.1", ansible-runner version: "2.4.2"' in result.stdout


def test_run_refuses_too_old_an_ansible_core_in_one_line(tmp_path):
    python = python_beside(tmp_path / "venv" / "bin")
    fake_ansible(tmp_path / "venv" / "bin", core="2.17.14")
    (tmp_path / "roles" / "r" / "tasks").mkdir(parents=True)
    (tmp_path / "watches.yaml").write_text(
        "- version: v1\n  group: x.example.com\n  kind: Foo\n  role: r\n"
    )
    (tmp_path / "kubeconfig").write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    result = subprocess.run(
        [python, "-m", "ansible_operator.cli", "run"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "KUBECONFIG": str(tmp_path / "kubeconfig")},
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"ansible-operator run: ansible-core 2.17.14 (of {tmp_path}/venv/bin/ansible-playbook) "
        "is not supported: install ansible-core 2.18, 2.19, 2.20 or 2.21 (2.18 is the default, "
        "as upstream's image)"
    )


def fake_galaxy(bindir: Path, listing: str) -> None:
    """An `ansible-galaxy` beside the fake `ansible-playbook` that prints ``listing``."""
    path = bindir / "ansible-galaxy"
    path.write_text(f"#!/bin/sh\necho '{listing}'\n")
    path.chmod(0o755)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ('{"/c": {"kubernetes.core": {"version": "5.4.1"}}}', {"kubernetes.core"}),
        ("{}", set()),
        ("not json", set()),
        ("[]", set()),
    ],
)  # fmt: skip
def test_the_collections_are_read_from_ansible_galaxy(output, expected):
    assert versions.parse_collections(output) == expected


def test_an_ansible_without_kubernetes_core_is_refused_in_one_line(tmp_path):
    runner = fake_ansible(tmp_path / "bin", core="2.18.19")
    fake_galaxy(tmp_path / "bin", "{}")
    found = versions.probe(runner, {"PATH": "/usr/bin:/bin"})
    with pytest.raises(versions.UnsupportedAnsible) as err:
        versions.check_collections(found, {"PATH": "/usr/bin:/bin"})
    assert str(err.value).startswith(
        f"the Ansible collection kubernetes.core is not installed where {tmp_path}/bin/"
        "ansible-galaxy looks (its default paths and Python's site-packages): install it"
    )
    fake_galaxy(tmp_path / "bin", '{"/c": {"kubernetes.core": {"version": "5.4.1"}}}')
    versions.check_collections(found, {"PATH": "/usr/bin:/bin"})  # found: no error


def test_the_real_ansible_finds_kubernetes_core_and_not_without_site_packages():
    found = versions.probe(find_ansible_runner())
    versions.check_collections(found)
    with pytest.raises(versions.UnsupportedAnsible, match=r"kubernetes\.core is not installed"):
        versions.check_collections(
            found, {**os.environ, "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "false"}
        )


def test_the_names_ansible_core_gives_a_meaning_are_asked_of_it():
    found = versions.probe_checked(find_ansible_runner())
    assert found.ansible_names is not None and found.names_problem == ""
    # Magic variables, play keywords and template globals, from ansible-core itself.
    assert {"hostvars", "groups", "omit", "inventory_hostname"} <= found.ansible_names
    assert {"port", "environment", "become", "lookup"} <= found.ansible_names
    assert "size" not in found.ansible_names


def test_an_ansible_core_that_cannot_list_its_names_is_said_not_refused(tmp_path):
    runner = fake_ansible(tmp_path / "bin", core="2.18.19")  # a #!/bin/sh ansible-playbook
    fake_galaxy(tmp_path / "bin", '{"/c": {"kubernetes.core": {"version": "5.4.1"}}}')
    found = versions.probe_checked(runner, {"PATH": "/usr/bin:/bin"})
    assert found.core == "2.18.19"
    assert found.ansible_names is None
    assert found.names_problem == "ansible-core did not list them (its reserved names moved?)"


@pytest.mark.parametrize("past_the_limit", [False, True])
def test_a_temporary_directory_where_ansible_core_cannot_listen_is_refused(past_the_limit):
    """ansible-core 2.21 and later fail every run ("Local RPC server did not start") under a
    TMPDIR too long for their RPC socket: the operator refuses to start there, in one line,
    exactly when a real ansible-playbook fails, on every core."""
    base = Path(tempfile.mkdtemp(prefix="rpc-", dir="/tmp"))  # short, to count from
    try:
        length = versions.RPC_TMPDIR_MAX + (1 if past_the_limit else 0)
        tmpdir = base / ("t" * (length - len(str(base)) - 1))
        tmpdir.mkdir()
        env = {**os.environ, "TMPDIR": str(tmpdir)}
        found = versions.probe(find_ansible_runner(), env)
        try:
            versions.probe_checked(find_ansible_runner(), env)
            refusal = ""
        except versions.UnsupportedAnsible as err:
            refusal = str(err)
        play = base / "play.yml"
        play.write_text("- hosts: localhost\n  gather_facts: false\n  tasks: [{ping: {}}]\n")
        played = subprocess.run(
            [found.playbook, str(play)], env=env, capture_output=True, text=True, timeout=120
        )
    finally:
        shutil.rmtree(base)
    output = played.stdout + played.stderr
    if refusal:
        assert played.returncode != 0 and "Local RPC server did not start" in output
        assert refusal == (
            f"ansible-core {found.core} cannot start its local RPC server, so every run would "
            'fail with "Local RPC server did not start" (AF_UNIX path too long); the temporary '
            f"directory {tmpdir} is {length} characters long, the socket's path fits under one "
            f"of at most {versions.RPC_TMPDIR_MAX}: set TMPDIR to a shorter one"
        )
    else:
        assert played.returncode == 0, output
    assert bool(refusal) == (past_the_limit and found.core_release >= (2, 21))


def test_the_kubernetes_core_a_project_pins_is_the_one_its_ansible_package_bundles():
    """init writes the core's kubernetes.core into requirements.yml (the table's); the installed
    `ansible` package of that core bundles the same major version (a later release of the package
    may bring a later minor)."""
    found = versions.probe(find_ansible_runner())
    core = ansible_cores.find(found.core_release)
    assert core is not None
    manifest = Path(sysconfig.get_paths()["purelib"]) / "ansible_collections/kubernetes/core"
    bundled = json.loads((manifest / "MANIFEST.json").read_text())["collection_info"]["version"]
    assert bundled.split(".")[0] == core.kubernetes_core.split(".")[0], (bundled, core)
