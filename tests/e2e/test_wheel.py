"""The package as a user gets it: the wheel built from this repository, installed into a fresh
virtualenv (no system site-packages), is all that roles need.

The tools run from that virtualenv in an empty directory outside the repository, with a clean
environment (no ANSIBLE_* variable, a private HOME): operator_sdk.util must come from the wheel
and kubernetes.core from the `ansible` dependency, found in site-packages/ansible_collections.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
import yaml

from .crds import GROUP, VERSION, install_crds, kind_crd
from .resources import new_cr, wait_condition
from .wheel import run, user_env, wheel_venv

pytestmark = pytest.mark.e2e

KIND = "Wheeled"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return wheel_venv(tmp_path_factory, tmp_path_factory.mktemp("wheel"))


@pytest.fixture
def user(venv: Path, tmp_path: Path) -> dict:
    """Where and how a user runs the tools: an empty directory and a clean environment."""
    (tmp_path / "home").mkdir()
    (tmp_path / "project").mkdir()
    return {"cwd": tmp_path / "project", "env": user_env(venv, tmp_path / "home")}


def test_ansible_galaxy_lists_both_collections_in_the_venv(venv, user):
    listed = run([str(venv / "bin/ansible-galaxy"), "collection", "list"], **user).stdout
    site = str(venv / "lib")
    sections = listed.split("\n# ")
    ours = [s for s in sections if "operator_sdk.util" in s]
    assert len(ours) == 1 and ours[0].startswith(site), listed
    assert "0.5.0" in ours[0].split("operator_sdk.util", 1)[1].splitlines()[0]
    assert any(s.startswith(site) and "kubernetes.core" in s for s in sections), listed


@pytest.fixture
def wheeled_crd(cluster) -> None:
    with cluster.api_client() as api_client:
        install_crds(api_client, [kind_crd(KIND)])


def test_a_playbook_sets_a_status_with_the_wheels_k8s_status(
    venv, user, cluster, namespace, crs, wheeled_crd
):
    crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "wheeleds", new_cr(KIND, "w1", {})
    )
    playbook = user["cwd"] / "status.yml"
    tasks = [
        {
            "name": "status from the wheel's collection",
            "operator_sdk.util.k8s_status": {
                "api_version": f"{GROUP}/{VERSION}",
                "kind": KIND,
                "name": "w1",
                "namespace": namespace,
                "status": {"fromWheel": "yes"},
            },
        },
        {"name": "an action plugin too", "operator_sdk.util.requeue_after": {"time": "1m"}},
    ]
    play = {"hosts": "localhost", "gather_facts": False, "tasks": tasks}
    playbook.write_text(yaml.safe_dump([play]))
    env = dict(user["env"], K8S_AUTH_KUBECONFIG=str(cluster.kubeconfig))
    out = run(
        [str(venv / "bin/ansible-playbook"), playbook.name],
        cwd=user["cwd"],
        env=env,
        timeout=300,
    ).stdout
    assert "changed=1" in out and "failed=0" in out, out
    cr = crs.get_namespaced_custom_object(GROUP, VERSION, namespace, "wheeleds", "w1")
    assert cr["status"]["fromWheel"] == "yes"


def test_the_wheels_operator_runs_a_role_that_sets_a_status(
    venv, user, cluster, namespace, crs, wheeled_crd
):
    project = user["cwd"]
    tasks = project / "roles/wheeled/tasks"
    tasks.mkdir(parents=True)
    status = {
        "api_version": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "name": "{{ ansible_operator_meta.name }}",
        "namespace": "{{ ansible_operator_meta.namespace }}",
        "status": {"fromWheel": "{{ message }}"},
    }
    (tasks / "main.yml").write_text(yaml.safe_dump([{"operator_sdk.util.k8s_status": status}]))
    watches = [{"group": GROUP, "version": VERSION, "kind": KIND, "role": "wheeled"}]
    (project / "watches.yaml").write_text(yaml.safe_dump(watches))
    env = dict(
        user["env"],
        KUBECONFIG=str(cluster.kubeconfig),
        WATCH_NAMESPACE=namespace,
        ANSIBLE_ROLES_PATH=str(project / "roles"),
        ANSIBLE_OPERATOR_USER_METRICS_ADDRESS="127.0.0.1:0",
    )
    argv = [
        str(venv / "bin/ansible-operator"),
        "run",
        "--watches-file=./watches.yaml",
        "--metrics-bind-address=0",
        "--health-probe-bind-address=0",
        "--proxy-port=0",
    ]
    log = project / "operator.log"
    with log.open("wb") as out:
        operator = subprocess.Popen(
            argv, cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        crs.create_namespaced_custom_object(
            GROUP, VERSION, namespace, "wheeleds", new_cr(KIND, "w2", {"message": "hello"})
        )
        cr = wait_condition(crs, namespace, KIND, "w2", "Successful", timeout=300)
        assert cr["status"]["fromWheel"] == "hello"
    finally:
        operator.send_signal(signal.SIGTERM)
        try:
            code = operator.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(operator.pid, signal.SIGKILL)
            raise
        finally:
            print(f"---- operator log ----\n{log.read_text(errors='replace')[-20000:]}")
    assert code == 0, "a clean exit on SIGTERM"
