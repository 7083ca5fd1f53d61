"""The OLM bundle's pure parts: the base ClusterServiceVersion kept through regeneration
(operator-sdk #4356), descriptors from the CRD's schema, capabilities and minKubeVersion as the
project shows them, the objects a role makes, and `generate bundle`'s placement of each rendered
object; the scorecard's static tests (tests/scorecard.py) on a made bundle, and each failing on
the bundle that breaks its rule."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_operator.scaffold import bundle, csv, olm, role_objects
from tests import scorecard

REPO = Path(__file__).resolve().parents[2]


def crd(versions: tuple[str, ...] = ("v1alpha1",), *, conversion: str | None = None) -> dict:
    schema = {
        "openAPIV3Schema": {
            "description": "Thing is reconciled by the role thing.",
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "size": {"type": "integer", "description": "How many."},
                        "mode": {"type": "string", "enum": ["fast", "safe"]},
                        "labels": {"type": "object"},
                    },
                },
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        }
    }
    spec: dict[str, Any] = {
        "group": "example.com",
        "names": {"kind": "Thing", "plural": "things"},
        "versions": [{"name": v, "served": True, "schema": schema} for v in versions],
    }
    if conversion:
        spec["conversion"] = {"strategy": conversion}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": spec,
    }


MADE = [csv.Resource("Deployment", "apps/v1")]


def base_for(crds: list[dict], existing: dict | None = None) -> dict:
    entries = [e for c in crds for e in csv.owned(c, manage_status=True, resources=MADE)]
    return csv.update_base(existing, "thing-operator", entries, crds)


# --- the base CSV ----------------------------------------------------------------------------


def test_the_repositorys_base_csv_is_up_to_date():
    """config/manifests/bases is what `generate kustomize manifests` leaves (as generate crds
    --check does for the CRDs)."""
    name = olm.project_name(REPO)
    path = olm.base_path(REPO / "config/manifests", name)
    current = yaml.safe_load(path.read_text())
    expected = olm.updated_base(REPO, REPO / "config/manifests", name)
    assert current == expected, (
        f"{path} is out of date: run 'ansible-operator generate kustomize manifests'"
    )


def test_descriptors_come_from_the_schema_the_argument_spec_made():
    (entry,) = csv.owned(crd(), manage_status=True, resources=MADE)
    by_path = {d["path"]: d for d in entry["specDescriptors"]}
    assert by_path["size"]["description"] == "How many."
    assert by_path["size"]["x-descriptors"] == ["urn:alm:descriptor:com.tectonic.ui:number"]
    assert by_path["mode"]["x-descriptors"] == [
        "urn:alm:descriptor:com.tectonic.ui:select:fast",
        "urn:alm:descriptor:com.tectonic.ui:select:safe",
    ]
    assert "x-descriptors" not in by_path["labels"]
    assert [d["path"] for d in entry["statusDescriptors"]] == ["conditions"]
    assert entry["resources"] == [{"kind": "Deployment", "name": "", "version": "v1"}]
    (quiet,) = csv.owned(crd(), manage_status=False, resources=MADE)
    assert quiet["statusDescriptors"] == []


def test_one_owned_entry_per_served_version():
    entries = csv.owned(crd(("v1alpha2", "v1alpha1")), manage_status=True, resources=MADE)
    assert [(e["name"], e["version"]) for e in entries] == [
        ("things.example.com", "v1alpha2"),
        ("things.example.com", "v1alpha1"),
    ]


def test_regeneration_keeps_what_the_author_edited():
    """operator-sdk #4356: every hand edit of the base survives `generate kustomize manifests`;
    descriptors for removed fields go, those for new fields come."""
    edited = base_for([crd()])
    edited["spec"]["description"] = "Runs things, carefully."
    edited["spec"]["icon"] = [{"base64data": "AAAA", "mediatype": "image/png"}]
    edited["spec"]["installModes"] = [{"type": "AllNamespaces", "supported": True}]
    edited["metadata"]["annotations"]["capabilities"] = "Full Lifecycle"
    edited["metadata"]["annotations"]["categories"] = "Database"
    (entry,) = edited["spec"]["customresourcedefinitions"]["owned"]
    entry["displayName"] = "A Thing"
    entry["resources"] = [{"kind": "Secret", "name": "creds", "version": "v1"}]
    entry["specDescriptors"][0]["displayName"] = "How many things"
    changed = crd()
    fields = changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    del fields["properties"]["mode"]
    fields["properties"]["color"] = {"type": "string"}

    again = base_for([changed], existing=copy.deepcopy(edited))

    assert again["spec"]["description"] == "Runs things, carefully."
    assert again["spec"]["icon"] == edited["spec"]["icon"]
    assert again["spec"]["installModes"] == [{"type": "AllNamespaces", "supported": True}]
    assert again["metadata"]["annotations"]["capabilities"] == "Full Lifecycle"
    assert again["metadata"]["annotations"]["categories"] == "Database"
    (entry,) = again["spec"]["customresourcedefinitions"]["owned"]
    assert entry["displayName"] == "A Thing"
    assert entry["resources"] == [{"kind": "Secret", "name": "creds", "version": "v1"}]
    paths = [d["path"] for d in entry["specDescriptors"]]
    assert paths == ["size", "labels", "color"]
    assert entry["specDescriptors"][0]["displayName"] == "How many things"


def test_capabilities_and_min_kube_version_follow_what_the_project_shows():
    assert csv.capability([crd()]) == "Basic Install"
    assert csv.capability([crd(("v1", "v1alpha1"))]) == "Basic Install"
    assert csv.capability([crd(("v1", "v1alpha1"), conversion="Webhook")]) == "Seamless Upgrades"
    assert csv.min_kube_version([crd()]) == csv.MIN_KUBE_CRD_V1
    with_cel = crd()
    with_cel["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] = [
        {"rule": "self.size > 0"}
    ]
    assert csv.min_kube_version([with_cel]) == csv.MIN_KUBE_CEL
    # an author's claim is never lowered, and raised when the project needs more
    base = base_for([crd()])
    base["spec"]["minKubeVersion"] = "1.30.0"
    assert base_for([with_cel], base)["spec"]["minKubeVersion"] == "1.30.0"
    base["spec"]["minKubeVersion"] = "1.20.0"
    assert base_for([with_cel], base)["spec"]["minKubeVersion"] == "1.25.0"
    upgraded = base_for([crd(("v1", "v1alpha1"), conversion="Webhook")], base)
    assert upgraded["metadata"]["annotations"]["capabilities"] == "Seamless Upgrades"
    # OLM serves conversion webhooks only to operators of every namespace
    supported = [m["type"] for m in upgraded["spec"]["installModes"] if m["supported"]]
    assert supported == ["AllNamespaces"]


# --- the objects a role makes ------------------------------------------------------------------


def test_the_kinds_a_roles_files_name():
    tasks = """
