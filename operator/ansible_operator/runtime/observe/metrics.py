"""The operator's Prometheus metrics, and the HTTP endpoints that serve them and the probes.

Metric names and labels are upstream's (``ansible_operator_build_info``,
``ansible_operator_reconcile_result``, ``ansible_operator_reconciles``), with two deliberate
differences: the reconcile histogram measures the Ansible run itself, not its setup, and the
build info also names the ansible-core and ansible-runner versions the runs use. The metrics
endpoint serves these together with the user metrics that roles post; the probe endpoint answers
``/healthz`` and ``/readyz`` as upstream's does. A bind address of ``0`` turns an endpoint off.
With ``--metrics-secure`` the metrics endpoint speaks HTTPS (``metrics_tls``), and with
``--metrics-require-rbac`` each scrape passes the TokenReview/SubjectAccessReview filter
(kube/reviews.py) first. ``/readyz`` answers what runtime/manager/readiness.py decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ansible_operator import __version__
from ansible_operator.kube import MetricsAuth
from ansible_operator.runner import AnsibleVersions
from ansible_operator.runtime.observe.framework_metrics import GO_DEFAULT_BUCKETS
from ansible_operator.runtime.observe.metrics_tls import (
    RELOAD_INTERVAL,
    MetricsCertError,
    ServingTLS,
)

log = logging.getLogger("metrics")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class OperatorMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._build_info = Gauge(
            "ansible_operator_build_info",
            "Build information for the ansible-operator binary",
            [
                "commit",
                "version",
                "ansible_core_version",
                "ansible_runner_version",
                "ansible_core_end_of_life",  # "" while maintained, else its month: "2026-11"
            ],
            registry=self.registry,
        )
        # A gauge that only goes up, as upstream's (its type is part of the contract).
        self._results = Gauge(
            "ansible_operator_reconcile_result",
            "Gauge of reconciles and their results.",
            ["GVK", "result"],
            registry=self.registry,
        )
        self._durations = Histogram(
            "ansible_operator_reconciles",
            "How long in seconds a reconcile takes.",
            ["GVK"],
            buckets=GO_DEFAULT_BUCKETS,  # upstream's (prometheus.DefBuckets)
            registry=self.registry,
        )

        self._warm_patches_off = Gauge(
            "ansible_operator_warm_patch_off",
            "1 for each patch of the warm runner left off because it was not tested on the "
            'installed releases or failed to install (patch="*": all of them, the warm runner '
            "runs cold).",
            ["patch"],
            registry=self.registry,
        )
        self._warm_fallbacks = Counter(
            "ansible_operator_warm_fallbacks",
            "Things the warm runner's processes did the slower way, by reason: a patch that "
            "failed to install (also ansible_operator_warm_patch_off), a module that failed to "
            "preload, a run that started a new ansible-playbook for want of a fitting zygote, a "
            "kind whose zygote refused or was given up (runner/warm/notices.py).",
            ["reason"],
            registry=self.registry,
        )
        self._watch_events = Counter(
            "ansible_operator_watch_events",
            "Watch events received for a watched kind, before any shard filtering.",
            ["GVK"],
            registry=self.registry,
        )
        self._watch_skipped = Counter(
            "ansible_operator_watch_objects_skipped",
            "Watched objects not handled: nested too deep, or their handling failed (each is "
            "logged, with an Event where it has a namespace).",
            ["GVK"],
            registry=self.registry,
        )
        self._dependent_loops = Counter(
            "ansible_operator_dependent_loops",
            "CRs reported re-run over and over by changes to their own dependents "
            "(core.loops: one report per episode).",
            ["GVK"],
            registry=self.registry,
        )

    def ansible_found(self, ansible: AnsibleVersions, *, end_of_life: str = "") -> None:
        """The build information, once the start-up probe has asked the runs' Ansible;
        `end_of_life` is the month the runs' core's maintenance ended, if it has."""
        self._build_info.labels(
            commit="unknown",
            version=f"v{__version__}",
            ansible_core_version=ansible.core,
            ansible_runner_version=ansible.runner,
            ansible_core_end_of_life=end_of_life,
        ).set(1)

    def observe_run(self, gvk: str, seconds: float, succeeded: bool) -> None:
        self._durations.labels(GVK=gvk).observe(seconds)
        self._results.labels(GVK=gvk, result="succeeded" if succeeded else "failed").inc()

    def warm_patches_off(self, names: Iterable[str], *, cold: bool) -> None:
        for name in names:
            self._warm_patches_off.labels(patch=name).set(1)
        if cold:
            self._warm_patches_off.labels(patch="*").set(1)

    def warm_fallback(self, reason: str, *, patch: str = "") -> None:
        self._warm_fallbacks.labels(reason=reason).inc()
        if patch:
            self._warm_patches_off.labels(patch=patch).set(1)

    def watch_event(self, gvk: str) -> None:
        self._watch_events.labels(GVK=gvk).inc()

    def watch_object_skipped(self, gvk: str) -> None:
        self._watch_skipped.labels(GVK=gvk).inc()

    def dependent_loop(self, gvk: str) -> None:
        self._dependent_loops.labels(GVK=gvk).inc()


class ShardMetrics:
    """What one replica holds with ``--shards`` (each replica reports its own)."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.held = Gauge(
            "ansible_operator_shards_held",
            "Virtual shards this replica holds and reconciles.",
            registry=registry,
        )
        self.owned = Gauge(
            "ansible_operator_shard_owned_resources",
            "Custom resources in the shards this replica holds.",
            ["GVK"],
            registry=registry,
        )
        self.handovers = Counter(
            "ansible_operator_shard_handovers",
            "Shards this replica took (acquired), gave up after its runs ended (released), or "
            "stopped acting on because its Lease could not be renewed in time (lost).",
            ["direction"],
            registry=registry,
        )


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """``:8443`` (all interfaces), ``host:port`` or ``[v6]:port``; None for ``0`` (off)."""
    if address in ("0", ""):
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"invalid bind address {address!r}: expected [host]:port or 0")
    return (host.strip("[]") or "0.0.0.0", int(port))


