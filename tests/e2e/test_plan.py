"""`ansible-operator plan` and the hold annotation against the local cluster.

The `planned` role makes a ConfigMap and a Deployment from the CR's spec and, for a CR that
asks, creates a ConfigMap from a command task that ignores check mode. A plan must report what
the role would change, write nothing (every object's resourceVersion unchanged, the command's
write a dry run), and exit 0 when nothing would change, 2 when something would.
"""

from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path

import pytest
import yaml
from kubernetes.client.rest import ApiException

from .crds import GROUP, VERSION, install_crds, kind_crd
from .health import argo, verdict
from .operators import ROLES, plan
from .resources import condition, new_cr, wait_condition
from .waiting import wait_until

pytestmark = [pytest.mark.e2e]

KIND, PLURAL = "Planned", "planneds"
OTHER, OTHER_PLURAL = "Unplanned", "unplanneds"
HOLD = "ansible.sdk.operatorframework.io/hold"


@pytest.fixture(scope="module")
def planned_crds(cluster) -> None:
    with cluster.api_client() as api_client:
        install_crds(api_client, [kind_crd(KIND), kind_crd(OTHER)])


def watches(path: Path, roles: dict[str, Path]) -> Path:
    """A watches file for the kinds in ``roles`` (kind: role directory)."""
    path.write_text(
        yaml.safe_dump(
            [
                {"group": GROUP, "version": VERSION, "kind": kind, "role": str(role)}
                for kind, role in roles.items()
            ]
        )
    )
    return path


def versions(core, apps, namespace: str, names: list[str]) -> dict[str, str]:
    """The resourceVersion of each of the role's objects that exists."""
    found = {}
    for name in names:
        for read in (core.read_namespaced_config_map, apps.read_namespaced_deployment):
            try:
                found[name] = read(name, namespace).metadata.resource_version
            except ApiException as err:
                if err.status != 404:
                    raise
    return found


def edited_role(tmp_path: Path, image: str = "registry.example.com/server:2.0") -> Path:
    """The `planned` role of a new version: its image ``image``, and red is now crimson."""
    role = tmp_path / "v2" / "planned"
    shutil.copytree(ROLES / "planned", role)
    (role / "defaults" / "main.yml").write_text(f"---\nplanned_image: {image}\nsize: 1\n")
    tasks = role / "tasks" / "main.yml"
    old = "color: \"{{ color | default('blue') }}\""
    new = "color: \"{{ color | default('blue') | regex_replace('^red$', 'crimson') }}\""
    assert old in tasks.read_text()
    tasks.write_text(tasks.read_text().replace(old, new))
    return role


@pytest.mark.ansible_core
def test_plan_reports_what_would_change_and_writes_nothing(
    operator, cluster, crs, core, apps, namespace, planned_crds, tmp_path
):
    crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, new_cr(KIND, "p1", {"size": 1, "color": "blue"})
    )
    operator.write_watches([{"kind": KIND, "role": "planned"}])
    operator.start()
    wait_condition(crs, namespace, KIND, "p1", "Successful")
    operator.stop()
    current = watches(tmp_path / "watches.yaml", {KIND: ROLES / "planned"})
    kubeconfig = cluster.kubeconfig
    objects = ["p1-settings", "p1-server"]
    before = versions(core, apps, namespace, objects)
    assert set(before) == set(objects)

    # As the operator applied it: nothing would change.
    code, plans, err = plan(kubeconfig, current, f"{KIND}/p1", "-n", namespace)
    assert code == 0, err
    [unchanged] = plans
    assert (unchanged["kind"], unchanged["name"], unchanged["outcome"]) == (KIND, "p1", "Unchanged")
    assert {obj["action"] for obj in unchanged["objects"]} <= {"none"}

    # A new version of the role (cold runner, to plan with both): the Deployment's image changes.
    new = watches(tmp_path / "v2.yaml", {KIND: edited_role(tmp_path)})
    code, plans, err = plan(kubeconfig, new, KIND, "-n", namespace, "--runner", "cold")
    assert code == 2, err
    [changed] = plans
    assert changed["outcome"] == "Changes"
    by_name = {obj["name"]: obj for obj in changed["objects"]}
    server = by_name["p1-server"]
    assert (server["kind"], server["action"]) == ("Deployment", "update")
    assert server["fields"] == ["spec.template.spec.containers[0].image"]
    assert server["changes"][0]["before"] == "registry.example.com/server:1.0"
    assert server["changes"][0]["after"] == "registry.example.com/server:2.0"
    assert by_name["p1-settings"]["action"] == "none", "blue stays blue"
    assert changed["writes"]["dryRun"] >= 2 and changed["writes"]["refused"] == 0
    assert versions(core, apps, namespace, objects) == before, "a plan writes nothing"

    # A CR never applied, whose role writes around check mode: every write a dry run.
    crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, new_cr(KIND, "p2", {"size": 2, "sneak": True})
    )
    code, plans, err = plan(kubeconfig, current, f"{KIND}/p2", "-n", namespace)
    assert code == 2, err
    [fresh] = plans
    actions = {(obj["kind"], obj["name"]): obj["action"] for obj in fresh["objects"]}
    assert actions == {
        ("ConfigMap", "p2-settings"): "create",
        ("Deployment", "p2-server"): "create",
        ("ConfigMap", "p2-sneaky"): "create",
    }
    assert fresh["writes"] == {"dryRun": 3, "refused": 1}  # POST /version: no dry run for it
    assert versions(core, apps, namespace, ["p2-settings", "p2-server", "p2-sneaky"]) == {}

    # Errors: one line, exit 1.
    code, _, err = plan(kubeconfig, current, "Nonesuch", "-n", namespace)
    assert code == 1 and err.strip().splitlines() == [
        f"ansible-operator plan: Nonesuch: not a kind of {current} (it watches {KIND})"
    ]
    code, _, err = plan(kubeconfig, current, f"{KIND}/gone", "-n", namespace)
    assert (code, err.strip()) == (
        1,
        f"ansible-operator plan: {KIND}/gone: not found in {namespace}",
    )


