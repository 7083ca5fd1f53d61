"""Traces of reconciles: when the environment turns them on, the span tree of a scripted run
(reconcile → status writes, the Ansible run → its tasks with their real times), the trace id in
the log lines and the run's record, and an exporter that fails saying so once."""

from __future__ import annotations

import asyncio
import datetime
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from prometheus_client import CollectorRegistry

from ansible_operator.core import triggers
from ansible_operator.core.watches import GVK, Watch
from ansible_operator.kube.client import ResourceInfo
from ansible_operator.kube.discovery import Discovery
from ansible_operator.runner import EventCallback, RunRequest, RunResult
from ansible_operator.runs.history import RunHistory
from ansible_operator.runtime.config.settings import RunSettings
from ansible_operator.runtime.control.reconcile import ReconcileError, Request
from ansible_operator.runtime.control.reconciler import Reconciler
from ansible_operator.runtime.control.session import RunSession
from ansible_operator.runtime.observe import logs
from ansible_operator.runtime.observe.metrics import OperatorMetrics
from ansible_operator.runtime.observe.run_observers import (
    LoggedRuns,
    Observers,
    RecordedRuns,
    TracedRuns,
)
from ansible_operator.runtime.observe.tracing import (
    EXPORTER_LOGGER,
    UNTRACED,
    CountingExporter,
    Tracing,
    TracingError,
    endpoint,
    wanted,
)
from tests.unit.fake_api import FakeApi
from tests.unit.fake_runner import failed, succeeded
from tests.unit.test_reconciler import FakeProxy

THINGS = ResourceInfo("test.example.com", "v1", "Thing", "things", True)
WATCH = Watch(gvk=GVK("test.example.com", "v1", "Thing"), role="/roles/thing")


# -- when traces are on ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "on"),
    [
        ({}, False),
        ({"OTEL_SERVICE_NAME": "x"}, False),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, True),
        ({"OTEL_TRACES_EXPORTER": " ", "OTEL_EXPORTER_OTLP_ENDPOINT": ""}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "TRUE"}, False),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "false"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, True),
    ],
)
def test_traces_are_on_only_when_the_standard_environment_asks(
    environ: dict[str, str], on: bool
) -> None:
    assert wanted(environ) is on


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"OTEL_TRACES_EXPORTER": "jaeger"}, "OTEL_TRACES_EXPORTER='jaeger': traces are exported"),
        (
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "OTEL_EXPORTER_OTLP_PROTOCOL='grpc': traces are exported with OTLP over HTTP",
        ),
        (
            {
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json",
                "OTEL_TRACES_EXPORTER": "otlp",
            },
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL='http/json'",
        ),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
            "OTEL_EXPORTER_OTLP_ENDPOINT='collector:4318' is not an http:// or https:// URL",
        ),
    ],
)
def test_what_the_operator_cannot_do_is_refused_in_one_line(
    environ: dict[str, str], message: str
) -> None:
    with pytest.raises(TracingError) as err:
        wanted(environ)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("environ", "url"),
    [
        ({}, "http://localhost:4318/v1/traces"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}, "http://c:4318/v1/traces"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c/otlp"}, "https://c/otlp/v1/traces"),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:9/spans",
            },
            "http://t:9/spans",
        ),
    ],
)
def test_spans_go_to_the_traces_endpoint_or_the_otlp_one_s_v1_traces(
    environ: dict[str, str], url: str
) -> None:
    assert endpoint(environ) == url


def test_a_bad_sdk_disabled_value_is_read_as_false_and_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert wanted({"OTEL_SDK_DISABLED": "yes", "OTEL_TRACES_EXPORTER": "otlp"})
    assert [r.getMessage() for r in caplog.records] == [
        "OTEL_SDK_DISABLED='yes' is not true or false: read as false"
    ]


# -- the spans of a reconcile ---------------------------------------------------------------------


def job_event(kind: str, task: str, uuid: str, **data: Any) -> dict[str, Any]:
    return {
        "event": kind,
        "uuid": f"{uuid}-{kind}",
        "created": "2026-11-26T10:00:00.000000",
        "event_data": {"task": task, "task_uuid": uuid, "host": "localhost", "role": "thing"}
        | data,
    }


