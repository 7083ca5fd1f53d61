"""Traces of reconciles (issue 26, item 4) from the operator as a real process: an OTLP/HTTP
receiver on loopback, started here (``http.server``, decoding the protobuf
``ExportTraceServiceRequest`` with ``opentelemetry-proto``), is where the standard environment
variables point it. A Stepper whose run fails (warm runner and cold) gives one reconcile span
with its run, its tasks and its status writes; its trace id is in the operator's log lines and
the run's record. Without the variables nothing is traced; an endpoint that is down is said once
and counted; a protocol the operator does not speak refuses the start in one line."""

from __future__ import annotations

import http.server
import json
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from ansible_operator.devcluster.processes import free_ports

from .crds import GROUP, VERSION, install_crds, kind_crd
from .operators import STRUCTURED_LOG, Operator
from .resources import new_cr, wait_condition
from .waiting import wait_until

pytestmark = pytest.mark.e2e

KIND, PLURAL = "Stepper", "steppers"
STATUS_ERROR = 2  # opentelemetry.proto.trace.v1.Status.STATUS_CODE_ERROR
NO_TRACES = {
    "OTEL_TRACES_EXPORTER": "",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "",
}


@pytest.fixture(scope="module")
def steppers(cluster) -> None:
    with cluster.api_client() as api_client:
        install_crds(api_client, [kind_crd(KIND)])


def _value(value: AnyValue) -> Any:
    return getattr(value, value.WhichOneof("value") or "string_value")


class Receiver:
    """An OTLP/HTTP traces endpoint on loopback: every span it was sent, with its resource's
    attributes."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.requests = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.take(request, self.headers.get("Content-Type", ""))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def take(self, request: ExportTraceServiceRequest, content_type: str) -> None:
        assert content_type == "application/x-protobuf"
        found = []
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(
                        {
                            "name": span.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent": span.parent_span_id.hex(),
                            "start": span.start_time_unix_nano,
                            "end": span.end_time_unix_nano,
                            "status": (span.status.code, span.status.message),
                            "attributes": {a.key: _value(a.value) for a in span.attributes},
                            "resource": resource,
                        }
                    )
        with self._lock:
            self.requests += 1
            self.spans.extend(found)

    def received(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.spans)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    try:
        yield found
    finally:
        found.close()


def start(operator: Operator, env: dict[str, str], *args: str) -> str:
    """The operator running the stepper role for Steppers; its metrics URL."""
    metrics_port, probe_port = free_ports(2)
    operator.write_watches([{"kind": KIND, "role": "stepper"}])
    operator.start(
        f"--metrics-bind-address=127.0.0.1:{metrics_port}",
        f"--health-probe-bind-address=127.0.0.1:{probe_port}",
        *STRUCTURED_LOG,
        *args,
        env=env,
    )
    return f"http://127.0.0.1:{metrics_port}"


def make_stepper(crs, namespace: str, name: str, *, broken: bool) -> None:
    body = new_cr(KIND, name, {"seconds": 0.2, "broken": broken, "portNumber": 11211})
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read())


def last_run(url: str, namespace: str, name: str) -> dict[str, Any]:
    """The CR's first run once it ended, in full (tasks and all)."""
    of_it = f"{url}/runs/{GROUP}/{VERSION}/{KIND}/{namespace}/{name}"

    def ended() -> dict[str, Any] | None:
        runs = get(of_it)["runs"]
        return runs[-1] if runs and runs[-1]["outcome"] != "Running" else None

    first = wait_until(ended, what=f"the first run of {name} to end", timeout=180)
    return get(f"{of_it}/{first['id']}")


