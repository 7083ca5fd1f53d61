"""A new user's first operator, with nothing but the built wheel in a fresh virtualenv (no file
of this repository): `init` in an empty directory, `new-api`, a role that makes a ConfigMap from
a spec field and reports it in the status, `generate crds`, and the kind's molecule scenario,
run by the generated Makefile against the local cluster: green."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from ansible_operator import cli

from .crds import remove_crds
from .wheel import run, user_env, wheel_venv

pytestmark = [pytest.mark.e2e, pytest.mark.long]

ROLE_TASKS = """\
---
- name: A ConfigMap with the greeting
  kubernetes.core.k8s:
    definition:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: "{{ ansible_operator_meta.name }}-greeting"
        namespace: "{{ ansible_operator_meta.namespace }}"
      data:
        message: "{{ message }}"

- name: Report it in the CR's status
  operator_sdk.util.k8s_status:
    api_version: "@API_VERSION@"
    kind: Greeting
    name: "{{ ansible_operator_meta.name }}"
    namespace: "{{ ansible_operator_meta.namespace }}"
    status:
      configMap: "{{ ansible_operator_meta.name }}-greeting"
"""

ARGUMENT_SPECS = """\
---
argument_specs:
  main:
    short_description: Reconcile a Greeting.
    options:
      message:
        type: str
        default: hello
        description: What the ConfigMap says.
"""

VERIFY_TASKS = """\
---
- name: The sample Greeting
  kubernetes.core.k8s_info:
    api_version: "@API_VERSION@"
    kind: Greeting
    name: greeting-sample
    namespace: "{{ test_namespace }}"
  register: sample

- name: Its ConfigMap
  kubernetes.core.k8s_info:
    api_version: v1
    kind: ConfigMap
    name: greeting-sample-greeting
    namespace: "{{ test_namespace }}"
  register: config_map

- name: The ConfigMap says the spec's message and the status names it
  ansible.builtin.assert:
    that:
      - config_map.resources[0].data.message == "hi from molecule"
      - sample.resources[0].status.configMap == "greeting-sample-greeting"
"""


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return wheel_venv(tmp_path_factory, tmp_path_factory.mktemp("wheel"), extras="molecule")


@pytest.mark.timeout(2400)  # the wheel, a virtualenv with molecule, then the scenario
def test_init_new_api_role_crds_and_molecule_from_the_wheel(venv, cluster, tmp_path):
    project = tmp_path / "greeter-operator"
    project.mkdir()
    (tmp_path / "home").mkdir()
    namespace = f"init-{uuid.uuid4().hex[:8]}"
    env = dict(
        user_env(venv, tmp_path / "home"),
        ANSIBLE_OPERATOR_TEST_KUBECONFIG=str(cluster.kubeconfig),
        TEST_OPERATOR_NAMESPACE=namespace,
    )
    group = f"g{uuid.uuid4().hex[:8]}"
    api_version = f"{group}.example.com/v1alpha1"

    def tool(*argv: str, timeout: float = 300) -> str:
        return run([*argv], cwd=project, env=env, timeout=timeout).stdout

    tool("ansible-operator", "init", "--domain", "example.com")
    tool("ansible-operator", "new-api", "--group", group, "--version", "v1alpha1",
         "--kind", "Greeting")  # fmt: skip
    role = project / "roles/greeting"
    (role / "tasks/main.yml").write_text(ROLE_TASKS.replace("@API_VERSION@", api_version))
    (role / "meta/argument_specs.yml").write_text(ARGUMENT_SPECS)
    (role / "defaults/main.yml").write_text("---\nmessage: hello\n")
    sample = project / f"config/samples/{group}_v1alpha1_greeting.yaml"
    body = yaml.safe_load(sample.read_text())
    sample.write_text(yaml.safe_dump({**body, "spec": {"message": "hi from molecule"}}))
    test = project / "molecule/greeting/tasks/greeting_test.yml"
    test.write_text(VERIFY_TASKS.replace("@API_VERSION@", api_version))
    tool("ansible-operator", "generate", "crds")
    crd_file = project / f"config/crd/bases/{group}.example.com_greetings.yaml"
    crd = yaml.safe_load(crd_file.read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert "message" in spec["properties"], spec

    try:
        proc = subprocess.run(
            ["make", "molecule", "SCENARIO=greeting"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=1200,
        )
        output = proc.stdout + proc.stderr
        print(output[-20000:])
        assert proc.returncode == 0, "the scenario is green"
        assert "The ConfigMap says the spec's message and the status names it" in output
        assert "ok: [localhost]" in output
    finally:
        with cluster.api_client() as api_client:
            remove_crds(api_client, [f"greetings.{group}.example.com"])
            try:
                client.CoreV1Api(api_client).delete_namespace(namespace)
            except client.ApiException as err:
                if err.status != 404:
                    raise


def test_a_fresh_project_builds_its_installer(tmp_path, monkeypatch, cluster):
    """Before any kind: config/default renders (kustomize accepts the empty kustomizations),
    with the image named and the project's namespace."""
    project = tmp_path / "fresh-operator"
    project.mkdir()
    monkeypatch.chdir(project)
    assert cli.main(["init", "--domain", "example.com"]) == 0
    argv = ["dev-image", "render", "--tag", "registry.example.com/fresh:0.1.0"]
    assert cli.main([*argv, "--output", "dist/install.yaml"]) == 0
    docs = list(yaml.safe_load_all((project / "dist/install.yaml").read_text()))
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    assert deployment["metadata"]["namespace"] == "fresh-operator-system"
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example.com/fresh:0.1.0"
    assert "--leader-election-id=fresh-operator" in container["args"]


def test_make_install_and_uninstall_apply_and_delete_the_crds_only(tmp_path, monkeypatch, cluster):
    """operator-sdk's `make install` / `make uninstall`: the project's CRDs on KUBECONFIG's
    cluster (said first), nothing else of config/."""
    project = tmp_path / "install-operator"
    project.mkdir()
    monkeypatch.chdir(project)
    group = f"i{uuid.uuid4().hex[:8]}"
    assert cli.main(["init", "--domain", "example.com"]) == 0
    assert cli.main(["new-api", "--group", group, "--version", "v1", "--kind", "Thing"]) == 0
    crd = f"things.{group}.example.com"
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    operator = f"ANSIBLE_OPERATOR={sys.executable} -m ansible_operator.cli"

    def make(target: str) -> str:
        done = run(["make", "--no-print-directory", target, operator], cwd=project, env=env)
        return done.stdout + done.stderr

    try:
        installed = make("install")
        assert f"cluster: $KUBECONFIG {cluster.kubeconfig}" in installed
        assert f"customresourcedefinition.apiextensions.k8s.io/{crd} created" in installed
        assert "deployment" not in installed.lower() and "namespace/" not in installed
        with cluster.api_client() as api_client:
            extensions = client.ApiextensionsV1Api(api_client)
            assert extensions.read_custom_resource_definition(crd).spec.group.startswith(group)
        uninstalled = make("uninstall")
        assert f'customresourcedefinition.apiextensions.k8s.io "{crd}" deleted' in uninstalled
    finally:
        with cluster.api_client() as api_client:
            remove_crds(api_client, [crd])
