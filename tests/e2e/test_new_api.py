"""`ansible-operator new-api` end to end: the scaffold's CRD, role, playbook and molecule scenario
work on the real cluster as generated (all but the scenario's placeholder assertion)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from ansible_operator import cli

from .crds import install_crds, remove_crds
from .waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.ansible_core, pytest.mark.long]

VERSION = "v1alpha1"
METRICS_ENV = {"ANSIBLE_OPERATOR_USER_METRICS_ADDRESS": "127.0.0.1:0"}


def scaffold(project: Path, group: str, kind: str, *extra: str) -> None:
    watches = project / "watches.yaml"
    if not watches.exists():
        watches.write_text("---\n# +kubebuilder:scaffold:watch\n")
    args = ["new-api", "--watches-file", str(watches), "--group", group, "--version", VERSION]
    assert cli.main([*args, "--kind", kind, *extra]) == 0


def project_crds(project: Path) -> list[dict]:
    return [
        yaml.safe_load(p.read_text()) for p in sorted((project / "config/crd/bases").glob("*.yaml"))
    ]


def successful(crs, group, namespace, plural, name):
    def probe():
        try:
            obj = crs.get_namespaced_custom_object(group, VERSION, namespace, plural, name)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        for c in (obj.get("status") or {}).get("conditions") or []:
            if c.get("type") == "Successful" and c.get("status") == "True":
                return obj
        return None

    return wait_until(probe, what=f"{plural}/{name} Successful=True", timeout=240)


def test_scaffolded_role_and_playbook_reconcile_their_samples(operator, cluster, namespace):
    project = operator.workdir  # the operator runs in the project's root
    group = f"n{uuid.uuid4().hex[:8]}.example.com"
    scaffold(project, group, "Scaffolded")
    scaffold(project, group, "Played", "--generate-playbook")
    with cluster.api_client() as api_client:
        crs = client.CustomObjectsApi(api_client)
        crds = install_crds(api_client, project_crds(project))
        try:
            operator.start(env={**METRICS_ENV, "ANSIBLE_ROLES_PATH": str(project / "roles")})
            short = group.split(".")[0]
            for kind in ("Scaffolded", "Played"):
                sample = project / f"config/samples/{short}_{VERSION}_{kind.lower()}.yaml"
                body = yaml.safe_load(sample.read_text())
                crs.create_namespaced_custom_object(
                    group, VERSION, namespace, f"{kind.lower()}s", body
                )
            for kind in ("Scaffolded", "Played"):
                obj = successful(
                    crs, group, namespace, f"{kind.lower()}s", f"{kind.lower()}-sample"
                )
                assert obj["spec"] == {"exampleOption": "hello"}
            log = operator.log()
            assert "example_option=hello" in log
            assert "Validating arguments against arg spec" in log, "the argument spec is checked"
            for kind in ("Scaffolded", "Played"):  # and no run failed on the way
                runs = operator.reconciles(kind, group, VERSION)
                assert runs["failed"] == 0 and runs["succeeded"] >= 1, (kind, runs)

            # The generated schema guards the scaffold too.
            bad = dict(body, metadata={"name": "bad"}, spec={"exampleOption": {"not": "text"}})
            with pytest.raises(ApiException) as refused:
                crs.create_namespaced_custom_object(group, VERSION, namespace, "playeds", bad)
            assert "spec.exampleOption" in str(refused.value.body)
        finally:
            operator.stop()
            remove_crds(api_client, crds)


@pytest.mark.skipif(shutil.which("molecule", path=os.path.dirname(sys.executable)) is None,
                    reason="molecule is not installed")  # fmt: skip
def test_the_scaffolded_molecule_scenario_fails_only_on_its_placeholder(cluster, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    group = f"m{uuid.uuid4().hex[:8]}.example.com"
    scaffold(project, group, "Widget")
    namespace = f"mol-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ)
    env.update(
        K8S_AUTH_KUBECONFIG=str(cluster.kubeconfig),
        TEST_OPERATOR_NAMESPACE=namespace,
        PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
        ANSIBLE_FORCE_COLOR="0",
        NO_COLOR="1",
    )
    env.pop("ANSIBLE_COLLECTIONS_PATH", None)
    molecule = os.path.join(os.path.dirname(sys.executable), "molecule")
    try:
        proc = subprocess.run(
            [molecule, "test", "-s", "widget"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        output = proc.stdout + proc.stderr
        print(output[-20000:], file=sys.stderr)
        assert proc.returncode != 0, "the placeholder assertion must fail the scenario"
        assert "FIXME Add real assertions for your operator" in output
        # Everything before verify passed: create, converge (the sample reached Successful) and
        # idempotence; then verify failed on the placeholder, and destroy still ran.
        for action, result in [
            ("create", "Successful"),
            ("converge", "Successful"),
            ("idempotence", "Successful"),
            ("verify", "Failed"),
        ]:
            assert _executed(output, action, result), f"{action} not {result}"
        assert "It was reconciled successfully" in output
    finally:
        with cluster.api_client() as api_client:
            core = client.CoreV1Api(api_client)

            def namespace_gone():
                try:
                    core.read_namespace(namespace)
                except ApiException as err:
                    return err.status == 404
                return False

            wait_until(
                namespace_gone, what="molecule's destroy to delete its namespace", timeout=240
            )
            remove_crds(api_client, [f"widgets.{group}"])


def _executed(output: str, action: str, result: str) -> bool:
    """Whether molecule reported `action` with `result` (its TTY and plain layouts alike)."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", output)
    return re.search(rf"widget\s*(?:➜|>)\s*{action}: Executed: {result}", plain) is not None
