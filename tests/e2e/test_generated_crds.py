"""Generated CRDs on a real API server: accepted, defaults applied, bad CRs refused by field."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from ansible_operator.scaffold import generate

from .crds import install_crds, remove_crds

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
SPEC = {
    "argument_specs": {
        "main": {
            "short_description": "Everything an argument spec can say.",
            "options": {
                "size": {"type": "int", "default": 3, "description": "How many."},
                "mode": {"type": "str", "choices": ["fast", "safe"], "default": "safe"},
                "pool_name": {"type": "str", "required": True},
                "enabled": {"type": "bool", "default": True},
                "ratio": {"type": "float"},
                "memory": {"type": "bytes"},
                "extra": {"type": "raw"},
                "labels": {"type": "dict"},
                "backend": {
                    "type": "dict",
                    "options": {
                        "host_name": {"type": "str", "required": True},
                        "port_number": {"type": "int", "default": 11211},
                    },
                },
                "ports": {
                    "type": "list",
                    "elements": "dict",
                    "options": {"container_port": {"type": "int", "required": True}},
                },
                "tags": {"type": "list", "elements": "str", "default": ["a"]},
            },
        }
    }
}


@pytest.fixture
def generated_crd(tmp_path, cluster):
    """A project whose one kind has a unique group, its CRD generated and installed."""
    group = f"g{uuid.uuid4().hex[:8]}.example.com"
    (tmp_path / "roles/everything/meta").mkdir(parents=True)
    (tmp_path / "roles/everything/tasks").mkdir()
    (tmp_path / "roles/everything/tasks/main.yml").write_text("---\n[]\n")
    (tmp_path / "roles/everything/meta/argument_specs.yml").write_text(yaml.safe_dump(SPEC))
    watches = [{"version": "v1", "group": group, "kind": "Everything", "role": "everything"}]
    (tmp_path / "watches.yaml").write_text(yaml.safe_dump(watches))
    result = generate.plan(tmp_path / "watches.yaml", tmp_path / "out", shown_base=tmp_path)
    [planned] = result.crds
    generate.write(planned)
    crd = yaml.safe_load(planned.path.read_text())
    with cluster.api_client() as api_client:
        names = install_crds(api_client, [crd])
        try:
            yield group, client.CustomObjectsApi(api_client)
        finally:
            remove_crds(api_client, names)


def create(crs, group, namespace, name, spec, strict=False):
    body = {
        "apiVersion": f"{group}/v1",
        "kind": "Everything",
        "metadata": {"name": name},
        "spec": spec,
    }
    kwargs = {"field_validation": "Strict"} if strict else {}
    return crs.create_namespaced_custom_object(
        group, "v1", namespace, "everythings", body, **kwargs
    )


def refusal(crs, group, namespace, spec, strict=False) -> str:
    with pytest.raises(ApiException) as caught:
        create(crs, group, namespace, f"bad-{uuid.uuid4().hex[:6]}", spec, strict=strict)
    assert caught.value.status in (400, 422), caught.value.body
    return str(caught.value.body)


def test_a_valid_cr_is_accepted_with_the_defaults_filled_in(generated_crd, namespace):
    group, crs = generated_crd
    obj = create(
        crs,
        group,
        namespace,
        "good",
        {
            "poolName": "p",
            "memory": "64Mi",
            "extra": {"anything": [1, "two"]},
            "labels": {"free": "form"},
            "backend": {"hostName": "cache"},
            "ports": [{"containerPort": 80}],
            "ratio": 0.5,
        },
    )
    spec = obj["spec"]
    assert spec["size"] == 3
    assert spec["mode"] == "safe"
    assert spec["enabled"] is True
    assert spec["tags"] == ["a"]
    assert spec["backend"] == {"hostName": "cache", "portNumber": 11211}
    assert spec["extra"] == {"anything": [1, "two"]}
    assert spec["memory"] == "64Mi"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"poolName": "p", "size": "three"}, "spec.size"),
        ({"poolName": "p", "mode": "reckless"}, "spec.mode"),
        ({"size": 1}, "spec.poolName"),
        ({"poolName": "p", "backend": {"portNumber": 1}}, "spec.backend.hostName"),
        ({"poolName": "p", "ports": [{}]}, "spec.ports[0].containerPort"),
        ({"poolName": "p", "tags": [1]}, "spec.tags[0]"),
        ({"poolName": "p", "enabled": "yes"}, "spec.enabled"),
    ],
)
def test_a_bad_cr_is_refused_naming_the_field(generated_crd, namespace, spec, field):
    group, crs = generated_crd
    assert field in refusal(crs, group, namespace, spec)


def test_an_unknown_field_is_refused_under_strict_validation(generated_crd, namespace):
    group, crs = generated_crd
    body = refusal(crs, group, namespace, {"poolName": "p", "sizee": 2}, strict=True)
    assert 'unknown field \\"spec.sizee\\"' in body or "spec.sizee" in body


def test_the_repositorys_generated_crds_are_accepted_by_the_api_server(cluster, monkeypatch):
    monkeypatch.chdir(REPO)
    result = generate.plan(Path("watches.yaml"), generate.DEFAULT_OUTPUT, environ=os.environ)
    assert result.crds
    with cluster.api_client() as api_client:
        ext = client.ApiextensionsV1Api(api_client)
        for planned in result.crds:
            # A server-side dry run: full validation, nothing stored on a shared cluster.
            try:
                ext.create_custom_resource_definition(planned.crd, dry_run="All")
            except ApiException as err:
                if err.status != 409:
                    raise
                name = planned.crd["metadata"]["name"]
                current = ext.read_custom_resource_definition(name)
                body = dict(planned.crd)
                body["metadata"] = dict(
                    body["metadata"], resourceVersion=current.metadata.resource_version
                )
                ext.replace_custom_resource_definition(name, body, dry_run="All")
