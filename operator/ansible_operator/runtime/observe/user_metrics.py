"""User metrics: the loopback endpoint that roles update through ``operator_sdk.util.osdk_metric``.

Upstream's contract is kept: ``POST /metrics`` with ``{name, description, counter|gauge|
histogram|summary}`` on port 5050, exactly one type per request, metrics registered lazily on
first use without labels, a change of type refused with 400, other methods refused with 405.
The metrics live in `registry`, which the operator's metrics endpoint serves. Two deliberate
differences: a request upstream would silently drop after a recovered panic (a negative counter
``add``, an invalid name, a name clash) gets a 400 that says why; and when the default port is
taken, an ephemeral one is used and published to every Ansible run as
``ANSIBLE_OPERATOR_USER_METRICS_URL``, which ``osdk_metric`` uses as its default address.
"""

from __future__ import annotations

import errno
import json
import logging
import math
import os
import re
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    SummaryMetricFamily,
    UnknownMetricFamily,
)
from prometheus_client.registry import Collector

from ansible_operator.runtime.observe.framework_metrics import GO_DEFAULT_BUCKETS

log = logging.getLogger("apiserver")

# Served by the operator's metrics endpoint together with its own metrics.
registry = CollectorRegistry(auto_describe=True)

ADDRESS_ENV = "ANSIBLE_OPERATOR_USER_METRICS_ADDRESS"  # host:port to listen on (ours)
URL_ENV = "ANSIBLE_OPERATOR_USER_METRICS_URL"  # where runs post; set once listening
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 5050

TYPES = ("counter", "gauge", "histogram", "summary")
_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_BOOL_FIELDS = {
    "counter": ("increment",),
    "gauge": ("increment", "decrement", "set_to_current_time"),
    "histogram": (),
    "summary": (),
}
_NUMBER_FIELDS = {
    "counter": ("add",),
    "gauge": ("set", "add", "subtract"),
    "histogram": ("observe",),
    "summary": ("observe",),
}


class UserMetricError(ValueError):
    """A request the endpoint refuses with 400; the message says why."""


class UserMetricsServerError(Exception):
    """The endpoint cannot listen where it was told to."""


@dataclass(frozen=True)
class MetricRequest:
    """One validated POST body: which metric, its type, and the operation fields given."""

    name: str
    description: str
    type: str
    fields: Mapping[str, Any]


def parse_request(body: Any) -> MetricRequest:
    """Validate a decoded JSON body the way upstream's decoder and checks do, but say why."""
    if not isinstance(body, dict):
        raise UserMetricError("the body must be a JSON object")
    name = body.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise UserMetricError(f"invalid metric name {name!r}: use [a-zA-Z_:][a-zA-Z0-9_:]*")
    description = body.get("description")
    if description is None:
        description = ""
    if not isinstance(description, str):
        raise UserMetricError("description must be a string")
    given = [t for t in TYPES if body.get(t) is not None]
    if len(given) != 1:
        got = ", ".join(given) if given else "none"
        raise UserMetricError(f"exactly one of {', '.join(TYPES)} must be given, got {got}")
    kind = given[0]
    spec = body[kind]
    if not isinstance(spec, dict):
        raise UserMetricError(f"{kind} must be an object")
    fields: dict[str, Any] = {}
    for key in _BOOL_FIELDS[kind]:
        value = spec.get(key)
        if value is None:
            continue
        if not isinstance(value, bool):
            raise UserMetricError(f"{kind}.{key} must be a boolean, got {_json_type(value)}")
        fields[key] = value
    for key in _NUMBER_FIELDS[kind]:
        value = spec.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise UserMetricError(f"{kind}.{key} must be a number, got {_json_type(value)}")
        fields[key] = float(value)
    return MetricRequest(name=name, description=description, type=kind, fields=fields)


