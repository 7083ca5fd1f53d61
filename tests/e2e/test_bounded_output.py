"""What leaves a run is bounded and censored: a `no_log` task's secret is never seen in the CR's
status, its Events, the operator's log or its metrics, and a long failure message is cut to a
condition's and an Event's size, saying so.

The role `talker` makes a secret from the spec's `seed` (its base64) in `no_log` tasks, writes it
backwards, shows it in a raw command (displayed at -vvv) and fails saying it; or fails with a
message `repeat` times long.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.request
import uuid

import pytest

from .crds import GROUP, VERSION, install_crds, kind_crd
from .operators import STRUCTURED_LOG
from .resources import condition, new_cr, wait_condition
from .waiting import wait_until

pytestmark = pytest.mark.e2e

VERBOSITY = "ansible.sdk.operatorframework.io/verbosity"
CUT = re.compile(r" \.\.\. \[cut: (\d+) more bytes\]\Z")


@pytest.fixture
def talker(cluster, operator):
    with cluster.api_client() as api_client:
        install_crds(api_client, [kind_crd("Talker")])
    operator.write_watches([{"kind": "Talker", "role": "talker", "maxVerbosity": 4}])
    return operator


def create(crs, namespace, name, spec, annotations=None):
    cr = new_cr("Talker", name, spec)
    if annotations:
        cr["metadata"]["annotations"] = annotations
    return crs.create_namespaced_custom_object(GROUP, VERSION, namespace, "talkers", cr)


def warning_events(core, namespace, name):
    return [
        e
        for e in core.list_namespaced_event(namespace).items
        if e.involved_object.name == name and e.type == "Warning"
    ]


@pytest.mark.parametrize(
    "runner, log_events", [("warm", "Tasks"), ("cold", "Everything")], ids=["warm", "cold"]
)
def test_a_no_log_secret_is_never_seen(talker, crs, core, namespace, runner, log_events):
    # Everything that shows more: Ansible at -vvvv (the annotation, which also logs each task's
    # output), every run's whole stdout in the log (ANSIBLE_DEBUG_LOGS), debug records.
    talker.start(
        *STRUCTURED_LOG,
        f"--runner={runner}",
        f"--ansible-log-events={log_events}",
        env={"ANSIBLE_DEBUG_LOGS": "true"},
    )
    seed = f"seed-{uuid.uuid4().hex}"
    secret = base64.b64encode(seed.encode()).decode()
    create(crs, namespace, "quiet", {"seed": seed}, annotations={VERBOSITY: "4"})

    obj = wait_condition(crs, namespace, "Talker", "quiet", "Failure")
    assert condition(obj, "Failure")["reason"] == "Failed"
    warning = wait_until(
        lambda: warning_events(core, namespace, "quiet"), what="a Warning Event on the CR"
    )[0]
    assert "fail saying the secret" in warning.message
    log = talker.log()
    # The run went as intended: the log has Ansible's -vvvv output and the stdout dump.
    assert "EXEC" in log and "Ansible Debug Result" in log
    with urllib.request.urlopen(talker.launched.metrics_url, timeout=30) as resp:
        metrics = resp.read().decode()
    seen = {
        "status": json.dumps(
            crs.get_namespaced_custom_object(GROUP, VERSION, namespace, "talkers", "quiet")
        ),
        "Events": json.dumps(
            [e.to_dict() for e in core.list_namespaced_event(namespace).items], default=str
        ),
        "the operator's log": log,
        "metrics": metrics,
    }
    for where, text in seen.items():
        for shown in (secret, secret[::-1]):
            assert shown not in text, f"a no_log secret in {where}"


def test_a_long_failure_is_cut_in_the_condition_and_the_event_saying_so(
    talker, crs, core, namespace
):
    talker.start()
    create(crs, namespace, "chatty", {"repeat": 2000})  # 40000 bytes of message
    message = "verbose failure, é " * 2000

    obj = wait_condition(crs, namespace, "Talker", "chatty", "Failure")
    text = condition(obj, "Failure")["message"]
    cut = CUT.search(text)
    assert cut is not None, text[-100:]
    kept = text[: cut.start()]
    assert message.startswith(kept) and len(text.encode()) <= 32768
    assert int(cut[1]) == len(message.encode()) - len(kept.encode())

    warning = wait_until(
        lambda: warning_events(core, namespace, "chatty"), what="a Warning Event on the CR"
    )[0]
    cut = CUT.search(warning.message)
    assert cut is not None, warning.message[-100:]
    note = f"task 'fail at length' failed: {message}"
    kept = warning.message[: cut.start()]
    assert note.startswith(kept) and len(warning.message.encode()) <= 1024
    assert int(cut[1]) == len(note.encode()) - len(kept.encode())