def test_upgrade_preview_names_exactly_the_crs_the_new_roles_change(
    operator, cluster, crs, namespace, planned_crds, tmp_path
):
    """20 CRs of two kinds; the new version changes only red CRs of the first kind."""
    colors = ["red", "blue", "green", "red", "blue"] * 2
    for index, color in enumerate(colors):
        for kind, plural in ((KIND, PLURAL), (OTHER, OTHER_PLURAL)):
            crs.create_namespaced_custom_object(
                GROUP, VERSION, namespace, plural,
                new_cr(kind, f"{kind.lower()}-{index}", {"color": color}),
            )  # fmt: skip
    operator.write_watches([{"kind": KIND, "role": "planned"}, {"kind": OTHER, "role": "planned"}])
    operator.start()
    for kind in (KIND, OTHER):
        for index in range(len(colors)):
            wait_condition(crs, namespace, kind, f"{kind.lower()}-{index}", "Successful")
    operator.stop()

    # Only the color rule changes, and only in the first kind's role.
    role = edited_role(tmp_path, image="registry.example.com/server:1.0")
    new = watches(tmp_path / "v2.yaml", {KIND: role, OTHER: ROLES / "planned"})
    code, plans, err = plan(cluster.kubeconfig, new, "-n", namespace)
    assert code == 2, err
    assert len(plans) == 2 * len(colors)
    changing = sorted(p["name"] for p in plans if p["outcome"] == "Changes")
    assert changing == sorted(
        f"{KIND.lower()}-{i}" for i, color in enumerate(colors) if color == "red"
    )
    for item in plans:
        if item["outcome"] == "Changes":
            [obj] = [o for o in item["objects"] if o["action"] != "none"]
            assert (obj["kind"], obj["fields"]) == ("ConfigMap", ["data.color"])
            assert obj["changes"][0]["after"] == "crimson"
        else:
            assert item["outcome"] == "Unchanged", item


def test_a_held_cr_is_planned_not_applied_until_released(
    operator, crs, core, apps, namespace, planned_crds, kstatus_check
):
    cr = new_cr(KIND, "held", {"size": 1})
    cr["metadata"]["annotations"] = {HOLD: "true"}
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, cr)
    operator.write_watches([{"kind": KIND, "role": "planned"}])
    operator.start()

    def held():
        obj = crs.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "held")
        running = condition(obj, "Running")
        return running if running and running.get("reason") == "Held" else None

    running = wait_until(held, timeout=180, what="the held CR's Running=False/Held")
    assert running["status"] == "False"
    assert running["message"].startswith(f"Held for review ({HOLD}): 2 change(s) pending: ")
    assert "ConfigMap " in running["message"] and "Deployment " in running["message"]
    assert versions(core, apps, namespace, ["held-settings", "held-server"]) == {}
    obj = crs.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "held")
    assert condition(obj, "Successful") is None
    assert argo(kstatus_check, obj) == ("Suspended", condition(obj, "Stalled")["message"])
    assert verdict(kstatus_check, obj)[0] == "Failed"  # kstatus: Stalled, waiting for a person

    # Released: applied.
    crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "held", {"metadata": {"annotations": {HOLD: None}}}
    )
    wait_condition(crs, namespace, KIND, "held", "Successful")
    assert set(versions(core, apps, namespace, ["held-settings", "held-server"])) == {
        "held-settings", "held-server",
    }  # fmt: skip

    # Each run's record lists what it wrote, or as a held run would have written.
    assert operator.launched is not None and operator.launched.metrics_url is not None
    base = operator.launched.metrics_url.removesuffix("/metrics") + f"/runs/{GROUP}/{VERSION}"
    listed = read_json(f"{base}/{KIND}/{namespace}/held")["runs"]
    held_run, applied = listed[-1], listed[-2]  # newest first; later runs: its dependents'
    assert [run["planned"] for run in listed] == [False] * (len(listed) - 1) + [True]
    made = {("ConfigMap", "held-settings"): "create", ("Deployment", "held-server"): "create"}
    for run in (held_run, applied):
        record = read_json(f"{base}/{KIND}/{namespace}/held/{run['id']}")
        objects = record["writes"]["objects"]
        assert {(obj["kind"], obj["name"]): obj["action"] for obj in objects} == made, record


def read_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read())
