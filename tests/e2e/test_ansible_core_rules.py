"""A role written for ansible-core 2.18, on the ansible-core this environment has.

The role `legacy` holds the Operator SDK idioms that ansible-core 2.19 refuses (a list's length
as a conditional, a templated number in a ConfigMap, a filter given None) and `| bool` on a CR's
strings. On 2.18, the default, it is Successful. On 2.19 and later (CI: `make
e2e-ansible-core-2.21`) the Failure condition and the Warning Event name the rule, the file and
the line, and the ways out.
"""

from __future__ import annotations

from importlib.metadata import version

import pytest

from .crds import install_crds, kind_crd
from .operators import ROLES
from .resources import condition, config_map_data, new_cr, wait_condition
from .waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.ansible_core]

CORE = tuple(int(part) for part in version("ansible-core").split(".")[:2])
TASKS = ROLES / "legacy" / "tasks" / "main.yml"
SPEC = {"members": ["a", "b"], "size": 2, "writeSettings": "true"}


def line_of(text: str) -> int:
    """The line of `TASKS` that holds `text` (so the test follows edits of the role)."""
    for number, line in enumerate(TASKS.read_text().splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {TASKS}")


@pytest.fixture
def legacy(cluster, operator, crs):
    with cluster.api_client() as api_client:
        install_crds(api_client, [kind_crd("Legacy")])
    operator.write_watches([{"kind": "Legacy", "role": "legacy"}])
    return operator


def create(crs, namespace, name, spec):
    crs.create_namespaced_custom_object(
        "test.example.com", "v1alpha1", namespace, "legacys", new_cr("Legacy", name, spec)
    )


def warning_events(core, namespace, name):
    return [
        e.message
        for e in core.list_namespaced_event(namespace).items
        if e.involved_object.name == name and e.type == "Warning"
    ]


@pytest.mark.skipif(CORE >= (2, 19), reason="the default, ansible-core 2.18")
def test_an_operator_sdk_role_is_successful_on_the_default(legacy, crs, core, namespace):
    legacy.start()
    create(crs, namespace, "old", SPEC)
    wait_condition(crs, namespace, "Legacy", "old", "Successful")
    assert config_map_data(core, namespace, "old-members") == {"members": "a,b"}
    assert config_map_data(core, namespace, "old-settings") == {"replicas": "3"}
    assert config_map_data(core, namespace, "old-banner") == {"banner": ""}


@pytest.mark.skipif(CORE < (2, 19), reason="ansible-core 2.19's rules")
def test_a_length_conditional_fails_naming_the_rule_file_and_line(legacy, crs, core, namespace):
    legacy.start()
    create(crs, namespace, "old", SPEC)
    obj = wait_condition(crs, namespace, "Legacy", "old", "Failure")
    message = condition(obj, "Failure")["message"]
    where = f"{TASKS}:{line_of('when: members | length')}"
    assert message.startswith(f"ansible-core 2.19 rule: a conditional must be a boolean ({where})")
    assert "make it `members | length > 0`" in message
    assert "ANSIBLE_ALLOW_BROKEN_CONDITIONALS=true" in message
    events = wait_until(lambda: warning_events(core, namespace, "old"), what="a Warning Event")
    assert any(f"a conditional must be a boolean ({where})" in e for e in events), events


@pytest.mark.skipif(CORE < (2, 19), reason="ansible-core 2.19's rules")
def test_past_broken_conditionals_the_native_types_rule_is_named(legacy, crs, namespace):
    legacy.start(env={"ANSIBLE_ALLOW_BROKEN_CONDITIONALS": "true"})
    create(crs, namespace, "number", SPEC)
    create(crs, namespace, "none", {**SPEC, "writeSettings": "false"})

    obj = wait_condition(crs, namespace, "Legacy", "number", "Failure")
    message = condition(obj, "Failure")["message"]
    assert message.startswith(
        "ansible-core 2.19 rule: templates keep native types, so a templated number"
    )
    assert f"(task at {TASKS}:{line_of('name: Write the settings')})" in message
    assert "end the template with `| string`" in message

    obj = wait_condition(crs, namespace, "Legacy", "none", "Failure")
    message = condition(obj, "Failure")["message"]
    assert "reaches 'ansible.builtin.indent' as it is" in message
    assert f"{TASKS}:" in message
