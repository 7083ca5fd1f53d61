"""The argument spec's constraints on a real API server: each broken one refused with its message.

A generated CRD with every constraint at the top (on `spec`), in a dict option and in the
elements of a list of dicts is installed under a group of the test's own; a CR breaking one rule
is refused naming that rule's message, and CRs satisfying them all are accepted.
"""

from __future__ import annotations

import uuid

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from ansible_operator.scaffold import generate, samples

from .crds import install_crds, remove_crds

pytestmark = pytest.mark.e2e

SPEC = {
    "argument_specs": {
        "main": {
            "options": {
                "size": {"type": "int"},
                "replicas": {"type": "int"},
                "state": {"type": "str", "choices": ["present", "absent"]},
                "path": {"type": "str"},
                "content": {"type": "str"},
                "url": {"type": "str"},
                "user_name": {"type": "str"},
                "password": {"type": "str"},
                "tls": {"type": "bool"},
                "cert": {"type": "str"},
                "key": {"type": "str"},
                "mode": {"type": "str"},
                "source": {"type": "str"},
                "image": {"type": "str"},
                "git": {"type": "str"},
                "archive": {"type": "str"},
                "limits": {
                    "type": "dict",
                    "apply_defaults": True,
                    "options": {"cpu": {"type": "int", "default": 2}, "memory": {"type": "str"}},
                },
                "backend": {
                    "type": "dict",
                    "options": {
                        "host": {"type": "str"},
                        "socket": {"type": "str"},
                        "port": {"type": "int"},
                        "retries": {"type": "int"},
                    },
                    "mutually_exclusive": [["socket", "port"]],
                    "required_one_of": [["host", "socket"]],
                    "required_if": [["retries", 0, ["port"]]],
                },
                "volumes": {
                    "type": "list",
                    "elements": "dict",
                    "options": {
                        "name": {"type": "str", "required": True},
                        "claim": {"type": "str"},
                        "size_limit": {"type": "str"},
                        "empty_dir": {"type": "bool"},
                    },
                    "required_by": {"claim": "size_limit"},
                    "mutually_exclusive": [["claim", "empty_dir"]],
                },
            },
            "mutually_exclusive": [["size", "replicas"], ["image", "git", "archive"]],
            "required_together": [["user_name", "password"]],
            "required_one_of": [["url", "path"]],
            "required_if": [
                ["state", "present", ["path", "content"]],
                ["mode", "copy", ["image", "git"], True],
                ["tls", True, ["source"]],
            ],
            "required_by": {"tls": ["cert", "key"]},
        }
    }
}

VALID = {"url": "https://example.com"}

BROKEN = [
    ({"url": "u", "size": 1, "replicas": 2}, "spec", "size and replicas are mutually exclusive"),
    (
        {"url": "u", "image": "i", "archive": "a"},
        "spec",
        "image, git and archive are mutually exclusive",
    ),
    ({"url": "u", "userName": "me"}, "spec", "userName and password must be set together"),
    ({"size": 1}, "spec", "one of url or path is required"),
    (
        {"url": "u", "state": "present", "path": "p"},
        "spec",
        "path and content are required when state is present",
    ),
    ({"url": "u", "mode": "copy"}, "spec", "one of image or git is required when mode is copy"),
    (
        {"url": "u", "tls": True, "cert": "c", "key": "k"},
        "spec",
        "source is required when tls is true",
    ),
    ({"url": "u", "tls": False, "cert": "c"}, "spec", "cert and key are required when tls is set"),
    (
        {"url": "u", "backend": {"socket": "/s", "port": 1}},
        "spec.backend",
        "socket and port are mutually exclusive",
    ),
    ({"url": "u", "backend": {"port": 1}}, "spec.backend", "one of host or socket is required"),
    (
        {"url": "u", "backend": {"socket": "/s", "retries": 0}},
        "spec.backend",
        "port is required when retries is 0",
    ),
    (
        {"url": "u", "volumes": [{"name": "a"}, {"name": "b", "claim": "c"}]},
        "spec.volumes[1]",
        "sizeLimit is required when claim is set",
    ),
    (
        {
            "url": "u",
            "volumes": [{"name": "a", "claim": "c", "sizeLimit": "1Gi", "emptyDir": True}],
        },
        "spec.volumes[0]",
        "claim and emptyDir are mutually exclusive",
    ),
]

GOOD = [
    VALID,
    {
        "path": "p",
        "content": "c",
        "state": "present",
        "replicas": 2,
        "userName": "me",
        "password": "pw",
        "mode": "copy",
        "git": "g",
        "tls": True,
        "source": "s",
        "cert": "c",
        "key": "k",
        "backend": {"socket": "/s", "retries": 1},
        "volumes": [
            {"name": "a", "claim": "c", "sizeLimit": "1Gi"},
            {"name": "b", "emptyDir": True},
        ],
    },
    {"url": "u", "state": "absent", "tls": False, "cert": "c", "key": "k", "source": "s"},
    {"url": "u", "backend": {"host": "h", "port": 1, "retries": 0}},
]