@pytest.mark.parametrize("runner", ["warm", "cold"])
def test_a_reconcile_is_exported_as_a_span_tree(
    receiver, operator, crs, namespace, steppers, runner
):  # the receiver first, so that it stops last: the operator's last export finds it
    url = start(
        operator,
        {
            **NO_TRACES,
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_SERVICE_NAME": "stepper-operator",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=e2e",
            "OTEL_BSP_SCHEDULE_DELAY": "200",
        },
        f"--runner={runner}",
    )
    make_stepper(crs, namespace, "web", broken=True)
    wait_condition(crs, namespace, KIND, "web", "Failure")
    record = last_run(url, namespace, "web")
    assert record["outcome"] == "Failed"
    trace_id = record["traceId"]
    assert isinstance(trace_id, str) and len(trace_id) == 32

    def the_trace() -> list[dict[str, Any]] | None:
        spans = [s for s in receiver.received() if s["trace_id"] == trace_id]
        names = {s["name"] for s in spans}
        return spans if {"reconcile Stepper", "ansible-run", "status"} <= names else None

    spans = wait_until(the_trace, what="the first reconcile's spans at the receiver", timeout=60)
    [reconcile] = [s for s in spans if s["name"] == "reconcile Stepper"]
    [run] = [s for s in spans if s["name"] == "ansible-run"]
    assert reconcile["parent"] == ""
    assert reconcile["resource"]["service.name"] == "stepper-operator"
    assert reconcile["resource"]["deployment.environment.name"] == "e2e"
    attributes = reconcile["attributes"]
    assert {k: attributes[k] for k in attributes if k != "ansible_operator.trigger.message"} == {
        "k8s.namespace.name": namespace,
        "ansible_operator.resource.name": "web",
        "ansible_operator.resource.group": GROUP,
        "ansible_operator.resource.version": VERSION,
        "ansible_operator.resource.kind": KIND,
        "ansible_operator.resource.generation": 1,
        "ansible_operator.trigger.reason": "Created",
        "ansible_operator.run.outcome": "Failed",
    }
    assert reconcile["status"] == (
        STATUS_ERROR,
        "task 'Check the port' failed: port 11211 is taken",
    )

    assert run["parent"] == reconcile["span_id"]
    assert run["attributes"]["ansible_operator.run.ident"] == record["id"]
    assert run["status"][0] == STATUS_ERROR
    statuses = sorted(
        (s["start"], s["attributes"]["ansible_operator.status.write"])
        for s in spans
        if s["name"] == "status"
    )
    assert [write for _, write in statuses] == ["Running", "Failure"]
    assert all(s["parent"] == reconcile["span_id"] for s in spans if s["name"] == "status")

    tasks = sorted((s for s in spans if s["parent"] == run["span_id"]), key=lambda s: s["start"])
    by_name = {s["attributes"]["ansible_operator.task.name"]: s for s in tasks}
    assert list(by_name) == [t["name"] for t in record["tasks"]]
    assert [n for n in by_name if by_name[n]["attributes"]["ansible_operator.task.role"]] == [
        "Read the spec",
        "Take a while",
        "Check the port",
    ]
    took = by_name["Take a while"]
    assert took["attributes"]["ansible_operator.task.status"] == "changed"
    assert took["attributes"]["ansible_operator.task.changed"] is True
    assert 0.2 <= (took["end"] - took["start"]) / 1e9 < 30
    check = by_name["Check the port"]
    assert check["status"] == (STATUS_ERROR, "port 11211 is taken")
    assert check["attributes"]["ansible_operator.task.status"] == "failed"
    assert all(run["start"] <= t["start"] <= t["end"] <= run["end"] for t in tasks)

    lines = [r for r in operator.records() if r.get("trace_id") == trace_id]
    assert {(r["kind"], r["namespace"], r["name"]) for r in lines} == {(KIND, namespace, "web")}
    assert {r["span_id"] for r in lines} == {reconcile["span_id"]}
    of_the_run = [r for r in operator.records() if r.get("job") == record["id"]]
    assert of_the_run, "the run's events are logged"
    assert all(r.get("trace_id") == trace_id for r in of_the_run)


def test_without_the_environment_nothing_is_traced(operator, crs, namespace, steppers):
    url = start(operator, NO_TRACES)
    make_stepper(crs, namespace, "plain", broken=False)
    wait_condition(crs, namespace, KIND, "plain", "Successful")
    record = last_run(url, namespace, "plain")
    assert record["traceId"] is None
    records = operator.records()
    assert not [r for r in records if "trace_id" in r]
    assert not [r for r in records if r.get("logger") == "tracing"]
    with urllib.request.urlopen(url + "/metrics", timeout=30) as resp:
        assert "ansible_operator_trace_spans_dropped" not in resp.read().decode()


def test_an_endpoint_that_is_down_is_said_once_and_counted(operator, crs, namespace, steppers):
    [closed] = free_ports(1)  # nothing listens there
    url = start(
        operator,
        {
            **NO_TRACES,
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{closed}/v1/traces",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
        },
    )

    def dropped() -> float:
        with urllib.request.urlopen(url + "/metrics", timeout=30) as resp:
            for line in resp.read().decode().splitlines():
                if line.startswith("ansible_operator_trace_spans_dropped_total "):
                    return float(line.split()[1])
        raise AssertionError("no ansible_operator_trace_spans_dropped_total on /metrics")

    assert dropped() == 0
    for name in ("one", "two"):  # two reconciles, two batches at least
        before = dropped()
        make_stepper(crs, namespace, name, broken=False)
        wait_condition(crs, namespace, KIND, name, "Successful")
        wait_until(lambda b=before: dropped() > b, what=f"the spans of {name} counted dropped")
    said = [r for r in operator.records() if r.get("logger") == "tracing" and r["level"] == "error"]
    assert [r["msg"] for r in said] == [
        "Traces cannot be exported: spans are dropped (counted in "
        "ansible_operator_trace_spans_dropped_total) until the endpoint takes them"
    ]
    assert said[0]["endpoint"] == f"http://127.0.0.1:{closed}/v1/traces"
    assert said[0]["reason"]
    assert not [r for r in operator.records() if r.get("logger", "").startswith("opentelemetry")]


def test_a_protocol_it_does_not_speak_refuses_the_start(operator, steppers):
    operator.write_watches([{"kind": KIND, "role": "stepper"}])
    operator.start(
        env={"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, ready=False
    )
    assert operator.proc.wait(timeout=60) == 1
    assert operator.log().strip().splitlines()[-1] == (
        "ansible-operator run: OTEL_EXPORTER_OTLP_PROTOCOL='grpc': traces are exported with "
        "OTLP over HTTP (http/protobuf) only"
    )
