"""The runtime against the real cluster: status, failures, triggers, requeue, finalizers,
timeouts, crashes, selectors, namespaces and the safety of spec strings."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from kubernetes.client.rest import ApiException

from ansible_operator.runner.proctree import MARKER_ENV

from .crds import GROUP, VERSION
from .operators import ROLES, STRUCTURED_LOG, processes_matching, records_of
from .resources import condition, config_map_data, new_cr, wait_condition
from .waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.long]


def create(crs, namespace, kind, name, spec, labels=None):
    return crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, kind.lower() + "s", new_cr(kind, name, spec, labels)
    )


def patch_spec(crs, namespace, kind, name, spec):
    return crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, kind.lower() + "s", name, {"spec": spec}
    )


def runs(core, namespace, name):
    data = config_map_data(core, namespace, f"{name}-runs")
    return int(data["runs"]) if data else 0


def filtered(operator, namespace, name, resource_version):
    """Wait until the operator has seen the object at ``resource_version`` and let it pass
    without a reconcile (a debug record of the STRUCTURED_LOG)."""
    key = f"{namespace}/{name}"
    wait_until(
        lambda: records_of(
            operator.records(), "event filtered", key=key, resourceVersion=resource_version
        ),
        what=f"the operator to see and filter {key} at resourceVersion {resource_version}",
    )


def events_for(core, namespace, name):
    return [
        e for e in core.list_namespaced_event(namespace).items if e.involved_object.name == name
    ]


@pytest.mark.ansible_core  # what the role's run gives depends on the core
def test_a_cr_reaches_successful_with_the_ansible_result(operator, crs, core, namespace):
    operator.write_watches([{"kind": "Greeting", "role": "greeting"}])
    operator.start()
    create(crs, namespace, "Greeting", "hi", {"who": "world", "favouriteColour": "teal"})

    obj = wait_condition(crs, namespace, "Greeting", "hi", "Successful")
    assert condition(obj, "Successful")["reason"] == "Successful"
    assert condition(obj, "Successful")["observedGeneration"] == 1
    assert condition(obj, "Failure")["status"] == "False"
    running = condition(obj, "Running")
    assert running["status"] == "True" and running["reason"] == "Successful"
    assert running["message"] == "Awaiting next reconciliation"
    result = running["ansibleResult"]
    assert (result["ok"], result["changed"], result["failures"]) == (2, 1, 0)
    assert result["completion"].endswith("+00:00")
    # The spec arrives snake_cased, as upstream.
    data = config_map_data(core, namespace, "hi-greeting")
    assert data == {"greeting": "Hello, world", "camel_case_field": "teal"}


@pytest.mark.ansible_core  # what the role's run gives depends on the core
def test_a_failing_task_gives_failure_an_event_and_recovers(operator, crs, core, namespace):
    operator.write_watches([{"kind": "Flaky", "role": "flaky"}])
    operator.start()
    create(crs, namespace, "Flaky", "f", {"broken": True})

    obj = wait_condition(crs, namespace, "Flaky", "f", "Failure")
    failure = condition(obj, "Failure")
    assert failure["reason"] == "Failed"
    assert failure["message"] == "spec.broken is true, refusing"
    assert condition(obj, "Successful")["status"] == "False"
    warning = wait_until(
        lambda: [e for e in events_for(core, namespace, "f") if e.type == "Warning"],
        what="a Warning Event on the CR",
    )[0]
    assert warning.reason == "ReconcileFailed"
    assert "Check the spec" in warning.message and "refusing" in warning.message

    patch_spec(crs, namespace, "Flaky", "f", {"broken": False})
    obj = wait_condition(crs, namespace, "Flaky", "f", "Successful")
    assert condition(obj, "Failure")["status"] == "False"
    assert condition(obj, "Successful")["observedGeneration"] == 2
    normal = wait_until(
        lambda: [e for e in events_for(core, namespace, "f") if e.type == "Normal"],
        what="a Normal Event after recovery",
    )[0]
    assert normal.reason == "ReconcileSucceeded"


def test_spec_changes_rerun_the_role_status_changes_do_not(operator, crs, core, namespace):
    # The run counter is a ConfigMap the role rewrites each run: as a watched dependent it would
    # re-run the role for ever (upstream too), so dependent watches are off here.
    operator.write_watches(
        [{"kind": "Counter", "role": "counter", "watchDependentResources": False}]
    )
    operator.start(*STRUCTURED_LOG)
    create(crs, namespace, "Counter", "c", {"size": 1})
    wait_condition(crs, namespace, "Counter", "c", "Successful")
    assert runs(core, namespace, "c") == 1

    written = crs.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, "counters", "c", {"status": {"note": "written by a user"}}
    )
    filtered(operator, namespace, "c", written["metadata"]["resourceVersion"])
    labelled = crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, "counters", "c", {"metadata": {"labels": {"x": "y"}}}
    )
    filtered(operator, namespace, "c", labelled["metadata"]["resourceVersion"])
    assert runs(core, namespace, "c") == 1, "status-only and label-only changes must not re-run"
    assert operator.reconciles("Counter") == {"succeeded": 1, "failed": 0}
    obj = crs.get_namespaced_custom_object(GROUP, VERSION, namespace, "counters", "c")
    assert obj["status"]["note"] == "written by a user", "user status keys are preserved"

    patch_spec(crs, namespace, "Counter", "c", {"size": 2})
    wait_until(lambda: runs(core, namespace, "c") == 2, what="a re-run after the spec change")
    obj = wait_condition(crs, namespace, "Counter", "c", "Successful")
    wait_until(
        lambda: (
            condition(
                crs.get_namespaced_custom_object(GROUP, VERSION, namespace, "counters", "c"),
                "Successful",
            )["observedGeneration"]
            == 2
        ),
        what="Successful for generation 2",
    )


@pytest.mark.ansible_core  # what the role's run gives depends on the core
def test_requeue_after_reruns_until_done_without_cutting_runs_short(operator, crs, core, namespace):
    # The run counter would be a watched dependent re-running the role (see above).
    operator.write_watches(
        [{"kind": "Requeuer", "role": "requeuer", "watchDependentResources": False}]
    )
    operator.start(*STRUCTURED_LOG)
    create(crs, namespace, "Requeuer", "r", {"target": 3})
    wait_until(lambda: runs(core, namespace, "r") == 3, what="three runs")
    wait_condition(crs, namespace, "Requeuer", "r", "Successful")

    # What each reconcile asked for next, as the controller took it: the third asks for no
    # requeue, only the periodic re-run (--reconcile-period, 10 h by default).
    def decisions():
        found = records_of(operator.records(), "reconciled", key=f"{namespace}/r")
        return [r["requeue_after"] for r in found] if len(found) >= 3 else None

    assert wait_until(decisions, what="the third reconcile's decision") == [1.0, 1.0, 36000.0], (
        "no re-run once requeue_after is no longer asked"
    )
    assert runs(core, namespace, "r") == 3


@pytest.mark.ansible_core  # what the role's run gives depends on the core
def test_the_finalizer_role_runs_on_delete_then_the_cr_is_gone(operator, crs, core, namespace):
    operator.write_watches(
        [
            {
                "kind": "Finalized",
                "role": "finalized",
                "finalizer": {
                    "name": "test.example.com/cleanup",
                    "role": str(operator_role("finalizer_cleanup")),
                },
            }
        ]
    )
    operator.start()
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "fin-deleteme"}})
    create(crs, namespace, "Finalized", "fin", {})
    obj = wait_condition(crs, namespace, "Finalized", "fin", "Successful")
    assert obj["metadata"]["finalizers"] == ["test.example.com/cleanup"]

    crs.delete_namespaced_custom_object(GROUP, VERSION, namespace, "finalizeds", "fin")

    def gone():
        try:
            crs.get_namespaced_custom_object(GROUP, VERSION, namespace, "finalizeds", "fin")
        except ApiException as err:
            return err.status == 404
        return False

    wait_until(gone, what="the CR to be deleted")
    assert config_map_data(core, namespace, "fin-deleteme") is None, "the finalizer ran"
    # Its runner input dir and artifacts go with it.
    input_dir = Path("/tmp/ansible-operator/runner", GROUP, VERSION, "Finalized", namespace, "fin")
    wait_until(lambda: not input_dir.exists(), what=f"{input_dir} to be removed", timeout=60)


def operator_role(name):
    return ROLES / name


def test_a_run_past_its_timeout_fails_saying_so_and_leaves_no_process(
    operator, crs, core, namespace
):
    operator.write_watches([{"kind": "Sleeper", "role": "sleeper", "runTimeout": "4s"}])
    operator.start()
    create(crs, namespace, "Sleeper", "zz", {"seconds": 300})
    # The first run's task: a `sleep 300` under its ansible-playbook.
    first_run = set(
        wait_until(lambda: processes_matching("sleep 300"), what="the run's sleep", timeout=120)
    )
    obj = wait_condition(crs, namespace, "Sleeper", "zz", "Failure")
    failure = condition(obj, "Failure")
    assert failure["reason"] == "Timeout"
    assert "timed out after 4s" in failure["message"]
    assert config_map_data(core, namespace, "zz-slept") is None
    # Every process of the timed-out run is gone (the retry that follows has processes of its
    # own, with other pids).
    try:
        wait_until(
            lambda: not first_run & set(processes_matching("sleep 300")),
            what="no process of the timed-out run left",
            timeout=30,
        )
    except AssertionError:  # seen once in CI, under load: what is left, for the next look
        for line in first_run & set(processes_matching("sleep 300")):
            print(f"left: {line}; {_process_facts(int(line.split()[0]))}")
        raise


def _process_facts(pid: int) -> str:
    """A process's state, run marker and ancestry (each parent's group and command line), as
    /proc has them."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError as err:
        return f"gone ({err})"
    name = MARKER_ENV.encode() + b"="
    marker = [entry.decode(errors="replace") for entry in environ if entry.startswith(name)]
    facts = [f"markers {marker}"]
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            break
        facts.append(f"{pid} (state {stat[0]}, group {stat[2]}, session {stat[3]}): {args[:200]}")
        pid = int(stat[1])
    return "; ".join(facts)


