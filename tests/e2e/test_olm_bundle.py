"""The OLM bundle, checked by the real validators: operator-framework/api's default validators
and its operatorframework suite (`ansible-operator bundle validate`, built from Go modules on
first use, then cached), and the scorecard's static tests (tests/scorecard.py: the scorecard
runs them as Pods, which the local cluster's kwok cannot run), on this repository's bundle and on
one that `make bundle` makes in a project from `init`. In the e2e layer because `make e2e` makes
sure the cluster's kubectl (kustomize) exists first; no cluster is started."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from ansible_operator.devcluster import binaries, bundle_validator, deploy, gobuild
from ansible_operator.scaffold import bundle
from tests import scorecard
from tests.new_project import make, new_project

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def validator() -> Path:
    """The cached validator; its first build (minutes) says so past pytest's capture."""

    def progress(message: str) -> None:
        print(f"[bundle validator] {message}", file=sys.__stderr__, flush=True)

    return gobuild.ensure(bundle_validator.PROGRAM, progress=progress)


# Warnings of the validators that a bundle here may give, each with its reason (a substring of
# the warning: why it is accepted). Any other warning fails the test, as every error does.
ACCEPTED_WARNINGS: dict[str, str] = {
    "Kind=NginxOperator: provided API should have an example annotation": (
        "the samples kustomization lists one sample per kind, as init and new-api write it for "
        "PROJECT's resources; nginx's v1alpha2 sample is a file beside it, so alm-examples has "
        "no v1alpha2 example yet"
    ),
}

# Errors of the scorecard's static tests that a bundle here may give, each with its reason.
ACCEPTED_SCORECARD_ERRORS: dict[str, str] = {
    "Owned CRDs do not have resources specified (servicemonitors.monitoring.example.com)": (
        "a ServiceMonitor is configuration: its role makes nothing (what it causes is a scrape job "
        "in the selecting Prometheus's Secret), so its CSV entry lists no resources"
    ),
}


def assert_valid(bundle_dir: Path, dockerfile: Path, validator: Path) -> None:
    rc, findings = bundle_validator.validate(bundle_dir, optional=True, validator=validator)
    unexpected = [
        line
        for line in findings.splitlines()
        if not (line.startswith("warning: ") and any(w in line for w in ACCEPTED_WARNINGS))
    ]
    assert (rc, unexpected) == (0, []), findings
    results = scorecard.static_tests(bundle_dir, dockerfile)
    errors = {
        name: [e for e in r.errors if e not in ACCEPTED_SCORECARD_ERRORS]
        for name, r in results.items()
    }
    assert {name: found for name, found in errors.items() if found} == {}
    assert results["basic-check-spec"].suggestions == []


def test_the_repositorys_bundle_validates(tmp_path, validator):
    rendered = deploy.render(binaries.kubectl(), REPO, "quay.io/example/op:0.1.0", "manifests")
    options = bundle.Options(package="ansible-operator", version="0.1.0")
    made = bundle.make(list(yaml.safe_load_all(rendered)), options)
    for relative, text in made.files.items():
        (tmp_path / "bundle" / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "bundle" / relative).write_text(text)
    (tmp_path / "bundle.Dockerfile").write_text(made.dockerfile)
    assert_valid(tmp_path / "bundle", tmp_path / "bundle.Dockerfile", validator)
    owned = yaml.safe_load(
        (tmp_path / "bundle/manifests/ansible-operator.clusterserviceversion.yaml").read_text()
    )["spec"]["customresourcedefinitions"]["owned"]
    kinds = {e["kind"] for e in owned}
    assert {"Memcached", "NginxOperator", "At", "Foo"} <= kinds


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
        message: "{{ example_option }}"
"""


def test_make_bundle_in_a_new_project(tmp_path, monkeypatch, validator):
    """init, new-api with a role that makes a ConfigMap, `make bundle`: the base CSV is written,
    the bundle validates; an edit of the base survives a second `make bundle`."""
    project = new_project(
        tmp_path, monkeypatch, "greeter-operator", "hello", "v1alpha1", "Greeting"
    )
    (project / "roles/greeting/tasks/main.yml").write_text(ROLE_TASKS)
    make(project, "bundle", "VERSION=0.1.0", "IMG=quay.io/example/greeter:0.1.0")
    assert_valid(project / "bundle", project / "bundle.Dockerfile", validator)
    csv_file = project / "bundle/manifests/greeter-operator.clusterserviceversion.yaml"
    made = yaml.safe_load(csv_file.read_text())
    assert made["spec"]["version"] == "0.1.0"
    (entry,) = made["spec"]["customresourcedefinitions"]["owned"]
    assert entry["resources"] == [{"kind": "ConfigMap", "name": "", "version": "v1"}]

    base = project / "config/manifests/bases/greeter-operator.clusterserviceversion.yaml"
    edited = yaml.safe_load(base.read_text())
    edited["spec"]["description"] = "Greets, in a ConfigMap."
    base.write_text(yaml.safe_dump(edited))
    make(project, "bundle", "VERSION=0.2.0", "CHANNELS=alpha,stable", "DEFAULT_CHANNEL=stable")
    made = yaml.safe_load(
        (project / "bundle/manifests/greeter-operator.clusterserviceversion.yaml").read_text()
    )
    assert made["spec"]["description"] == "Greets, in a ConfigMap."
    assert made["metadata"]["name"] == "greeter-operator.v0.2.0"
    annotations = yaml.safe_load((project / "bundle/metadata/annotations.yaml").read_text())
    assert (
        annotations["annotations"]["operators.operatorframework.io.bundle.channel.default.v1"]
        == "stable"
    )


def test_the_validator_finds_what_is_wrong(tmp_path, monkeypatch, validator):
    """It is no rubber stamp: a bundle without the CRD its CSV owns, and with a capability level
    OLM does not know, is refused, naming both."""
    project = new_project(tmp_path, monkeypatch, "broken-operator", "b", "v1", "Thing")
    (project / "roles/thing/tasks/main.yml").write_text(ROLE_TASKS)
    make(project, "bundle")
    (project / "bundle/manifests/b.example.com_things.yaml").unlink()
    csv_file = project / "bundle/manifests/broken-operator.clusterserviceversion.yaml"
    csv_file.write_text(csv_file.read_text().replace("Basic Install", "Super Install"))
    rc, findings = bundle_validator.validate(project / "bundle", optional=True, validator=validator)
    assert rc == 1
    assert 'owned CRD "b.example.com/v1, Kind=Thing" not found' in findings
    assert '"Super Install" is not a valid capabilities level' in findings