def _json_type(value: Any) -> str:
    """What a refused value is, not the value: a `no_log` task's value is logged nowhere."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "NaN" if isinstance(value, float) and math.isnan(value) else "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


class UserMetric(Collector):
    """One user metric and its state; collects itself in Prometheus' data model.

    Counters keep the exact name a role gave (as upstream's Go client exposes them): a name
    ending in ``_total`` is a proper counter family; any other is exposed under that very name
    as an untyped series, since prometheus_client would otherwise append ``_total``.
    """

    def __init__(self, name: str, description: str, kind: str) -> None:
        self.name = name
        self.description = description
        self.type = kind
        self._lock = threading.Lock()
        self._value = 0.0  # counter, gauge
        self._sum = 0.0  # histogram, summary
        self._count = 0
        self._buckets = [0] * len(GO_DEFAULT_BUCKETS)  # histogram: non-cumulative counts

    def apply(self, request: MetricRequest, *, now: float | None = None) -> None:
        """Upstream's operation semantics: the first operation given wins; zero values are
        no-ops (so ``set: 0`` does nothing, as upstream)."""
        if request.type != self.type:
            raise UserMetricError(
                f"cannot change metric type of {self.name}, which is a {self.type} metric"
            )
        f = request.fields
        with self._lock:
            if self.type == "counter":
                if f.get("increment"):
                    self._value += 1
                elif f.get("add"):
                    if f["add"] < 0:
                        raise UserMetricError(f"counter {self.name}: add must not be negative")
                    self._value += f["add"]
            elif self.type == "gauge":
                # The order of upstream's Go code (`if Inc ... else if Dec ... else if Add ...`).
                if f.get("increment"):
                    self._value += 1
                elif f.get("decrement"):
                    self._value -= 1
                elif f.get("add"):
                    self._value += f["add"]
                elif f.get("subtract"):
                    self._value -= f["subtract"]
                elif f.get("set"):
                    self._value = f["set"]
                elif f.get("set_to_current_time"):
                    self._value = time.time() if now is None else now
            elif f.get("observe"):
                value = f["observe"]
                self._sum += value
                self._count += 1
                if self.type == "histogram":
                    for i, bound in enumerate(GO_DEFAULT_BUCKETS):
                        if value <= bound:
                            self._buckets[i] += 1
                            break

    def _family(self, *, with_samples: bool) -> Metric:
        doc = self.description
        if self.type == "counter":
            if self.name.endswith("_total"):
                counter = CounterMetricFamily(self.name, doc)
                if with_samples:
                    counter.add_metric([], self._value)
                return counter
            untyped = UnknownMetricFamily(self.name, doc)
            if with_samples:
                untyped.add_metric([], self._value)
            return untyped
        if self.type == "gauge":
            gauge = GaugeMetricFamily(self.name, doc)
            if with_samples:
                gauge.add_metric([], self._value)
            return gauge
        if self.type == "histogram":
            histogram = HistogramMetricFamily(self.name, doc)
            if with_samples:
                cumulative, buckets = 0, []
                for bound, count in zip(GO_DEFAULT_BUCKETS, self._buckets, strict=True):
                    cumulative += count
                    buckets.append((_bound(bound), float(cumulative)))
                buckets.append(("+Inf", float(self._count)))
                histogram.add_metric([], buckets, self._sum)
            return histogram
        summary = SummaryMetricFamily(self.name, doc)
        if with_samples:
            summary.add_metric([], self._count, self._sum)
        return summary

    def describe(self) -> Iterable[Metric]:
        return [self._family(with_samples=False)]

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            return [self._family(with_samples=True)]


def _bound(value: float) -> str:
    """A bucket's ``le`` label as Go writes it: ``0.005``, ``1``, ``10``."""
    return f"{value:g}"


class UserMetrics:
    """The user metrics of one operator, registered lazily into a registry."""

    def __init__(self, target: CollectorRegistry = registry) -> None:
        self.registry = target
        self._metrics: dict[str, UserMetric] = {}
        self._lock = threading.Lock()

    def handle(self, body: Any) -> MetricRequest:
        """Validate and apply one request body; raises UserMetricError for a 400."""
        request = parse_request(body)
        with self._lock:
            metric = self._metrics.get(request.name)
            if metric is None:
                metric = UserMetric(request.name, request.description, request.type)
                try:
                    self.registry.register(metric)
                except ValueError as err:  # a clash with a metric already served
                    raise UserMetricError(
                        f"cannot register {request.name}: {err}".rstrip(".")
                    ) from None
                self._metrics[request.name] = metric
        metric.apply(request)
        return request

    def get(self, name: str) -> UserMetric | None:
        return self._metrics.get(name)

    def clear(self) -> None:
        """Unregister every user metric (for tests and for a fresh start)."""
        with self._lock:
            for metric in self._metrics.values():
                self.registry.unregister(metric)
            self._metrics.clear()


class UserMetricsServer:
    """``POST /metrics`` on loopback, feeding a `UserMetrics`."""

    def __init__(
        self,
        metrics: UserMetrics,
        *,
        address: str | None = None,
        environ: Mapping[str, str] | None = None,  # None: os.environ
    ) -> None:
        self.metrics = metrics
        env = os.environ if environ is None else environ
        self._explicit = address if address is not None else env.get(ADDRESS_ENV)
        self._runner: web.AppRunner | None = None
        self.host = DEFAULT_HOST
        self.port = DEFAULT_PORT

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def run_env(self) -> dict[str, str]:
        """What every Ansible run gets in its environment: the URL, while listening."""
        return {URL_ENV: self.url} if self._runner is not None else {}

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/metrics", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.Response:
        if request.method != "POST":
            return web.Response(status=405, text="Method not allowed\n")
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError as err:
            log.info("Refused user metric", extra={"error": f"invalid JSON: {err}"})
            return web.Response(status=400, text=f"invalid JSON: {err}\n")
        try:
            parsed = self.metrics.handle(body)
        except UserMetricError as err:
            log.info("Refused user metric", extra={"error": str(err)})
            return web.Response(status=400, text=f"{err}\n")
        log.debug("User metric", extra={"metric": parsed.name, "type": parsed.type})
        return web.Response(status=200)

    async def start(self) -> None:
        """Listen (see the module docstring for the fallback); `run_env()` has the URL after."""
        host, port = DEFAULT_HOST, DEFAULT_PORT
        if self._explicit:
            host, port = _split_address(self._explicit)
        runner = web.AppRunner(self._app(), access_log=None)
        await runner.setup()
        try:
            site = await self._listen(runner, host, port)
        except OSError as err:
            await runner.cleanup()
            raise UserMetricsServerError(
                f"user metrics: cannot listen on {host}:{port}: {err.strerror or err}"
            ) from None
        self._runner = runner
        self.host = host
        self.port = _bound_port(site, port)
        log.info("Starting to serve metrics listener", extra={"Address": f"{host}:{self.port}"})

    async def _listen(self, runner: web.AppRunner, host: str, port: int) -> web.TCPSite:
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as err:
            if self._explicit or err.errno != errno.EADDRINUSE:
                raise
            log.info(
                "User metrics port is taken; listening on an ephemeral port instead",
                extra={"Address": f"{host}:{port}", "env": URL_ENV},
            )
            site = web.TCPSite(runner, host, 0)
            await site.start()
        return site

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


def _split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise UserMetricsServerError(
            f"user metrics: {ADDRESS_ENV}={address!r} is not host:port (e.g. 127.0.0.1:5050)"
        )
    return (host.strip("[]") or DEFAULT_HOST), int(port)


def _bound_port(site: web.TCPSite, requested: int) -> int:
    server = site._server  # aiohttp keeps the asyncio server here; the port is only known now
    sockets = getattr(server, "sockets", None) or []
    for sock in sockets:
        return int(sock.getsockname()[1])
    return requested