def test_killing_the_operator_mid_run_ends_in_a_correct_status(operator, crs, core, namespace):
    operator.write_watches([{"kind": "Sleeper", "role": "sleeper"}])
    operator.start()
    create(crs, namespace, "Sleeper", "nap", {"seconds": 6})
    wait_condition(crs, namespace, "Sleeper", "nap", "Running", reason="Running")
    operator.kill()
    obj = crs.get_namespaced_custom_object(GROUP, VERSION, namespace, "sleepers", "nap")
    assert condition(obj, "Running")["reason"] == "Running", "killed while Running"

    operator.start()
    obj = wait_condition(crs, namespace, "Sleeper", "nap", "Successful")
    running = condition(obj, "Running")
    assert running["reason"] == "Successful", "must not stay Running after a restart"


def test_a_selector_limits_which_crs_are_reconciled(operator, crs, core, namespace):
    operator.write_watches(
        [
            {
                "kind": "Greeting",
                "role": "greeting",
                "selector": {
                    "matchExpressions": [{"key": "team", "operator": "In", "values": ["a", "b"]}]
                },
            }
        ]
    )
    operator.start(*STRUCTURED_LOG)
    ignored = create(crs, namespace, "Greeting", "ignored", {"who": "nobody"}, labels={"team": "c"})
    create(crs, namespace, "Greeting", "picked", {"who": "team a"}, labels={"team": "a"})
    wait_condition(crs, namespace, "Greeting", "picked", "Successful")
    filtered(operator, namespace, "ignored", ignored["metadata"]["resourceVersion"])
    assert not records_of(operator.records(), "event passes", key=f"{namespace}/ignored")
    assert operator.reconciles("Greeting") == {"succeeded": 1, "failed": 0}
    obj = crs.get_namespaced_custom_object(GROUP, VERSION, namespace, "greetings", "ignored")
    assert "status" not in obj
    assert config_map_data(core, namespace, "ignored-greeting") is None