- name: a Deployment
  kubernetes.core.k8s:
    definition:
      apiVersion: apps/v1
      kind: Deployment
      spec:
        template:
          spec:
            volumes: []
- name: its status
  operator_sdk.util.k8s_status:
    api_version: example.com/v1alpha1
    kind: Thing
- kubernetes.core.k8s:
    api_version: v1
    kind: "{{ some_kind }}"
# - kubernetes.core.k8s:
#     definition:
#       apiVersion: v1
#       kind: ConfigMap
"""
    found = role_objects.in_text(tasks)
    assert found == [
        csv.Resource("Deployment", "apps/v1"),
        csv.Resource("Thing", "example.com/v1alpha1"),
    ]
    template = "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: {{ name }}\n"
    assert role_objects.in_text(template) == [csv.Resource("Service", "v1")]


def test_made_by_reads_tasks_and_templates_and_leaves_out_the_own_kinds(tmp_path):
    (tmp_path / "tasks").mkdir()
    (tmp_path / "templates").mkdir()
    (tmp_path / "tasks/main.yml").write_text(
        "- k8s_status:\n    api_version: example.com/v1\n    kind: Thing\n"
    )
    (tmp_path / "templates/svc.yaml.j2").write_text("apiVersion: v1\nkind: Service\n")
    assert role_objects.made_by(tmp_path, {"Thing"}) == [csv.Resource("Service", "v1")]


# --- generate bundle -----------------------------------------------------------------------------


def rendered(base: dict) -> list[dict]:
    """What kustomize renders of config/manifests, in small."""
    account = "op-controller-manager"
    return [
        base,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "op-system"}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": account, "namespace": "op-system"},
        },
        crd(),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "op-manager-role"},
            "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "op-manager-rolebinding"},
            "roleRef": {"kind": "ClusterRole", "name": "op-manager-role"},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": "op-system"}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "op-leader-election-role", "namespace": "op-system"},
            "rules": [
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]}
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "op-leader-election-rolebinding", "namespace": "op-system"},
            "roleRef": {"kind": "Role", "name": "op-leader-election-role"},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": "op-system"}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "op-metrics-reader"},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "op-metrics", "namespace": "op-system"},
            "spec": {"ports": [{"port": 8443}]},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "op-controller-manager",
                "namespace": "op-system",
                "labels": {"control-plane": "controller-manager"},
            },
            "spec": {
                "template": {
                    "spec": {
                        "serviceAccountName": account,
                        "containers": [
                            {
                                "name": "manager",
                                "image": "registry.example.com/op:0.1.0",
                                "env": [{"name": "WATCH_NAMESPACE", "value": "x"}],
                            }
                        ],
                    }
                }
            },
        },
        {
            "apiVersion": "example.com/v1alpha1",
            "kind": "Thing",
            "metadata": {"name": "thing-sample", "namespace": "default"},
            "spec": {"size": 2, "mode": "fast"},
        },
        {
            "apiVersion": "scorecard.operatorframework.io/v1alpha3",
            "kind": "Configuration",
            "metadata": {"name": "config"},
            "stages": [],
        },
    ]


OPTIONS = bundle.Options(package="op", version="0.2.0", channels=("alpha", "stable"))


def write(made: bundle.Bundle, root: Path) -> Path:
    for relative, text in made.files.items():
        (root / "bundle" / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / "bundle" / relative).write_text(text)
    (root / "bundle.Dockerfile").write_text(made.dockerfile)
    return root / "bundle"


def test_each_rendered_object_goes_where_olm_wants_it():
    made = bundle.make(rendered(base_for([crd()])), OPTIONS)
    assert sorted(made.files) == [
        "manifests/example.com_things.yaml",
        "manifests/op-metrics-reader_rbac.authorization.k8s.io_v1_clusterrole.yaml",
        "manifests/op-metrics_v1_service.yaml",
        "manifests/op.clusterserviceversion.yaml",
        "metadata/annotations.yaml",
        "tests/scorecard/config.yaml",
    ]
    made_csv = yaml.safe_load(made.files["manifests/op.clusterserviceversion.yaml"])
    assert made_csv["metadata"]["name"] == "op.v0.2.0"
    assert made_csv["spec"]["version"] == "0.2.0"
    install = made_csv["spec"]["install"]["spec"]
    (deployment,) = install["deployments"]
    assert deployment["name"] == "op-controller-manager"
    assert deployment["label"] == {"control-plane": "controller-manager"}
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["env"] == [
        {
            "name": "WATCH_NAMESPACE",
            "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.annotations['olm.targetNamespaces']"}
            },
        }
    ]
    assert install["clusterPermissions"] == [
        {
            "serviceAccountName": "op-controller-manager",
            "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"]}],
        }
    ]
    assert install["permissions"][0]["rules"][0]["resources"] == ["leases"]
    examples = json.loads(made_csv["metadata"]["annotations"]["alm-examples"])
    assert examples == [
        {
            "apiVersion": "example.com/v1alpha1",
            "kind": "Thing",
            "metadata": {"name": "thing-sample"},
            "spec": {"size": 2, "mode": "fast"},
        }
    ]
    service = yaml.safe_load(made.files["manifests/op-metrics_v1_service.yaml"])
    assert "namespace" not in service["metadata"]
    annotations = yaml.safe_load(made.files["metadata/annotations.yaml"])["annotations"]
    assert annotations["operators.operatorframework.io.bundle.channels.v1"] == "alpha,stable"
    assert "LABEL operators.operatorframework.io.bundle.package.v1=op\n" in made.dockerfile


def test_a_conversion_webhook_becomes_a_webhook_definition():
    converting = crd(("v1alpha2", "v1alpha1"), conversion="Webhook")
    converting["spec"]["conversion"]["webhook"] = {
        "clientConfig": {"service": {"name": "op-webhook", "port": 443, "path": "/convert"}},
        "conversionReviewVersions": ["v1"],
    }
    objects = [
        converting if o["kind"] == "CustomResourceDefinition" else o
        for o in rendered(base_for([converting]))
    ]
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "op-webhook"},
            "spec": {"ports": [{"port": 443, "targetPort": 9443}]},
        }
    )
    made_csv = yaml.safe_load(
        bundle.make(objects, OPTIONS).files["manifests/op.clusterserviceversion.yaml"]
    )
    (webhook,) = made_csv["spec"]["webhookdefinitions"]
    assert webhook["type"] == "ConversionWebhook"
    assert webhook["conversionCRDs"] == ["things.example.com"]
    assert (webhook["containerPort"], webhook["targetPort"], webhook["webhookPath"]) == (
        443,
        9443,
        "/convert",
    )
    assert webhook["deploymentName"] == "op-controller-manager"
    owned = made_csv["spec"]["customresourcedefinitions"]["owned"]
    assert [e["version"] for e in owned] == ["v1alpha2", "v1alpha1"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda docs: [d for d in docs if d["kind"] != "ClusterServiceVersion"],
            "0 ClusterServiceVersions",
        ),
        (lambda docs: [d for d in docs if d["kind"] != "Deployment"], "rendered no Deployment"),
    ],
)
def test_input_it_cannot_use_is_one_line(change, message):
    with pytest.raises(bundle.BundleError, match=message):
        bundle.make(change(rendered(base_for([crd()]))), OPTIONS)
    with pytest.raises(bundle.BundleError, match="not a semantic version"):
        bundle.check_version("1.0")


# --- the scorecard's static tests ----------------------------------------------------------------


def test_the_made_bundle_passes_every_static_test(tmp_path):
    made = write(bundle.make(rendered(base_for([crd()])), OPTIONS), tmp_path)
    results = scorecard.static_tests(made, tmp_path / "bundle.Dockerfile")
    assert {name: r.errors for name, r in results.items() if r.errors} == {}
    assert results["olm-status-descriptors"].suggestions  # the sample has no status


def _broken(tmp_path: Path, edit) -> dict[str, scorecard.Result]:
    made = write(bundle.make(rendered(base_for([crd()])), OPTIONS), tmp_path)
    path = made / "manifests/op.clusterserviceversion.yaml"
    doc = yaml.safe_load(path.read_text())
    edit(doc, tmp_path)
    path.write_text(yaml.safe_dump(doc))
    return scorecard.static_tests(made, tmp_path / "bundle.Dockerfile")


def _owned(doc: dict) -> dict:
    return doc["spec"]["customresourcedefinitions"]["owned"][0]


def _example_sets(doc: dict, spec: dict | None, status: dict | None = None) -> None:
    example: dict[str, Any] = {
        "apiVersion": "example.com/v1alpha1",
        "kind": "Thing",
        "metadata": {"name": "x"},
    }
    if spec is not None:
        example["spec"] = spec
    if status is not None:
        example["status"] = status
    doc["metadata"]["annotations"]["alm-examples"] = json.dumps([example])


@pytest.mark.parametrize(
    ("test", "edit"),
    [
        ("olm-crds-have-resources", lambda doc, _: _owned(doc).update(resources=[])),
        ("olm-spec-descriptors", lambda doc, _: _owned(doc).update(specDescriptors=[])),
        ("olm-spec-descriptors", lambda doc, _: _example_sets(doc, None)),
        (
            "olm-status-descriptors",
            lambda doc, _: (
                _owned(doc).update(statusDescriptors=[])
                or _example_sets(doc, {"size": 1}, {"phase": "Up"})
            ),
        ),
        ("olm-status-descriptors", lambda doc, _: _owned(doc).update(version="v1")),
        ("olm-crds-have-validation", lambda doc, _: _example_sets(doc, {"sizee": 1})),
        (
            "olm-bundle-validation (format)",
            lambda _, root: (root / "bundle.Dockerfile").write_text("FROM scratch\n"),
        ),
    ],
)
def test_each_static_test_fails_on_the_bundle_that_breaks_its_rule(tmp_path, test, edit):
    results = _broken(tmp_path, edit)
    assert results[test].errors, test


def test_basic_check_spec_only_suggests(tmp_path):
    results = _broken(tmp_path, lambda doc, _: _example_sets(doc, None))
    assert results["basic-check-spec"].errors == []
    assert results["basic-check-spec"].suggestions == ["spec missing from [x]"]