EVENTS = [
    job_event("runner_on_start", "make it", "t1"),
    job_event(
        "runner_on_ok",
        "make it",
        "t1",
        res={"changed": True},
        start="2026-11-26T10:00:01.000000+00:00",
        duration=1.5,
    ),
    job_event("runner_on_start", "check it", "t2"),
    job_event(
        "runner_on_failed",
        "check it",
        "t2",
        res={"msg": "not there"},
        start="2026-11-26T10:00:02.500000+00:00",
        duration=0.25,
    ),
]


class EventRunner:
    """Sends the job events a run would, then returns the scripted result."""

    def __init__(self, outcome: RunResult, events: list[dict[str, Any]]) -> None:
        self.outcome = outcome
        self.events = events
        self.written_at_start: dict[str, Any] = {}  # the run's record as it started

    async def run(
        self, request: RunRequest, on_event: EventCallback | None = None, *, logger: object = None
    ) -> RunResult:
        record = request.private_data_dir / "runs" / f"{request.ident}.json"
        self.written_at_start = json.loads(record.read_text())
        for event in self.events:
            if on_event is not None:
                on_event(event)
        return self.outcome


class Traced:
    def __init__(
        self,
        tmp_path: Path,
        outcome: RunResult,
        events: list[dict[str, Any]],
        *,
        traced: bool = True,
    ) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracing = Tracing(provider)
        self.api = FakeApi(THINGS)
        self.api.create(
            THINGS,
            {
                "apiVersion": "test.example.com/v1",
                "kind": "Thing",
                "metadata": {"name": "a", "namespace": "ns"},
                "spec": {},
            },
        )
        self.history = RunHistory(tmp_path / "runs", per_resource=5, max_bytes=1 << 20)
        self.runner = EventRunner(outcome, events)
        session = RunSession(
            WATCH,
            runner=self.runner,
            proxy=FakeProxy(),
            settings=RunSettings(),
            observers=Observers(
                [
                    *([TracedRuns(self.tracing)] if traced else []),
                    RecordedRuns(self.history),
                    LoggedRuns(RunSettings().logging),
                ]
            ),
            runner_base=tmp_path,
        )
        discovery = Discovery(self.api)

        async def resource() -> ResourceInfo:
            return await discovery.resource("test.example.com/v1", "Thing")

        self.reconciler = Reconciler(
            WATCH,
            client=self.api,
            session=session,
            resource=resource,
            reconcile_period=3600.0,
            metrics=OperatorMetrics(),
            tracing=self.tracing if traced else UNTRACED,
        )

    def reconcile(self) -> None:
        async def go() -> None:
            why = triggers.Trigger("SpecChanged", "generation 2 → 3")
            with logs.object_context("Thing", "ns", "a"):
                await self.reconciler(Request(("ns", "a"), why))

        asyncio.run(go())

    def spans(self) -> dict[str, ReadableSpan]:
        return {span.name: span for span in self.exporter.get_finished_spans()}


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logs.JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    level = root.level
    root.setLevel(logging.INFO)
    try:
        yield out
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def test_a_reconcile_is_a_span_with_its_run_its_tasks_and_its_status_writes(
    tmp_path: Path, log_lines: io.StringIO
) -> None:
    world = Traced(tmp_path, failed("check it", "not there"), EVENTS)
    with pytest.raises(ReconcileError):
        world.reconcile()

    finished = world.exporter.get_finished_spans()
    assert sorted(s.name for s in finished) == [
        "ansible-run",
        "reconcile Thing",
        "status",
        "status",
        "task check it",
        "task make it",
    ]
    spans = world.spans()
    reconcile, run = spans["reconcile Thing"], spans["ansible-run"]
    assert reconcile.parent is None
    assert {s.context.trace_id for s in finished} == {reconcile.context.trace_id}
    children = {s.name: s.parent.span_id for s in finished if s.parent is not None}
    assert children == {
        "ansible-run": reconcile.context.span_id,
        "status": reconcile.context.span_id,
        "task make it": run.context.span_id,
        "task check it": run.context.span_id,
    }
    assert dict(reconcile.attributes or {}) == {
        "k8s.namespace.name": "ns",
        "ansible_operator.resource.name": "a",
        "ansible_operator.resource.group": "test.example.com",
        "ansible_operator.resource.version": "v1",
        "ansible_operator.resource.kind": "Thing",
        "ansible_operator.trigger.reason": "SpecChanged",
        "ansible_operator.trigger.message": "generation 2 → 3",
        "ansible_operator.resource.generation": 1,
        "ansible_operator.run.outcome": "Failed",
    }
    assert reconcile.status.status_code is StatusCode.ERROR
    assert reconcile.status.description == "task 'check it' failed: not there"
    assert run.status.status_code is StatusCode.ERROR
    assert (run.attributes or {})["ansible_operator.run.failed"] == 1
    writes = [(s.attributes or {}).get("ansible_operator.status.write") for s in finished]
    assert [w for w in writes if w] == ["Running", "Failure"]

    made, checked = spans["task make it"], spans["task check it"]
    assert dict(made.attributes or {}) == {
        "ansible_operator.task.name": "make it",
        "ansible_operator.task.role": "thing",
        "ansible_operator.task.host": "localhost",
        "ansible_operator.task.status": "changed",
        "ansible_operator.task.changed": True,
    }
    start = (
        round(datetime.datetime(2026, 11, 26, 10, 0, 1, tzinfo=datetime.UTC).timestamp()) * 10**9
    )
    assert (made.start_time, made.end_time) == (start, start + 1_500_000_000)
    assert (checked.start_time, checked.end_time) == (start + 1_500_000_000, start + 1_750_000_000)
    assert made.status.status_code is StatusCode.UNSET
    assert (checked.status.status_code, checked.status.description) == (
        StatusCode.ERROR,
        "not there",
    )

    trace_id = f"{reconcile.context.trace_id:032x}"
    [summary] = world.history.runs("test.example.com", "v1", "Thing", "ns", "a")
    assert summary["traceId"] == world.runner.written_at_start["traceId"] == trace_id
    lines = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    assert lines, "the run logs its tasks"
    assert {(line.get("trace_id"), line.get("span_id")) for line in lines} == {
        (trace_id, f"{reconcile.context.span_id:016x}")
    }


