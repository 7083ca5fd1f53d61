"""Traces of reconciles (OpenTelemetry), on when the standard environment asks for them.

One span per reconcile (``reconcile <Kind>``), and under it the Ansible run (``ansible-run``)
with one span per task and host (its real start and duration, from the run's job events) and
one per status write (``status``). The reconcile's trace and span ids go on every log line
written inside it, and the trace id into the run's record.

On when ``OTEL_TRACES_EXPORTER`` names ``otlp``, or when it is unset and an OTLP endpoint is
(``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``); off when
``OTEL_SDK_DISABLED`` is true or the exporter is ``none``. The SDK's own exporter and batch
processor read the rest of the environment (headers, timeout, compression, service name,
resource attributes, batch sizes). Spans are exported with OTLP over HTTP (``http/protobuf``);
another protocol is refused at start. The SDK is imported only when tracing is on, so an
operator without it pays nothing but a None check per reconcile.

Spans are made in the operator's process only, never in a run (a warm run is a fork: no SDK
thread there): the tasks' spans come from the job events the operator receives.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry, Counter

from ansible_operator import __version__
from ansible_operator.core import GVK, triggers
from ansible_operator.runner import RunResult, Timeline
from ansible_operator.runtime.observe import logs

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
    from opentelemetry.trace import Span

log = logging.getLogger("tracing")

DEFAULT_SERVICE_NAME = "ansible-operator"
DEFAULT_ENDPOINT = "http://localhost:4318"  # the specification's, for OTLP/HTTP
PROTOCOL = "http/protobuf"
_TRUE = "true"
# Where the OTLP exporter says each failed batch and retry.
EXPORTER_LOGGER = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
_FAILED_TASK = ("failed", "unreachable")


class TracingError(Exception):
    """A bad OTEL_* setting; ``str()`` is the one line that refuses the start."""


def wanted(environ: Mapping[str, str]) -> bool:
    """Whether the environment asks for traces (see the module's doc); TracingError when it
    asks for something this operator does not do."""
    disabled = environ.get("OTEL_SDK_DISABLED", "").strip().lower()
    if disabled not in ("", "false", _TRUE):
        log.warning(
            f"OTEL_SDK_DISABLED={environ['OTEL_SDK_DISABLED']!r} is not true or false: "
            "read as false"
        )
    if disabled == _TRUE:
        return False
    exporters = environ.get("OTEL_TRACES_EXPORTER", "")
    names = {name.strip() for name in exporters.split(",") if name.strip()}  # empty: unset
    if names:
        if names == {"none"}:
            return False
        if names != {"otlp"}:
            raise TracingError(
                f"OTEL_TRACES_EXPORTER={exporters!r}: traces are exported with otlp only (or none)"
            )
    elif not (
        environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    ):
        return False
    for variable in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        protocol = environ.get(variable)
        if protocol:
            if protocol.strip() != PROTOCOL:
                raise TracingError(
                    f"{variable}={protocol!r}: traces are exported with OTLP over HTTP "
                    f"({PROTOCOL}) only"
                )
            break
    for variable in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        endpoint = environ.get(variable)
        if endpoint:
            url = urlsplit(endpoint)
            if url.scheme not in ("http", "https") or not url.hostname:
                raise TracingError(f"{variable}={endpoint!r} is not an http:// or https:// URL")
            break
    return True


def endpoint(environ: Mapping[str, str]) -> str:
    """Where spans go: the traces endpoint as given, else the OTLP endpoint's ``v1/traces``."""
    given = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if given:
        return given
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or DEFAULT_ENDPOINT
    return base.rstrip("/") + "/v1/traces"


def otlp(environ: Mapping[str, str]) -> Tracing:
    """Traces exported with OTLP as the environment says (once ``wanted`` said yes): the SDK is
    imported here; its batch processor's thread starts with ``start`` (a runnable's)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME, read by the SDK; ours when they name none.
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}))
    provider = TracerProvider(resource=resource)
    url = endpoint(environ)
    counting = CountingExporter(OTLPSpanExporter(endpoint=url), url)

    def export() -> None:
        # Duck-typed (the SDK's base class would import it with this module).
        provider.add_span_processor(BatchSpanProcessor(cast("SpanExporter", counting)))
        log.info(
            "Traces exported",
            extra={"endpoint": url, "service": resource.attributes.get(SERVICE_NAME)},
        )

    tracing = Tracing(provider, export=export)
    counting.on_dropped = lambda count: tracing.count_dropped(count)
    return tracing


class _Held(logging.Filter):
    """The OTLP exporter's own lines, held: a failing export would log each batch and retry;
    the last one is the reason ``CountingExporter`` gives in its one line."""

    def __init__(self) -> None:
        super().__init__()
        self.last = ""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            self.last = record.getMessage()
            return False
        return True


class CountingExporter:
    """An exporter that counts the spans it could not deliver (dropped: the batch processor
    does not keep them) and says so once while it fails, and once when it works again."""

    def __init__(self, inner: SpanExporter, endpoint: str) -> None:
        self.inner = inner
        self.endpoint = endpoint
        self.on_dropped: Callable[[int], None] = lambda count: None
        self._failing = False
        self._lock = threading.Lock()

    def export(self, spans: Any) -> SpanExportResult:
        from opentelemetry.sdk.trace.export import SpanExportResult

        # The exporter's lines are held while it exports, and only then: no filter outlives
        # the call on the process's logger.
        held = _Held()
        exporter_log = logging.getLogger(EXPORTER_LOGGER)
        exporter_log.addFilter(held)
        try:
            result = self.inner.export(spans)
        finally:
            exporter_log.removeFilter(held)
        with self._lock:
            if result is SpanExportResult.SUCCESS:
                if self._failing:
                    self._failing = False
                    log.info("Traces are exported again", extra={"endpoint": self.endpoint})
                return result
            self.on_dropped(len(spans))
            if not self._failing:
                self._failing = True
                log.error(
                    "Traces cannot be exported: spans are dropped (counted in "
                    "ansible_operator_trace_spans_dropped_total) until the endpoint takes them",
                    extra={"endpoint": self.endpoint, "reason": held.last},
                )
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class Tracing:
    """The spans of reconciles, on one TracerProvider (``otlp``; tests give one with an
    in-memory exporter)."""

    def __init__(
        self, provider: TracerProvider, *, export: Callable[[], None] = lambda: None
    ) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("ansible_operator", __version__)
        self.count_dropped: Callable[[int], None] = lambda count: None
        self._export = export  # adds the exporting span processor (its thread) to the provider

    def count_in(self, registry: CollectorRegistry) -> None:
        """Count the spans the exporter drops in ``ansible_operator_trace_spans_dropped_total``."""
        dropped = Counter(
            "ansible_operator_trace_spans_dropped",
            "Spans the OTLP exporter could not deliver (the batch processor drops them).",
            registry=registry,
        )
        self.count_dropped = dropped.inc

    async def start(self) -> None:
        """Start exporting (``runnables.Served``: before the servers, stopped after them)."""
        self._export()

    async def stop(self) -> None:
        """Export what is left and stop the exporter's thread."""
        await asyncio.to_thread(self.provider.shutdown)

    @contextlib.contextmanager
    def reconcile(
        self, gvk: GVK, key: tuple[str, str], trigger: triggers.Trigger
    ) -> Iterator[None]:
        """The span of one reconcile, current (and its ids on the log lines) within the block;
        an exception out of it is the span's error."""
        namespace, name = key
        attributes: dict[str, Any] = {
            "k8s.namespace.name": namespace,
            "ansible_operator.resource.name": name,
            "ansible_operator.resource.group": gvk.group,
            "ansible_operator.resource.version": gvk.version,
            "ansible_operator.resource.kind": gvk.kind,
            "ansible_operator.trigger.reason": trigger.reason,
            "ansible_operator.trigger.message": trigger.message,
        }
        if trigger.object is not None:
            attributes["ansible_operator.trigger.object"] = str(trigger.object)
        from opentelemetry.trace import Status, StatusCode

        with self.tracer.start_as_current_span(
            f"reconcile {gvk.kind}", attributes=attributes, set_status_on_exception=False
        ) as span:
            ids = span.get_span_context()
            with logs.more_context(trace_id=f"{ids.trace_id:032x}", span_id=f"{ids.span_id:016x}"):
                try:
                    yield
                except Exception as err:  # ReconcileError, TerminalError: the reconcile failed
                    span.set_status(Status(StatusCode.ERROR, str(err) or type(err).__name__))
                    raise

    @contextlib.contextmanager
    def status(self, write: str) -> Iterator[None]:
        """The span of one status write (``write``: the condition it sets)."""
        with self.tracer.start_as_current_span(
            "status", attributes={"ansible_operator.status.write": write}
        ):
            yield

    def trace_id(self) -> str | None:
        """The current trace's id in hex (the record's ``traceId``), None outside a span."""
        from opentelemetry import trace

        ids = trace.get_current_span().get_span_context()
        return f"{ids.trace_id:032x}" if ids.is_valid else None

    @contextlib.contextmanager
    def run(self, ident: str, obj: Mapping[str, Any], ansible: str) -> Iterator[RunSpan]:
        """The span of one Ansible run; its tasks' spans are added by ``RunSpan.finish``."""
        generation = (obj.get("metadata") or {}).get("generation")
        from opentelemetry import trace

        reconcile = trace.get_current_span()
        if isinstance(generation, int):
            reconcile.set_attribute("ansible_operator.resource.generation", generation)
        with self.tracer.start_as_current_span(
            "ansible-run",
            attributes={
                "ansible_operator.run.ident": ident,
                "ansible_operator.run.ansible": ansible,
            },
        ) as span:
            yield RunSpan(self, span, reconcile)


class Untraced:
    """Traces off: a reconcile's and a status write's spans are none."""

    @contextlib.contextmanager
    def reconcile(
        self, gvk: GVK, key: tuple[str, str], trigger: triggers.Trigger
    ) -> Iterator[None]:
        yield

    @contextlib.contextmanager
    def status(self, write: str) -> Iterator[None]:
        yield


UNTRACED = Untraced()


class RunSpan:
    """An Ansible run's span while it goes: ``finish`` adds its tasks and its outcome."""

    def __init__(self, tracing: Tracing, span: Span, reconcile: Span) -> None:
        self._tracing = tracing
        self._span = span
        self._reconcile = reconcile

    def finish(self, timeline: Timeline, result: RunResult | None, outcome: str) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

        end = _now_ns()
        parent = trace.set_span_in_context(self._span)
        for task in timeline.tasks:
            start = _ns(task.started) or end
            done = start + round(task.duration * 1e9) if task.duration is not None else end
            span = self._tracing.tracer.start_span(
                f"task {task.name}" if task.name else "task",
                context=parent,
                start_time=start,
                attributes={
                    "ansible_operator.task.name": task.name,
                    "ansible_operator.task.role": task.role,
                    "ansible_operator.task.host": task.host,
                    "ansible_operator.task.status": task.status,
                    "ansible_operator.task.changed": task.changed,
                },
            )
            if task.status in _FAILED_TASK:
                span.set_status(Status(StatusCode.ERROR, task.message or task.status))
            span.end(end_time=max(done, start))
        for span in (self._span, self._reconcile):
            span.set_attribute("ansible_operator.run.outcome", outcome)
        if result is not None:
            stats = result.outcome.ansible_result
            self._span.set_attributes(
                {
                    "ansible_operator.run.ok": stats.ok,
                    "ansible_operator.run.changed": stats.changed,
                    "ansible_operator.run.failed": stats.failures,
                    "ansible_operator.run.skipped": stats.skipped,
                }
            )
        if outcome == "Failed":
            message = "; ".join(result.outcome.failure_messages) if result else ""
            self._span.set_status(Status(StatusCode.ERROR, message or "the run failed"))


def _now_ns() -> int:
    return round(datetime.datetime.now(datetime.UTC).timestamp() * 1e9)


def _ns(stamp: str) -> int | None:
    """An event's ISO 8601 time in nanoseconds since the epoch (naive ones are UTC)."""
    try:
        when = datetime.datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return round(when.timestamp() * 1e9)
