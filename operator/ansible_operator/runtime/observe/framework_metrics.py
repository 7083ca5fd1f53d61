"""The families upstream's ``/metrics`` has from the Go libraries it is built on, served here
under the same names, types, labels and meanings (docs/metrics.md lists them all).

- controller-runtime's controller families (``controller_runtime_*``) and client-go's work
  queue families (``workqueue_*``), one label child per controller, bound once
  (``ControllerMetrics``): the controller and its queue touch only those children. The label
  ``controller`` (and the queue's ``name``) is upstream's controller name,
  ``<kind>-<version>-controller`` in lower case (``controller_name``).
- operator-lib's ``resource_created_at_seconds``, set by the controller for each CR an event
  about it passes the predicates for, removed when it is deleted.
- client-go's ``rest_client_requests_total``, read at each scrape from the tally the
  Kubernetes client keeps (``KubeClient.responses``).
- controller-runtime's ``certwatcher_*`` counters: the checks of the metrics certificate's
  files (``ServingTLS.reads``), when it comes from files.
- client_golang's process collector: prometheus_client's, plus the three families it lacks
  (``process_virtual_memory_max_bytes``, ``process_network_{receive,transmit}_bytes_total``).

Go's runtime families (``go_*``) are not served: they describe a Go runtime there is none of.
"""

from __future__ import annotations

import resource
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ansible_operator.core import GVK
from ansible_operator.runtime.observe.metrics_tls import ServingTLS

# controller-runtime's buckets for the reconcile time, and client-go's for the queue's times
# (ExponentialBuckets(10e-9, 10, 12): 1e-08 to 1000 seconds).
RECONCILE_TIME_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7),
    *(0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15),
    *(20, 25, 30, 40, 50, 60),
)
QUEUE_TIME_BUCKETS = tuple(float(f"1e{exponent}") for exponent in range(-8, 4))
# client_golang's default buckets (prometheus.DefBuckets), which upstream's own histograms use.
GO_DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

# The results controller-runtime counts; "requeue" (a rate-limited requeue without an error) is
# not among them: neither upstream's reconciler nor ours ever asks for one.
RESULTS = ("success", "error", "requeue_after")


def controller_name(gvk: GVK) -> str:
    """Upstream's name for the controller of ``gvk`` (its metrics' ``controller`` label)."""
    return f"{gvk.kind.lower()}-{gvk.version.lower()}-controller"


@dataclass(frozen=True)
class QueueMetrics:
    """One work queue's children of client-go's ``workqueue_*`` families."""

    adds: Any  # Counter child: keys queued (an add of a key already waiting is not one)
    retries: Any  # Counter child: delayed adds (requeue_after, backoff)
    queue_duration: Any  # Histogram child: from the add to a worker taking the key
    work_duration: Any  # Histogram child: from a worker taking the key to its done
    depth: Any  # Gauge child: keys waiting (set_function: read at each scrape)
    unfinished: Any  # Gauge child: seconds of work in progress (set_function)
    longest: Any  # Gauge child: the oldest work in progress, in seconds (set_function)


@dataclass(frozen=True)
class ControllerMetrics:
    """One controller's children of controller-runtime's families, and its queue's."""

    queue: QueueMetrics
    results: dict[str, Any]  # by RESULTS: Counter children
    errors: Any
    terminal_errors: Any
    panics: Any  # reconciles that raised an unexpected exception (a Go panic, recovered)
    reconcile_time: Any
    active_workers: Any
    created_at: Gauge  # resource_created_at_seconds, the whole family (labelled per CR)


