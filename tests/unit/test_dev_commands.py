"""``ansible-operator dev``: molecule's runner with a stand-in molecule, the one molecule harness,
and the commands' user errors (one line, exit code 1, nothing left running)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ansible_operator import procfs
from ansible_operator.core.conditions import condition_true
from ansible_operator.dev import molecule, project

REPO = Path(__file__).resolve().parents[2]
TEMPLATE_COMMON = REPO / "operator/ansible_operator/scaffold/templates/new_api/molecule/common"

# Stands in for molecule: `molecule test --scenario-name NAME` prints its name and environment,
# records its pid, then passes, fails (FAKE_FAIL names it) or sleeps (FAKE_SLEEP names it).
FAKE_MOLECULE = r"""#!{python}
import os, sys, time
name = sys.argv[sys.argv.index("--scenario-name") + 1]
with open(os.path.join(os.environ["FAKE_PIDS"], name), "w") as f:
    f.write(str(os.getpid()))
with open(os.path.join(os.environ["FAKE_PIDS"], name + ".cluster"), "w") as f:
    f.write(os.environ["K8S_AUTH_KUBECONFIG"])
print(f"fake molecule {{name}} K8S_AUTH_KUBECONFIG={{os.environ['K8S_AUTH_KUBECONFIG']}}",
      flush=True)
if name == os.environ.get("FAKE_SLEEP"):
    time.sleep(600)