def test_a_successful_reconcile_has_no_error_status(tmp_path: Path) -> None:
    world = Traced(tmp_path, succeeded(), EVENTS[:2])
    world.reconcile()
    spans = world.spans()
    assert {s.status.status_code for s in spans.values()} == {StatusCode.UNSET}
    assert (spans["reconcile Thing"].attributes or {})["ansible_operator.run.outcome"] == (
        "Succeeded"
    )


def test_without_tracing_the_record_has_no_trace_id(tmp_path: Path) -> None:
    world = Traced(tmp_path, succeeded(), EVENTS[:2], traced=False)
    world.reconcile()
    assert world.exporter.get_finished_spans() == ()
    [summary] = world.history.runs("test.example.com", "v1", "Thing", "ns", "a")
    assert summary["traceId"] is None


# -- an exporter that cannot deliver --------------------------------------------------------------


class Flaky:
    def __init__(self) -> None:
        self.results: list[SpanExportResult] = []

    def export(self, spans: Any) -> SpanExportResult:
        logging.getLogger(EXPORTER_LOGGER).error(
            "Failed to export spans batch code: None, reason: refused"
        )
        return self.results.pop(0)

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def test_spans_that_cannot_be_exported_are_counted_and_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    flaky = Flaky()
    exporter = CountingExporter(flaky, "http://127.0.0.1:9/v1/traces")  # type: ignore[arg-type]
    provider = TracerProvider()
    tracing = Tracing(provider)
    registry = CollectorRegistry()
    tracing.count_in(registry)
    exporter.on_dropped = tracing.count_dropped
    flaky.results = [SpanExportResult.FAILURE] * 3 + [SpanExportResult.SUCCESS]
    for batch in ([1, 2], [3], [4, 5, 6], [7]):
        exporter.export(batch)
    said = [(r.levelname, r.getMessage(), getattr(r, "reason", None)) for r in caplog.records]
    assert {getattr(r, "endpoint", None) for r in caplog.records} == {
        "http://127.0.0.1:9/v1/traces"
    }
    assert said == [
        (
            "ERROR",
            "Traces cannot be exported: spans are dropped (counted in "
            "ansible_operator_trace_spans_dropped_total) until the endpoint takes them",
            "Failed to export spans batch code: None, reason: refused",
        ),
        ("INFO", "Traces are exported again", None),
    ]
    assert registry.get_sample_value("ansible_operator_trace_spans_dropped_total") == 6


def test_the_sdk_is_not_imported_when_traces_are_off() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from ansible_operator.runtime.manager import operator; "
        "from ansible_operator.runtime.observe import tracing; "
        "tracing.wanted({}); print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
