"""Every kind in the repository's watches.yaml has everything an operator project owes it.

A role with an argument spec (the CRD's source), the CRD in the kustomization, a sample, RBAC
rules for the kind and its status, and a molecule scenario. Adding a kind by hand and
forgetting one of them fails here, before any cluster is involved.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WATCHES = yaml.safe_load((REPO / "watches.yaml").read_text())


def crds() -> dict[tuple[str, str], tuple[str, dict]]:
    """(group, kind) -> (file name, CRD)."""
    found = {}
    for path in sorted((REPO / "config/crd/bases").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        found[(crd["spec"]["group"], crd["spec"]["names"]["kind"])] = (path.name, crd)
    return found


def rules() -> list[dict]:
    role = yaml.safe_load((REPO / "config/rbac/role.yaml").read_text())
    assert role["kind"] == "ClusterRole"
    return role["rules"]


def verbs_for(group: str, resource: str) -> set[str]:
    return {
        verb
        for rule in rules()
        if group in rule["apiGroups"] and resource in rule["resources"]
        for verb in rule["verbs"]
    }


@pytest.fixture(params=WATCHES, ids=lambda w: w["kind"])
def watch(request) -> dict:
    return request.param


def test_role_has_an_argument_spec(watch):
    spec = yaml.safe_load((REPO / "roles" / watch["role"] / "meta/argument_specs.yml").read_text())
    assert "main" in spec["argument_specs"]


def test_crd_is_generated_and_listed(watch):
    name, crd = crds()[(watch["group"], watch["kind"])]
    assert crd["spec"]["versions"][0]["name"] == watch["version"]
    assert crd["spec"]["versions"][0]["subresources"] == {"status": {}}
    kustomization = yaml.safe_load((REPO / "config/crd/kustomization.yaml").read_text())
    assert f"bases/{name}" in kustomization["resources"]


def test_one_sample(watch):
    """One sample listed per kind, at a version its CRD serves (a kind with a second version
    has a sample file for each; the kustomization lists the one new-api wrote)."""
    _, crd = crds()[(watch["group"], watch["kind"])]
    served = {f"{watch['group']}/{v['name']}" for v in crd["spec"]["versions"] if v["served"]}
    kustomization = yaml.safe_load((REPO / "config/samples/kustomization.yaml").read_text())
    kinds = []
    for name in kustomization["resources"]:
        sample = yaml.safe_load((REPO / "config/samples" / name).read_text())
        kinds.append((sample["apiVersion"], sample["kind"]))
    assert sum(api in served and kind == watch["kind"] for api, kind in kinds) == 1


def test_rbac_rules_for_the_kind(watch):
    _, crd = crds()[(watch["group"], watch["kind"])]
    plural = crd["spec"]["names"]["plural"]
    group = watch["group"]
    assert {"get", "list", "watch"} <= verbs_for(group, plural)
    assert {"create", "update", "delete"}.isdisjoint(verbs_for(group, plural)), "users write CRs"
    assert "update" in verbs_for(group, f"{plural}/status")


def test_no_wildcards_and_secrets_only_for_prometheus():
    """Secrets in one rule only: the prometheus role's rendered configuration, which it says."""
    text = (REPO / "config/rbac/role.yaml").read_text()
    for rule in rules():
        assert "*" not in rule["verbs"] and "*" not in rule["resources"], rule
    assert [r["resources"] for r in rules() if "secrets" in r["resources"]] == [["secrets"]]
    assert "  # prometheus writes its rendered configuration to the Secret <name>-config" in text


# Roles tested in another role's scenario, and why.
SHARED_SCENARIOS = {
    # A backup needs a running store, a restore a completed backup: one scenario runs the three.
    "etcdbackup": "etcdstore",
    "etcdrestore": "etcdstore",
    # A ServiceMonitor is configuration: what it does shows in the Prometheus that selects it.
    "servicemonitor": "prometheus",
}


def test_molecule_scenario(watch):
    name = SHARED_SCENARIOS.get(watch["role"], watch["role"])
    scenario = REPO / "molecule" / name
    config = yaml.safe_load((scenario / "molecule.yml").read_text())
    assert config["driver"]["name"] == "default"  # delegated: no Docker
    assert config["prerun"] is False and config["dependency"]["enabled"] is False  # offline
    for playbook in config["ansible"]["playbooks"].values():
        assert (scenario / playbook).is_file(), playbook
    test = scenario / "tasks" / f"{name}_test.yml"
    assert watch["kind"] in test.read_text(), f"{test} does not test {watch['kind']}"