@pytest.fixture(scope="module")
def ruled_crd(cluster, tmp_path_factory):
    """The generated CRD of a kind with every constraint, installed under a unique group."""
    project = tmp_path_factory.mktemp("rules")
    group = f"r{uuid.uuid4().hex[:8]}.example.com"
    (project / "roles/ruled/meta").mkdir(parents=True)
    (project / "roles/ruled/tasks").mkdir()
    (project / "roles/ruled/tasks/main.yml").write_text("---\n[]\n")
    (project / "roles/ruled/meta/argument_specs.yml").write_text(yaml.safe_dump(SPEC))
    watches = [{"version": "v1", "group": group, "kind": "Policy", "role": "ruled"}]
    (project / "watches.yaml").write_text(yaml.safe_dump(watches))
    result = generate.plan(project / "watches.yaml", project / "out", shown_base=project)
    [planned] = result.crds
    assert planned.path.name == f"{group}_policies.yaml"
    with cluster.api_client() as api_client:
        names = install_crds(api_client, [planned.crd])
        try:
            yield group, client.CustomObjectsApi(api_client)
        finally:
            remove_crds(api_client, names)


def create(crs, group: str, namespace: str, spec: dict) -> dict:
    body = {
        "apiVersion": f"{group}/v1",
        "kind": "Policy",
        "metadata": {"name": f"p-{uuid.uuid4().hex[:8]}"},
        "spec": spec,
    }
    return crs.create_namespaced_custom_object(group, "v1", namespace, "policies", body)


@pytest.mark.parametrize(("spec", "where", "message"), BROKEN, ids=[m for _, _, m in BROKEN])
def test_a_cr_breaking_a_rule_is_refused_with_its_message(
    ruled_crd, namespace, spec, where, message
):
    group, crs = ruled_crd
    with pytest.raises(ApiException) as caught:
        create(crs, group, namespace, spec)
    assert caught.value.status == 422, caught.value.body
    body = str(caught.value.body)
    assert f"{where}: Invalid value: " in body and message in body, body
    # Only the broken rule is reported.
    others = [m for _, _, m in BROKEN if m != message and m in body]
    assert not others, body


@pytest.mark.parametrize("spec", GOOD)
def test_a_cr_keeping_every_rule_is_accepted(ruled_crd, namespace, spec):
    group, crs = ruled_crd
    created = create(crs, group, namespace, spec)["spec"]
    assert {k: v for k, v in created.items() if k in spec} == spec


def test_apply_defaults_fills_in_an_absent_dict_with_its_defaults(ruled_crd, namespace):
    group, crs = ruled_crd
    assert create(crs, group, namespace, VALID)["spec"]["limits"] == {"cpu": 2}
    given = create(crs, group, namespace, {**VALID, "limits": {"memory": "1Gi"}})
    assert given["spec"]["limits"] == {"cpu": 2, "memory": "1Gi"}


@pytest.fixture(scope="module")
def spec_schema(tmp_path_factory):
    """The same CRD's spec schema, for `generate crds --check`'s own verdicts."""
    project = tmp_path_factory.mktemp("rules-check")
    (project / "roles/ruled/meta").mkdir(parents=True)
    (project / "roles/ruled/tasks").mkdir()
    (project / "roles/ruled/tasks/main.yml").write_text("---\n[]\n")
    (project / "roles/ruled/meta/argument_specs.yml").write_text(yaml.safe_dump(SPEC))
    watches = [{"version": "v1", "group": "r.example.com", "kind": "Policy", "role": "ruled"}]
    (project / "watches.yaml").write_text(yaml.safe_dump(watches))
    [planned] = generate.plan(project / "watches.yaml", project / "out").crds
    return planned.crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]


@pytest.mark.parametrize(("spec", "where", "message"), BROKEN, ids=[m for _, _, m in BROKEN])
def test_the_samples_check_refuses_what_the_api_server_refuses(spec_schema, spec, where, message):
    """scaffold.cel's verdicts on the CRs the API server refuses above: the same rule only."""
    found = samples.problems(samples.defaulted(spec, spec_schema), spec_schema)
    assert len(found) == 1, found
    assert found[0].startswith(f"{where}: {message} (rule: ")


@pytest.mark.parametrize("spec", GOOD)
def test_the_samples_check_accepts_what_the_api_server_accepts(spec_schema, spec):
    assert samples.problems(samples.defaulted(spec, spec_schema), spec_schema) == []
