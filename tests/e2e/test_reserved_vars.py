"""A CR cannot set Ansible's own variables (issue 23): the injections refused with their message,
a Warning Event and no run; the allowance per watch; a spec fixed afterwards runs; a key named
like a magic variable runs, with one warning."""

from __future__ import annotations

import pytest

from .crds import GROUP, VERSION
from .operators import STRUCTURED_LOG, records_of
from .resources import condition, config_map_data, new_cr, wait_condition, wait_event

pytestmark = pytest.mark.e2e

REFUSAL = (
    ": Ansible's own variables are not the CR's to set (remove the field, or allow the variable "
    "by name with allowReservedVars in watches.yaml)"
)


def create(crs, namespace, kind, name, spec):
    crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, kind.lower() + "s", new_cr(kind, name, spec)
    )


def refused(crs, core, namespace, kind, name):
    """The CR's Failure condition (reason ReservedVariable) and its Warning Events' messages."""
    obj = wait_condition(crs, namespace, kind, name, "Failure", reason="ReservedVariable")
    message = condition(obj, "Failure")["message"]
    events = wait_event(core, namespace, name, "ReservedVariable")
    assert {e.type for e in events} == {"Warning"}
    assert {e.message for e in events} == {message}
    return message


def test_spec_keys_that_set_ansible_variables_are_refused_and_nothing_runs(
    operator, crs, core, namespace, tmp_path
):
    marker = tmp_path / "marker"
    operator.write_watches(
        [
            {"kind": "Counter", "role": "counter"},
            # Keys as written, and one variable allowed by name.
            {
                "kind": "Echo",
                "role": "echo",
                "snakeCaseParameters": False,
                "allowReservedVars": ["ansible_host"],
            },
        ]
    )
    operator.start(*STRUCTURED_LOG)
    # The injection: with an ssh client on the machine (there is one here), these
    # variables made the run start ssh, whose ProxyCommand ran as the operator.
    create(
        crs,
        namespace,
        "Counter",
        "ssh",
        {
            "ansibleConnection": "ssh",
            "ansibleHost": "127.0.0.1",
            "ansibleSshCommonArgs": f"-o ProxyCommand='touch {marker}'",
        },
    )
    create(
        crs, namespace, "Counter", "interpreter", {"ansiblePythonInterpreter": f"touch {marker}"}
    )
    create(crs, namespace, "Echo", "snake", {"ansible_connection": "ssh", "message": "m"})
    create(crs, namespace, "Echo", "allowed", {"ansible_host": "localhost", "message": "m"})
    create(crs, namespace, "Counter", "port", {"port": 80, "size": 1})

    assert refused(crs, core, namespace, "Counter", "ssh") == (
        "spec.ansibleConnection would set the Ansible variable ansible_connection; "
        "spec.ansibleHost would set the Ansible variable ansible_host; "
        "spec.ansibleSshCommonArgs would set the Ansible variable ansible_ssh_common_args" + REFUSAL
    )
    assert refused(crs, core, namespace, "Counter", "interpreter") == (
        "spec.ansiblePythonInterpreter would set the Ansible variable ansible_python_interpreter"
        + REFUSAL
    )
    assert refused(crs, core, namespace, "Echo", "snake") == (
        "spec.ansible_connection would set the Ansible variable ansible_connection" + REFUSAL
    )
    # The allowed variable reaches the run; a key named like a magic variable runs too.
    wait_condition(crs, namespace, "Echo", "allowed", "Successful")
    assert config_map_data(core, namespace, "allowed-echo") == {"message": "m"}
    wait_condition(crs, namespace, "Counter", "port", "Successful")

    # No run started for a refused CR: the runs counted are the two good ones, nothing else.
    assert operator.reconciles("Counter") == {"succeeded": 1, "failed": 0}
    assert operator.reconciles("Echo") == {"succeeded": 1, "failed": 0}
    assert not marker.exists()
    assert config_map_data(core, namespace, "ssh-runs") is None
    records = operator.records()
    assert len(records_of(records, "reconcile failed, not retrying until the object changes")) == 3
    allowance = [r for r in records if str(r.get("msg", "")).startswith("CRs of this kind may")]
    assert [r["msg"] for r in allowance] == [
        "CRs of this kind may set the Ansible variables ansible_host "
        "(allowReservedVars in the watches file)"
    ]
    shadows = [r for r in records if "a name ansible-core also gives" in str(r.get("msg", ""))]
    assert [r["msg"].split()[0] for r in shadows] == ["spec.port"]
    assert shadows[0]["level"] == "warning"


def test_a_refused_spec_runs_once_it_is_fixed(operator, crs, core, namespace):
    operator.write_watches([{"kind": "Counter", "role": "counter"}])
    operator.start()
    create(crs, namespace, "Counter", "fixme", {"size": 2, "ansibleBecome": True})
    refused(crs, core, namespace, "Counter", "fixme")
    crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, "counters", "fixme", {"spec": {"ansibleBecome": None}}
    )
    wait_condition(crs, namespace, "Counter", "fixme", "Successful")
    assert config_map_data(core, namespace, "fixme-runs")["runs"] == "1"