class ControllerFamilies:
    """controller-runtime's controller and client-go's work queue families, and operator-lib's
    ``resource_created_at_seconds``, registered once on ``registry`` (None: unserved)."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        def counter(name: str, doc: str, labels: Iterable[str]) -> Counter:
            return Counter(name, doc, labels, registry=registry)

        def gauge(name: str, doc: str, labels: Iterable[str]) -> Gauge:
            return Gauge(name, doc, labels, registry=registry)

        per_controller = ["controller"]
        per_queue = ["name", "controller"]
        self.total = counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
        )
        self.errors = counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            per_controller,
        )
        self.terminal_errors = counter(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            per_controller,
        )
        self.panics = counter(
            "controller_runtime_reconcile_panics_total",
            "Total number of reconciliation panics per controller",
            per_controller,
        )
        self.time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            per_controller,
            buckets=RECONCILE_TIME_BUCKETS,
            registry=registry,
        )
        self.workers = gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            per_controller,
        )
        self.active = gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            per_controller,
        )
        self.depth = gauge(
            "workqueue_depth",
            "Current depth of workqueue by workqueue and priority",
            [*per_queue, "priority"],
        )
        self.adds = counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue", per_queue
        )
        self.latency = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            per_queue,
            buckets=QUEUE_TIME_BUCKETS,
            registry=registry,
        )
        self.work = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            per_queue,
            buckets=QUEUE_TIME_BUCKETS,
            registry=registry,
        )
        self.unfinished = gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads. One can deduce the "
            "number of stuck threads by observing the rate at which this increases.",
            per_queue,
        )
        self.longest = gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            per_queue,
        )
        self.retries = counter(
            "workqueue_retries_total", "Total number of retries handled by workqueue", per_queue
        )
        self.created_at = gauge(
            "resource_created_at_seconds",
            "Timestamp at which a resource was created",
            ["name", "namespace", "group", "version", "kind"],
        )
        self._names: set[str] = set()

    def name_for(self, gvk: GVK) -> str:
        """The ``controller`` label of ``gvk``'s controller: upstream's name, unless a kind of
        another group with the same kind and version took it (upstream refuses to start then,
        as two controllers would share one name): then ``<kind>.<group>-<version>-controller``."""
        name = controller_name(gvk)
        if name in self._names:
            name = f"{gvk.kind.lower()}.{gvk.group or 'core'}-{gvk.version.lower()}-controller"
        self._names.add(name)
        return name

    def bind(self, controller: str, workers: int) -> ControllerMetrics:
        """The children of controller ``controller``, created now (at 0, as controller-runtime
        starts them) so a dashboard sees every controller before its first reconcile."""
        self.workers.labels(controller).set(workers)
        queue = QueueMetrics(
            adds=self.adds.labels(controller, controller),
            retries=self.retries.labels(controller, controller),
            queue_duration=self.latency.labels(controller, controller),
            work_duration=self.work.labels(controller, controller),
            depth=self.depth.labels(controller, controller, ""),  # no priorities
            unfinished=self.unfinished.labels(controller, controller),
            longest=self.longest.labels(controller, controller),
        )
        return ControllerMetrics(
            queue=queue,
            results={result: self.total.labels(controller, result) for result in RESULTS},
            errors=self.errors.labels(controller),
            terminal_errors=self.terminal_errors.labels(controller),
            panics=self.panics.labels(controller),
            reconcile_time=self.time.labels(controller),
            active_workers=self.active.labels(controller),
            created_at=self.created_at,
        )


class RestClientRequests(Collector):
    """client-go's ``rest_client_requests_total{code,method,host}``: the client's tally of
    (method, code) read at each scrape; code ``<error>`` for a request that got no answer."""

    def __init__(self, server: str, responses: Mapping[tuple[str, str], int]) -> None:
        self._host = urlsplit(server).netloc or "none"
        self._responses = responses

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            labels=["code", "method", "host"],
        )
        for (method, code), count in sorted(self._responses.items()):
            family.add_metric([code, method, self._host], count)
        yield family


class CertificateReads(Collector):
    """controller-runtime's ``certwatcher_read_certificate_total`` and ``..._errors_total``: the
    checks of the metrics certificate's files (served only when it comes from files: a
    self-signed one is never read again)."""

    def __init__(self, tls: ServingTLS) -> None:
        self._tls = tls

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily(
            "certwatcher_read_certificate",
            "Total number of certificate reads",
            value=self._tls.reads,
        )
        yield CounterMetricFamily(
            "certwatcher_read_certificate_errors",
            "Total number of certificate read errors",
            value=self._tls.read_errors,
        )


NETSTAT = Path("/proc/self/net/netstat")
UNLIMITED = float(2**64 - 1)  # how client_golang reports an unlimited address space


class ProcessExtras(Collector):
    """What client_golang's process collector serves beyond prometheus_client's: the address
    space limit, and the bytes in and out of the network namespace (IpExt InOctets and
    OutOctets of /proc/self/net/netstat), as it reads them."""

    def collect(self) -> Iterator[Metric]:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        yield GaugeMetricFamily(
            "process_virtual_memory_max_bytes",
            "Maximum amount of virtual memory available in bytes.",
            value=UNLIMITED if soft == resource.RLIM_INFINITY else float(soft),
        )
        octets = _ip_octets()
        if octets is None:  # no /proc/self/net (not Linux): as client_golang, no families
            return
        yield CounterMetricFamily(
            "process_network_receive_bytes",
            "Number of bytes received by the process over the network.",
            value=octets[0],
        )
        yield CounterMetricFamily(
            "process_network_transmit_bytes",
            "Number of bytes sent by the process over the network.",
            value=octets[1],
        )


def _ip_octets() -> tuple[float, float] | None:
    try:
        lines = NETSTAT.read_text().splitlines()
    except OSError:
        return None
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("IpExt:"):
            row = dict(zip(names.split()[1:], values.split()[1:], strict=False))
            return float(row.get("InOctets", 0)), float(row.get("OutOctets", 0))
    return None


def serve(
    registry: CollectorRegistry,
    *,
    server: str,
    responses: Mapping[tuple[str, str], int],
    tls: ServingTLS | None,
) -> ControllerFamilies:
    """Every family of this module on ``registry``: the process's, the requests to ``server``
    (the client's tally ``responses``), the metrics certificate's reads when ``tls`` comes from
    files; and the controller families, for each controller to bind. As upstream's, no family
    has ``_created`` series (prometheus_client's, for every counter and histogram: process-wide)."""
    disable_created_metrics()
    register_process(registry)
    registry.register(RestClientRequests(server, responses))
    if tls is not None and tls.files is not None:
        registry.register(CertificateReads(tls))
    return ControllerFamilies(registry)


def register_process(registry: CollectorRegistry) -> None:
    """The ``process_*`` families of this process on ``registry``."""
    ProcessCollector(registry=registry)
    registry.register(ProcessExtras())
