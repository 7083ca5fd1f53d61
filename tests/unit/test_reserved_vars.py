"""Which spec keys a CR may not set (Ansible's own `ansible_*` variables) and which only shadow
ansible-core's names; the fuzzed property is in test_fuzzed_input."""

from __future__ import annotations

import pytest

from ansible_operator.core import reserved_vars
from ansible_operator.core.extravars import ReservedVariableError, UnsafeText, build_extra_vars
from ansible_operator.core.reserved_vars import SpecVariable
from ansible_operator.core.watches import GVK, Watch

WATCH = Watch(gvk=GVK("test.example.com", "v1", "Thing"), role="/roles/thing")


@pytest.mark.parametrize(
    "variable",
    [
        "ansible_connection",
        "ansible_host",
        "ansible_ssh_common_args",
        "ansible_python_interpreter",
        "ansible_become_password",
        "ansible_",
        "ANSIBLE_CONNECTION",  # Ansible would not read it; one rule is simpler to explain
        "Ansible_Host",
        "\uff41nsible_host",  # a fullwidth "a": NFKC folds it to "a"
        "ansible\uff3fhost",  # a fullwidth low line
    ],
)
def test_ansible_variables_are_reserved(variable):
    assert reserved_vars.is_reserved(variable)


@pytest.mark.parametrize(
    "variable",
    ["ansible_operator_meta", "ansible", "ansiblehost", "_ansible_host", "my_ansible_host", "port"],
)
def test_other_names_are_not(variable):
    assert not reserved_vars.is_reserved(variable)


def test_the_variable_of_a_key_follows_the_watch_conversion():
    spec = {"ansibleHost": 1, "ansible_user": 2, "AnsiblePort": 3, "size": 4, 5: "not a name"}
    assert reserved_vars.spec_variables(spec, snake_case=True) == [
        SpecVariable("ansibleHost", "ansible_host"),
        SpecVariable("ansible_user", "ansible_user"),
        SpecVariable("AnsiblePort", "_ansible_port"),  # upstream's conversion: a leading "_"
        SpecVariable("size", "size"),
    ]
    assert [v.variable for v in reserved_vars.spec_variables(spec, snake_case=False)] == [
        "ansibleHost",
        "ansible_user",
        "AnsiblePort",
        "size",
    ]
    assert reserved_vars.spec_variables(None, snake_case=True) == []


def test_refused_leaves_out_what_the_watch_allows():
    found = reserved_vars.spec_variables({"ansibleHost": 1, "ansibleUser": 2}, snake_case=True)
    assert reserved_vars.refused(found, ["ansible_host"]) == [
        SpecVariable("ansibleUser", "ansible_user")
    ]


def test_shadowing_names_only_the_magic_names_that_are_not_refused_anyway():
    found = reserved_vars.spec_variables(
        {"port": 1, "hostvars": 2, "size": 3, "ansibleVersion": 4}, snake_case=True
    )
    magic = {"port", "hostvars", "ansible_version"}
    assert [v.field for v in reserved_vars.shadowing(found, magic)] == ["port", "hostvars"]


def test_the_message_names_a_few_fields_and_counts_the_rest():
    many = [SpecVariable(f"ansibleX{i}", f"ansible_x{i}") for i in range(12)]
    message = reserved_vars.refusal_message(many)
    assert message.count("would set the Ansible variable") == 5
    assert "; and 7 more: Ansible's own variables are not the CR's to set" in message
    assert "\n" not in message


def test_building_the_variables_refuses_them_too():
    obj = {"metadata": {"name": "a", "namespace": "ns"}, "spec": {"ansibleConnection": "ssh"}}
    with pytest.raises(ReservedVariableError, match=r"spec\.ansibleConnection would set"):
        build_extra_vars(obj, WATCH, finalizing=False)
    allowed = Watch(gvk=WATCH.gvk, role="/roles/thing", allow_reserved_vars=("ansible_connection",))
    connection = build_extra_vars(obj, allowed, finalizing=False)["ansible_connection"]
    assert (connection, type(connection)) == ("ssh", UnsafeText)
    # Ours is set after the spec's keys, so a CR's ansibleOperatorMeta changes nothing.
    obj["spec"] = {"ansibleOperatorMeta": {"name": "other"}}
    assert build_extra_vars(obj, WATCH, finalizing=False)["ansible_operator_meta"] == {
        "name": "a",
        "namespace": "ns",
    }