if os.environ.get("FAKE_ALONE"):  # fails when another scenario is on this cluster now
    busy = os.environ["K8S_AUTH_KUBECONFIG"] + ".busy"
    try:
        os.close(os.open(busy, os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        sys.exit(f"{{name}}: another scenario is on this cluster")
    time.sleep(0.2)
    os.unlink(busy)
if name == os.environ.get("FAKE_FAIL"):
    print("TASK [Check it] ***", "fatal: [localhost]: FAILED! => {{'msg': 'it broke'}}", sep="\n")
    sys.exit(1)
"""


def project_with(tmp_path: Path, *scenarios: str) -> Path:
    project = tmp_path / "project"
    for name in scenarios:
        (project / "molecule" / name).mkdir(parents=True)
        (project / "molecule" / name / "molecule.yml").write_text("---\n")
    (project / "molecule/common").mkdir(parents=True, exist_ok=True)  # no molecule.yml
    return project


@pytest.fixture
def fake_molecule(tmp_path, monkeypatch):
    script = tmp_path / "bin/molecule"
    script.parent.mkdir()
    script.write_text(FAKE_MOLECULE.format(python=sys.executable))
    script.chmod(0o755)
    monkeypatch.setattr(molecule, "MOLECULE", script)
    pids = tmp_path / "pids"
    pids.mkdir()
    return {"FAKE_PIDS": str(pids), "PATH": os.environ["PATH"]}


def cluster_env(tmp_path: Path, **more: str) -> dict[str, str]:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{}\n")
    return {molecule.EXISTING_CLUSTER_ENV: str(kubeconfig), **more}


def test_every_scenario_by_default_and_an_unknown_one_is_one_line(tmp_path, capsys):
    project = project_with(tmp_path, "b", "a")
    assert molecule.scenarios_of(project) == ["a", "b"]
    assert molecule.check_scenarios(project, []) == ["a", "b"]
    assert molecule.run(project, ["c"], 2, cluster_env(tmp_path)) == 1
    err = capsys.readouterr().err
    assert err == (
        f"ansible-operator dev molecule: no scenario c in {project / 'molecule'} "
        "(there are: a, b)\n"
    )


def test_a_named_cluster_whose_kubeconfig_is_missing_is_one_line(tmp_path, capsys):
    project = project_with(tmp_path, "a")
    missing = tmp_path / "gone.kubeconfig"
    environ = {molecule.EXISTING_CLUSTER_ENV: str(missing)}
    assert molecule.run(project, ["a"], 1, environ) == 1
    assert capsys.readouterr().err == (
        f"ansible-operator dev molecule: {molecule.EXISTING_CLUSTER_ENV}={missing}: "
        "no such kubeconfig file\n"
    )


def test_molecule_gets_the_cluster_the_warm_playbook_and_this_virtualenv_on_path(tmp_path):
    env = molecule.environment({"PATH": "/usr/bin", "X": "y"}, tmp_path / "kc", tmp_path / "bin")
    assert env["K8S_AUTH_KUBECONFIG"] == str(tmp_path / "kc")
    assert env["PATH"] == os.pathsep.join(
        [str(tmp_path / "bin"), str(molecule.MOLECULE.parent), "/usr/bin"]
    )
    assert env["X"] == "y"


def test_one_scenario_streams_its_output_and_a_timing_line(tmp_path, fake_molecule, capfd):
    project = project_with(tmp_path, "a", "b")
    env = cluster_env(tmp_path, **fake_molecule)
    assert molecule.run(project, ["a"], 2, env) == 0
    out = capfd.readouterr().out.splitlines()
    assert out[0] == f"fake molecule a K8S_AUTH_KUBECONFIG={tmp_path / 'kubeconfig'}"
    assert out[1].startswith("[molecule] a: ") and out[1].endswith(" s")
    assert out[2] == "[molecule] passed: a"


def test_parallel_scenarios_keep_output_only_of_a_failure(tmp_path, fake_molecule, capfd):
    project = project_with(tmp_path, "a", "b", "c")
    env = cluster_env(tmp_path, **fake_molecule, FAKE_FAIL="b")
    assert molecule.run(project, [], 2, env) == 1
    out = capfd.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("[molecule] a b c, 2 at a time; output in ")
    logs = Path(lines[0].rsplit(" ", 1)[1])
    assert "fake molecule b" in out, "the failed scenario's output is printed"
    assert "fake molecule a" not in out and "fake molecule c" not in out
    failed = [line for line in lines if line.startswith("[molecule] b: FAILED in ")]
    assert failed and failed[0].endswith(
        " s: TASK [Check it]: fatal: [localhost]: FAILED! => {'msg': 'it broke'}"
    ), "the FAILED line says what failed, for a CI that shows only a log's end"
    assert any(line.startswith("[molecule] a: passed in ") for line in lines)
    assert lines[-1] == f"[molecule] failed; output in {logs}"
    assert sorted(p.name for p in logs.iterdir()) == ["a.log", "b.log", "c.log"]


# A molecule run's output as it frames it, with colours: an ignored failure, then the one.
FRAMED = "\n".join(
    f"  \x1b[2m\u2502\x1b[0m \x1b[31m{line}\x1b[0m"
    for line in (
        "TASK [Is it there?] ***",
        'fatal: [localhost]: FAILED! => {"msg": "not yet"}',
        "...ignoring",
        "TASK [Delete the key] ***",
        'fatal: [localhost]: FAILED! => {"rc": 1, "stderr": "context deadline',
        '  exceeded", "stdout": ""}',
        "TASK [Show the log] ***",
        'fatal: [localhost]: FAILED! => {"msg": "the rescue fails again"}',
    )
)


def test_the_first_failure_is_the_task_that_failed_its_message_unwrapped():
    assert molecule.first_failure(FRAMED) == (
        ': TASK [Delete the key]: fatal: [localhost]: FAILED! => {"rc": 1, "stderr": "context '
        'deadline exceeded", "stdout": ""}'
    )
    assert molecule.first_failure("PLAY RECAP\nlocalhost: ok=3 failed=0") == ""
    assert len(molecule.first_failure(FRAMED.replace("deadline", "x" * 2000))) == 600


def test_parallel_scenarios_that_pass_leave_no_output_files(tmp_path, fake_molecule, capfd):
    project = project_with(tmp_path, "a", "b")
    assert molecule.run(project, [], 2, cluster_env(tmp_path, **fake_molecule)) == 0
    lines = capfd.readouterr().out.splitlines()
    assert not Path(lines[0].rsplit(" ", 1)[1]).exists()
    assert lines[-1] == "[molecule] passed: a b"


def test_parallel_scenarios_each_get_a_private_cluster_of_their_own(
    tmp_path, fake_molecule, capfd, monkeypatch
):
    started: list[Path] = []

    @contextlib.contextmanager
    def private_cluster():
        kubeconfig = tmp_path / f"cluster-{len(started)}.kubeconfig"
        started.append(kubeconfig)
        yield kubeconfig

    monkeypatch.setattr(molecule, "_private_cluster", private_cluster)
    project = project_with(tmp_path, "a", "b", "c", "d", "e")
    assert molecule.run(project, [], 2, {**fake_molecule, "FAKE_ALONE": "1"}) == 0
    out = capfd.readouterr().out
    assert len(started) == 2, "one cluster per job"
    assert out.splitlines()[-1] == "[molecule] passed: a b c d e"
    # One scenario: one cluster whatever --jobs says.
    started.clear()
    assert molecule.run(project, ["a"], 4, fake_molecule) == 0
    assert len(started) == 1


def test_a_scenario_that_asks_for_a_real_node_runs_on_the_cluster_with_one(
    tmp_path, fake_molecule, monkeypatch
):
    started: list[str] = []

    @contextlib.contextmanager
    def private_cluster(real_node: bool = False):
        started.append(f"cluster-{len(started)}{'-real' if real_node else ''}")
        yield tmp_path / started[-1]

    monkeypatch.setattr(molecule, "_private_cluster", private_cluster)
    project = project_with(tmp_path, "a", "b", "c", "data")
    (project / "molecule/data/molecule.yml").write_text(
        "platforms:\n  - name: cluster\n    real_node: true\n"
    )
    assert molecule.run(project, [], 2, {**fake_molecule, "FAKE_ALONE": "1"}) == 0
    assert started == ["cluster-0", "cluster-1", "cluster-2-real"]
    ran_on = {
        name: Path(fake_molecule["FAKE_PIDS"], f"{name}.cluster").read_text()
        for name in ("a", "b", "c", "data")
    }
    assert ran_on["data"] == str(tmp_path / "cluster-2-real")
    assert {ran_on[name] for name in "abc"} <= {
        str(tmp_path / "cluster-0"),
        str(tmp_path / "cluster-1"),
    }
    # The real node's scenario alone: its cluster only.
    started.clear()
    assert molecule.run(project, ["data"], 2, fake_molecule) == 0
    assert started == ["cluster-0-real"]


def test_a_real_node_that_is_not_true_or_false_is_one_line(tmp_path, capsys):
    project = project_with(tmp_path, "data")
    config = project / "molecule/data/molecule.yml"
    config.write_text("platforms:\n  - name: cluster\n    real_node: yes please\n")
    assert molecule.run(project, [], 1, cluster_env(tmp_path)) == 1
    assert capsys.readouterr().err == (
        f"ansible-operator dev molecule: {config}: a platform's real_node is true or false\n"
    )


def dev(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "ansible_operator.cli", "dev", *args],
        capture_output=True, text=True, timeout=120, check=False, env=env, cwd=cwd,
    )  # fmt: skip


def test_sigterm_stops_every_molecule_and_the_command(tmp_path, fake_molecule):
    project = project_with(tmp_path, "a", "b")
    env = {**os.environ, **cluster_env(tmp_path, **fake_molecule), "FAKE_SLEEP": "a"}
    # The stand-in molecule must be found by the command too: a copy of this module's patch.
    code = (
        "import sys, pathlib; from ansible_operator.dev import molecule; "
        f"molecule.MOLECULE = pathlib.Path({str(molecule.MOLECULE)!r}); "
        f"sys.exit(molecule.run(pathlib.Path({str(project)!r}), [], 2, __import__('os').environ))"
    )
    command = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                               text=True)  # fmt: skip
    pid_file = Path(fake_molecule["FAKE_PIDS"]) / "a"
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    sleeper = int(pid_file.read_text())
    command.send_signal(signal.SIGTERM)
    out, _ = command.communicate(timeout=120)
    assert command.returncode == 1
    assert "[molecule] stopping on SIGTERM" in out
    assert "[molecule] a: FAILED in " in out
    assert procfs.start_time(sleeper) is None, "no molecule is left running"


def test_dev_operator_start_without_a_cluster_is_one_line(tmp_path):
    (tmp_path / "watches.yaml").write_text("[]\n")
    result = dev("operator", "start", "--dir", str(tmp_path / "op"), "--project", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "ansible-operator dev operator start: --kubeconfig must name a running cluster's "
        "kubeconfig (None) and --namespace the namespace to watch"
    ]
    assert not (tmp_path / "op/operator.json").exists()


def test_dev_operator_stop_and_running_without_an_operator(tmp_path):
    assert dev("operator", "running", "--dir", str(tmp_path)).returncode == 1
    assert dev("operator", "stop", "--dir", str(tmp_path)).returncode == 0


@pytest.mark.parametrize("command", ["run", "operator start"])
def test_a_directory_without_watches_yaml_is_one_line(tmp_path, command):
    extra = ["--dir", str(tmp_path / "op")] if command == "operator start" else []
    result = dev(*command.split(), *extra, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"ansible-operator dev {command}: no watches.yaml in {tmp_path}"
    ]


def test_the_repositorys_molecule_harness_is_the_one_new_api_writes():
    names = sorted(p.name for p in TEMPLATE_COMMON.iterdir())
    assert names == sorted(p.name for p in (REPO / "molecule/common").iterdir())
    for name in names:
        assert (REPO / "molecule/common" / name).read_text() == (
            TEMPLATE_COMMON / name
        ).read_text(), f"molecule/common/{name} differs from the new-api template's copy"


# -- dev run's reading of the project ---------------------------------------------------------


def test_the_objects_of_a_rendered_kustomization_and_their_kubectl_names():
    rendered = (
        "apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata:\n  name: m\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n---\n"
    )
    refs = project.objects_of(rendered)
    assert refs == [
        project.ObjectRef("cache.example.com/v1alpha1", "Memcached", "m"),
        project.ObjectRef("v1", "ConfigMap", "c"),
    ]
    assert [str(r) for r in refs] == ["memcached.cache.example.com/m", "ConfigMap/c"]


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        (None, False),
        ([{"type": "Successful", "status": "False"}], False),
        ([{"type": "Running", "status": "True"}], False),
        ([{"type": "Running", "status": "True"}, {"type": "Successful", "status": "True"}], True),
    ],
)
def test_a_condition_is_true_only_when_it_says_so(found, expected):
    obj = {"status": {"conditions": found}} if found is not None else {}
    assert condition_true(obj, "Successful") is expected