def is_loopback(host: str) -> bool:
    """Whether a bind address's host reaches this machine only (127.0.0.0/8, ::1, localhost)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class Endpoints:
    """The metrics and probe HTTP servers; each runs only if its address is not ``0``."""

    def __init__(
        self,
        *,
        metrics_address: str,
        probe_address: str,
        registries: Iterable[CollectorRegistry],
        ready: Callable[[], str | None] = lambda: None,
        metrics_tls: ServingTLS | None = None,  # None: plain HTTP
        metrics_auth: MetricsAuth | None = None,  # None: anyone may scrape
        # More GET routes beside /metrics, behind its authentication (the runs API, say).
        metrics_routes: Sequence[tuple[str, Handler]] = (),
    ) -> None:
        self._metrics_at = parse_bind_address(metrics_address)
        self._probes_at = parse_bind_address(probe_address)
        self._registries = list(registries)
        self._ready = ready
        self._metrics_tls = metrics_tls
        self._metrics_auth = metrics_auth
        self._metrics_routes = list(metrics_routes)
        self._runners: list[web.AppRunner] = []
        self._reloading: asyncio.Task[None] | None = None

    async def _metrics(self, _: web.Request) -> web.Response:
        body = b"".join(generate_latest(r) for r in self._registries)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, _: web.Request) -> web.Response:
        why_not = self._ready()
        if why_not is None:
            return web.Response(text="ok")
        return web.Response(status=503, text=f"not ready: {why_not}")

    async def start(self) -> None:
        if self._metrics_at:
            auth = self._metrics_auth
            app = web.Application(middlewares=[auth.middleware] if auth else [])
            app.router.add_get("/metrics", self._metrics)
            for path, handler in self._metrics_routes:
                app.router.add_get(path, handler)
            await self._serve(app, self._metrics_at, "metrics", tls=self._metrics_tls)
            if self._metrics_tls is not None and self._metrics_tls.files is not None:
                self._reloading = asyncio.create_task(self._reload(self._metrics_tls))
        if self._probes_at:
            app = web.Application()
            for path in ("/healthz", "/healthz/ping", "/healthz/healthz"):
                app.router.add_get(path, self._healthz)
            for path in ("/readyz", "/readyz/readyz"):
                app.router.add_get(path, self._readyz)
            await self._serve(app, self._probes_at, "health probes")

    async def _serve(
        self,
        app: web.Application,
        where: tuple[str, int],
        what: str,
        *,
        tls: ServingTLS | None = None,
    ) -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, where[0], where[1], ssl_context=tls.context if tls else None)
        try:
            await site.start()
        except OSError as err:
            await runner.cleanup()
            raise EndpointError(
                f"{what}: cannot listen on {where[0]}:{where[1]}: {err.strerror}"
            ) from None
        self._runners.append(runner)
        log.info(
            f"Serving {what}", extra={"address": f"{where[0]}:{where[1]}", "secure": bool(tls)}
        )

    async def _reload(self, tls: ServingTLS) -> None:
        while True:
            await asyncio.sleep(RELOAD_INTERVAL)
            try:
                if tls.reload_if_changed():
                    log.info("Metrics certificate reloaded", extra={"source": tls.source})
            except MetricsCertError as err:
                log.error("Metrics certificate not reloaded", extra={"error": str(err)})

    async def stop(self) -> None:
        if self._reloading is not None:
            self._reloading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reloading
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()


class EndpointError(Exception):
    """An endpoint cannot be served (its port is taken); one line."""