def test_watch_namespace_limits_the_namespaces(operator, crs, core, namespace, cluster):
    other = f"{namespace}-other"
    core.create_namespace({"metadata": {"name": other}})
    try:
        operator.write_watches([{"kind": "Greeting", "role": "greeting"}])
        operator.start(*STRUCTURED_LOG)
        # Created first: an operator watching every namespace would have its event before the
        # one of "here", and log it long before "here" is reconciled.
        create(crs, other, "Greeting", "elsewhere", {"who": "x"})
        create(crs, namespace, "Greeting", "here", {"who": "y"})
        wait_condition(crs, namespace, "Greeting", "here", "Successful")
        records = operator.records()
        [watching] = records_of(records, "Watching namespaces")
        assert watching["namespaces"] == [namespace]
        keys = {r["key"] for r in records if r.get("msg") in ("event passes", "event filtered")}
        assert keys == {f"{namespace}/here"}
        assert operator.reconciles("Greeting") == {"succeeded": 1, "failed": 0}
        obj = crs.get_namespaced_custom_object(GROUP, VERSION, other, "greetings", "elsewhere")
        assert "status" not in obj
    finally:
        core.delete_namespace(other)


@pytest.mark.ansible_core  # what the role's run gives depends on the core
def test_a_jinja_expression_in_the_spec_reaches_the_role_as_text(operator, crs, core, namespace):
    operator.write_watches([{"kind": "Echo", "role": "echo"}])
    operator.start()
    message = "{{ lookup('env', 'HOME') }} and {{ 6 * 7 }}"
    create(crs, namespace, "Echo", "e", {"message": message})
    wait_condition(crs, namespace, "Echo", "e", "Successful")
    assert config_map_data(core, namespace, "e-echo") == {"message": message}


