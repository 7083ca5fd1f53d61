"""One tenant's deeply nested CR does not stop the kind's watch: the API server keeps objects
nested up to 10,000 levels, deeper than Python's decoder and copies go. Such a CR is skipped and
reported (a Warning Event on it, a log line, a metric) and the kind's other CRs, created after
it, are reconciled (kube/jsontext.py, kube/informer.py)."""

from __future__ import annotations

import json

import pytest

from .crds import GROUP, VERSION
from .operators import STRUCTURED_LOG, records_of
from .resources import new_cr, wait_condition, wait_event

pytestmark = pytest.mark.e2e

SKIPPED = "Skipped a watched object the operator cannot handle"
DEPTHS = {"deep-300": 300, "deep-5000": 5000}  # past the informer's 128; past Python's decoder


def post_raw(cluster, namespace: str, text: str) -> None:
    """POST a Greeting as JSON text: Python's client would recurse on the object itself."""
    with cluster.api_client() as api_client:
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/greetings"
        url = api_client.configuration.host + path
        resp = api_client.rest_client.pool_manager.request(
            "POST", url, body=text.encode(), headers={"Content-Type": "application/json"}
        )
        assert resp.status == 201, resp.data[:500]


def deep_greeting(name: str, depth: int) -> str:
    """A Greeting whose spec holds a field nested `depth` levels deep."""
    text = json.dumps(new_cr("Greeting", name, {"who": "deep", "extra": "NESTED"}))
    return text.replace('"NESTED"', '{"a": ' * depth + "1" + "}" * depth)


def test_a_cr_nested_past_what_the_operator_reads_is_skipped_and_the_others_reconcile(
    operator, crs, core, namespace, cluster
):
    operator.write_watches([{"kind": "Greeting", "role": "greeting"}])
    operator.start(*STRUCTURED_LOG)
    for name, depth in DEPTHS.items():
        post_raw(cluster, namespace, deep_greeting(name, depth))
    crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "greetings", new_cr("Greeting", "plain", {"who": "plain"})
    )

    wait_condition(crs, namespace, "Greeting", "plain", "Successful")
    for name in DEPTHS:
        wait_event(core, namespace, name, "ObjectSkipped", timeout=60)
        assert records_of(operator.records(), SKIPPED, object=f"{namespace}/{name}")
    gvk = f"{GROUP}/{VERSION}, Kind=Greeting"
    assert operator.metric("ansible_operator_watch_objects_skipped_total", GVK=gvk) == len(DEPTHS)
    assert operator.reconciles("Greeting") == {"succeeded": 1, "failed": 0}
