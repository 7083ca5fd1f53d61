"""operator_sdk.util in a real reconcile: k8s_status, k8s_event and osdk_metric against the cluster.

The `reporter` role writes the CR's status twice, posts an Event about it and bumps a user
metric, then records what each module returned in a ConfigMap that the test reads.
"""

from __future__ import annotations

import pytest

from .crds import GROUP, VERSION, install_crds, kind_crd
from .operators import plan
from .resources import condition, config_map_data, new_cr, wait_condition
from .waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.ansible_core]

KIND = "Reporter"
PLURAL = "reporters"
# Every test's operator listens on an ephemeral port: several operators may run on this machine.
METRICS_ENV = {"ANSIBLE_OPERATOR_USER_METRICS_ADDRESS": "127.0.0.1:0"}


@pytest.fixture(scope="module")
def reporter_crd(cluster) -> None:
    with cluster.api_client() as api_client:
        install_crds(api_client, [kind_crd(KIND)])


def reporter_events(core, namespace: str, name: str) -> list:
    events = core.list_namespaced_event(namespace).items
    return [e for e in events if e.metadata.name == f"{name}-reported"]


def test_status_events_and_metrics_from_a_role(operator, crs, core, namespace, reporter_crd):
    crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, new_cr(KIND, "r1", {"phase": "ready"})
    )
    # A status key somebody else wrote before the operator ran: it must survive.
    crs.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, "r1", {"status": {"ownedByUser": "keep me"}}
    )
    # The report ConfigMap changes in every run (the Event's count): as a watched dependent, each
    # run would start the next, and the counts would run ahead of the test.
    operator.write_watches([{"kind": KIND, "role": "reporter", "watchDependentResources": False}])
    operator.start(env=METRICS_ENV)

    obj = wait_condition(crs, namespace, KIND, "r1", "Successful")
    status = obj["status"]
    assert status["phase"] == "ready"
    assert status["details"] == {"generation": "1"}  # a string on ansible-core 2.18 and 2.19
    assert status["ownedByUser"] == "keep me"
    reported = condition(obj, "Reported")
    assert reported is not None
    assert (reported["status"], reported["reason"]) == ("True", "PhaseReported")
    assert reported["message"] == "phase is ready"
    assert reported["lastTransitionTime"]
    for ctype in ("Running", "Successful"):
        assert condition(obj, ctype) is not None, f"the operator's {ctype} condition is kept"

    report = config_map_data(core, namespace, "r1-report")
    assert report is not None
    assert report["first_changed"] == "True"
    assert report["second_changed"] == "False", "the same status twice must not be a change"
    assert report["no_status_failed"] == "True"
    assert "ConfigMap (v1) has no status subresource" in report["no_status_msg"]
    assert report["event_count"] == "1"
    assert report["event_uid"] == obj["metadata"]["uid"]
    assert report["metric_status"] == "200"
    assert report["metric_address"].startswith("http://127.0.0.1:")
    assert not report["metric_address"].startswith("http://127.0.0.1:5050/")

    [event] = reporter_events(core, namespace, "r1")
    assert (event.reason, event.type, event.count) == ("PhaseReported", "Normal", 1)
    assert event.involved_object.uid == obj["metadata"]["uid"]
    assert event.source.component == "reporter-role"
    first_seen = event.first_timestamp

    # A spec change runs the role again: new status, the Event counted, not duplicated.
    crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "r1", {"spec": {"phase": "degraded"}}
    )

    def rerun():
        data = config_map_data(core, namespace, "r1-report")
        return data if data and data["event_count"] == "2" else None

    report = wait_until(rerun, what="the second reconcile's report", timeout=180)
    assert report["first_changed"] == "True"
    assert report["second_changed"] == "False"
    obj = crs.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "r1")
    assert obj["status"]["phase"] == "degraded"
    assert obj["status"]["details"] == {"generation": "2"}
    assert obj["status"]["ownedByUser"] == "keep me"
    assert condition(obj, "Reported")["message"] == "phase is degraded"
    [event] = reporter_events(core, namespace, "r1")
    assert event.count == 2
    assert event.first_timestamp == first_seen
    assert event.message == "phase is degraded"

    # Planned (check mode): the util modules say what they would do and do none of it.
    operator.stop()
    crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "r1", {"spec": {"phase": "retired"}}
    )
    before = crs.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "r1")
    code, plans, err = plan(
        operator.kubeconfig, operator.workdir / "watches.yaml", f"{KIND}/r1", "-n", namespace
    )
    assert code == 2, err
    [planned] = plans
    changed = {task["name"] for task in planned["tasks"] if task["status"] == "changed"}
    assert {
        "Report the phase in the status, with a condition of our own",
        "The same status again",  # the first wrote nothing: the status is still the old one
        "Post an Event about the CR",
        "Count the report in a user metric",
    } <= changed
    after = crs.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "r1")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["status"]["phase"] == "degraded"
    [event] = reporter_events(core, namespace, "r1")
    assert event.count == 2, "no Event posted in check mode"
    [report] = [obj for obj in planned["objects"] if obj["name"] == "r1-report"]
    assert report["action"] == "update"  # its new content a dry run only
    assert config_map_data(core, namespace, "r1-report")["event_count"] == "2"