@pytest.mark.ansible_core  # what the role's run gives depends on the core
def test_mark_unsafe_false_lets_the_spec_be_templated_as_upstream(operator, crs, core, namespace):
    operator.write_watches([{"kind": "Echo", "role": "echo", "markUnsafe": False}])
    operator.start()
    create(crs, namespace, "Echo", "t", {"message": "{{ 6 * 7 }}"})
    wait_condition(crs, namespace, "Echo", "t", "Successful")
    assert config_map_data(core, namespace, "t-echo") == {"message": "42"}


def test_a_bad_annotation_is_reported_in_status_not_a_crash(operator, crs, core, namespace):
    operator.write_watches([{"kind": "Greeting", "role": "greeting"}])
    operator.start()
    cr = new_cr("Greeting", "bad", {"who": "x"})
    cr["metadata"]["annotations"] = {
        "ansible.sdk.operatorframework.io/reconcile-period": "every so often"
    }
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, "greetings", cr)
    obj = wait_condition(crs, namespace, "Greeting", "bad", "Failure")
    assert condition(obj, "Failure")["message"] == (
        'Unable to parse reconcile period annotation: time: invalid duration "every so often"'
    )
    create(crs, namespace, "Greeting", "good", {"who": "y"})
    wait_condition(crs, namespace, "Greeting", "good", "Successful")
    assert operator.proc.poll() is None, "the operator must keep running"


def test_an_api_server_outage_mid_run_loses_no_reconcile(operator, crs, core, namespace, cluster):
    api_server = cluster.component_pid("kube-apiserver")
    operator.write_watches([{"kind": "Sleeper", "role": "sleeper"}])
    operator.start()
    create(crs, namespace, "Sleeper", "outage", {"seconds": 3})
    wait_condition(crs, namespace, "Sleeper", "outage", "Running", reason="Running")
    os.kill(api_server, signal.SIGSTOP)
    try:
        time.sleep(15)  # the outage
    finally:
        os.kill(api_server, signal.SIGCONT)
    wait_condition(crs, namespace, "Sleeper", "outage", "Successful", timeout=300)
    # The watch came back too: a spec change made after the outage is acted on.
    patch_spec(crs, namespace, "Sleeper", "outage", {"seconds": 1})
    wait_until(
        lambda: (config_map_data(core, namespace, "outage-slept") or {}).get("slept") == "1",
        what="a reconcile of the spec changed after the outage",
        timeout=300,
    )
