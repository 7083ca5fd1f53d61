"""``ansible-operator run``: settings and watches in, controllers and their informers running.

Start-up validates everything a user can get wrong (flags, watches.yaml, credentials) before
anything starts, and reports each problem in one line with exit code 1. Then one informer per
watch and watched namespace (``kube/informer.py``: list, watch, resume, relist) feeds its
controller, and the operator is ready once every informer has listed its kind once.
SIGINT and SIGTERM start a graceful shutdown (``shutdown.py``): no new run, the running ones
get ``--graceful-shutdown-timeout``, then the rest are interrupted; the watches stop last.
With ``--leader-elect`` only the replica holding the Lease watches and reconciles
(runtime/leader.py); with ``--shards`` every replica does, each for the CRs of the shards it
holds (runtime/shards.py); every replica serves the probes, metrics and proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Sequence

from ansible_operator import __version__
from ansible_operator.core import Backoff, ShardSpace, Watch, WatchesError, reserved_vars
from ansible_operator.gocompat import format_go_duration
from ansible_operator.kube import (
    ApiError,
    ConfigError,
    Credentials,
    Discovery,
    Informer,
    KubeClient,
    ResourceInfo,
    Unreachable,
    UntrustedServer,
    load_credentials,
)
from ansible_operator.proxy import Proxy, ProxyStartError
from ansible_operator.runner import (
    AnsibleVersions,
    ColdRunner,
    Runner,
    RunnerError,
    WarmRunner,
    versions,
)
from ansible_operator.runtime import logs
from ansible_operator.runtime.controller import Controller
from ansible_operator.runtime.conversion_webhook import (
    ConversionWebhook,
    WebhookError,
    select_watches,
)
from ansible_operator.runtime.dependents import DependentWatches
from ansible_operator.runtime.flags import RunSettings, parse_run_args
from ansible_operator.runtime.leader import (
    LeaderElectionError,
    LeaderElector,
    LeadershipLost,
    LeaseLock,
    election_config,
)
from ansible_operator.runtime.metrics import (
    EndpointError,
    Endpoints,
    OperatorMetrics,
    ShardMetrics,
)
from ansible_operator.runtime.metrics_auth import MetricsAuth
from ansible_operator.runtime.metrics_tls import MetricsCertError, ServingTLS, serving_context
from ansible_operator.runtime.readiness import API_CHECK_INTERVAL, Readiness
from ansible_operator.runtime.reconciler import Reconciler
from ansible_operator.runtime.session import RunSession
from ansible_operator.runtime.shards import ShardedControllers, ShardKeeper
from ansible_operator.runtime.shutdown import RunGate, drain, handle_signals, on_stop_signal
from ansible_operator.runtime.user_metrics import (
    UserMetrics,
    UserMetricsServer,
    UserMetricsServerError,
)
from ansible_operator.watchfile import load_watches

log = logging.getLogger("cmd")


class StartupError(Exception):
    """Something the user must fix before the operator can start; one line."""


def _log_level(settings: RunSettings) -> str:
    level = settings.logging.zap_log_level or ("debug" if settings.logging.zap_devel else "info")
    return "debug" if level.isdigit() else level


class Operator:
    """The controllers of one watches file, and the informers that feed them."""

    def __init__(
        self,
        settings: RunSettings,
        watches: list[Watch],
        creds: Credentials,
        *,
        client: KubeClient | None = None,  # None: one for creds; tests pass an in-memory API
        runner: Runner | None = None,  # None: by --runner; tests pass a scripted one
        ansible: AnsibleVersions | None = None,  # None: asked of the runner; given with runner
    ) -> None:
        self.settings = settings
        self.creds = creds
        try:  # one watch per kind; the versions it serves beside its own, converted here
            watches, conversions = select_watches(watches)
        except WebhookError as err:
            raise StartupError(str(err)) from None
        self.client = client or KubeClient(creds)
        self.discovery = Discovery(self.client)
        if runner is None:
            # As upstream, the path flags are the roles' and collections' paths of every run.
            kind = WarmRunner if settings.ansible.runner == "warm" else ColdRunner
            chosen = kind(environ=settings.ansible_environ())
            if isinstance(chosen, WarmRunner):
                # Its imports overlap the probe below and the operator's start; a refused start
                # ends this process, and the server with it (end of file on its stdin).
                chosen.start()
            # The Ansible the runs will use, asked once: too old an ansible-core, or one without
            # kubernetes.core, is refused here.
            ansible = versions.probe_checked(chosen.executable, chosen.environ)
            if isinstance(chosen, WarmRunner):
                chosen.check_installation(ansible)
            runner = chosen
        elif ansible is None:
            raise ValueError("a runner given without the Ansible versions it runs")
        versions.check_supported(ansible)
        log.info("Ansible", extra={"ansible_core": ansible.core, "ansible_runner": ansible.runner})
        if ansible.ansible_names is None:
            log.warning(
                "Spec keys that shadow Ansible's magic variables are not warned about: "
                f"{ansible.names_problem}"
            )
        self.ansible_names = ansible.ansible_names or frozenset()
        self.runner = runner
        self.metrics = OperatorMetrics(ansible)
        if isinstance(runner, WarmRunner):
            self._report_warm_patches(runner)
        self.gate = RunGate()  # every run passes it; closed and interrupted at shutdown
        self.user_metrics = UserMetrics()
        self.user_metrics_server = UserMetricsServer(self.user_metrics)
        self.readiness = Readiness()
        if not settings.election.leader_elect:
            self.readiness.acting()
        try:
            self.endpoints = Endpoints(
                metrics_address=settings.serving.metrics_bind_address,
                probe_address=settings.serving.health_probe_bind_address,
                registries=[self.metrics.registry, self.user_metrics.registry],
                ready=self.readiness.why_not_ready,
                metrics_tls=self._metrics_tls(),
                metrics_auth=(
                    MetricsAuth(self.client) if settings.serving.metrics_require_rbac else None
                ),
            )
        except ValueError as err:
            raise StartupError(str(err)) from None
        # The API proxy the runs talk through, and the watches on what they create.
        self.dependents = DependentWatches(
            self.client,
            watch_namespaces=settings.watching.watch_namespaces,
            discovery=self.discovery,
            count=lambda gvk: self.metrics.watch_event(str(gvk)),
        )
        self.proxy = Proxy(
            creds,
            client=self.client,
            port=settings.proxy.proxy_port,
            inject_owner_refs=settings.proxy.inject_owner_ref,
            dependents=self.dependents,
            discovery=self.discovery,
        )
        self.shards: ShardKeeper | None = None
        if settings.election.shards:
            try:
                config = election_config(settings, flag="--shards")
            except LeaderElectionError as err:
                raise StartupError(str(err)) from None
            self.shard_metrics = ShardMetrics(self.metrics.registry)
            self.shards = ShardKeeper(
                config,
                ShardSpace(settings.election.shards),
                self.client,
                metrics=self.shard_metrics,
            )
        self.webhook: ConversionWebhook | None = None
        if conversions:
            try:
                self.webhook = ConversionWebhook(
                    conversions,
                    client=self.client,
                    bind_address=settings.serving.webhook_bind_address,
                    cert_dir=settings.serving.webhook_cert_dir,
                    registry=self.metrics.registry,
                )
            except WebhookError as err:
                raise StartupError(str(err)) from None
        self.controllers: list[Controller] = []
        for watch in watches:
            self.controllers.append(self._controller(watch))
        self.sharded: ShardedControllers | None = None
        if self.shards is not None:
            keeper = self.shards
            self.sharded = ShardedControllers(
                self.controllers,
                space=keeper.space,
                client=self.client,
                discovery=self.discovery,
                gate=self.gate,
                namespaces=settings.watching.watch_namespaces,
                grace=settings.ansible.graceful_shutdown_timeout,
                kill_now=self._kill_runs_now,
                acting=lambda: keeper.acting,
            )
        self.informers = [
            informer for controller in self.controllers for informer in self._informers(controller)
        ]
        self.leader: LeaderElector | None = None
        if settings.election.leader_elect:
            try:
                config = election_config(settings)
            except LeaderElectionError as err:
                raise StartupError(str(err)) from None
            self.leader = LeaderElector(
                config,
                LeaseLock(self.client, config.namespace, config.name),
                abandon=self._kill_runs_now,
                registry=self.metrics.registry,
            )

    def _report_warm_patches(self, runner: WarmRunner) -> None:
        """Say, in one line and a metric, which warm patches stay off and whether runs are cold."""
        self.metrics.warm_patches_off(runner.patches_off, cold=runner.cold)
        if runner.patches_off:
            off = "; ".join(f"{name} ({why})" for name, why in runner.patches_off.items())
            effect = (
                "the warm runner runs cold (slower, as --runner=cold)"
                if runner.cold
                else "warm runs work without them, slower"
            )
            log.warning(
                f"Warm runner patches off, untested on the installed releases: {off}; {effect}"
            )

    def _metrics_tls(self) -> ServingTLS | None:
        if not self.settings.serving.metrics_secure:
            return None
        try:
            tls = serving_context(self.settings.serving.metrics_cert_dir)
        except MetricsCertError as err:
            raise StartupError(str(err)) from None
        log.info("Metrics certificate", extra={"source": tls.source})
        return tls

    def _controller(self, watch: Watch) -> Controller:
        gvk = watch.gvk

        async def resource() -> ResourceInfo:
            # Discovery (cached), not the informer's first event: a dependent may ask for a
            # reconcile before the kind is listed.
            return await self.discovery.resource(gvk.api_version, gvk.kind)

        session = RunSession(
            watch,
            runner=self.runner,
            proxy=self.proxy,
            settings=self.settings,
            metrics=self.metrics,
            extra_env=self.user_metrics_server.run_env,
        )
        reconciler = Reconciler(
            watch,
            client=self.client,
            session=session,
            resource=resource,
            reconcile_period=self.settings.reconcile.reconcile_period,
            gate=self.gate,
            ansible_names=self.ansible_names,
        )
        controller = Controller(
            watch,
            reconciler,
            workers=self.settings.max_concurrent_reconciles_for(gvk),
            owns=self.shards.owns if self.shards is not None else None,
            resync_rate=self.settings.watching.resync_rate,
        )
        if self.shards is not None:
            self.shard_metrics.owned.labels(GVK=str(gvk)).set_function(controller.owned_count)
        self.dependents.add_owner(watch, controller.enqueue)
        for message in self.settings.env_messages_for(gvk):
            log.info(message, extra={"gvk": str(gvk)})
        if watch.allow_reserved_vars:
            allowed = ", ".join(watch.allow_reserved_vars)
            log.warning(
                f"CRs of this kind may set the Ansible variables {allowed} "
                f"({reserved_vars.WATCH_KEY} in the watches file)",
                extra={"gvk": str(gvk)},
            )

        log.info(
            "Watching resource",
            extra={"gvk": str(gvk), "workers": controller.workers, "ansible": watch.ansible_path},
        )
        return controller

    def _informers(self, controller: Controller) -> list[Informer]:
        """The informers of a controller's kind, one per watched namespace (or one for all)."""
        gvk = controller.watch.gvk
        sharded = self.sharded
        timeout = 300
        if self.shards is not None:
            # The shards' selector reaches the API server at each watch request: a change of
            # the shards held takes effect within this (the client-side filter, at once).
            timeout = int(self.shards.timings.lease_duration)
        namespaces: list[str | None] = list(self.settings.watching.watch_namespaces) or [None]
        return [
            Informer(
                self.client,
                self.discovery,
                gvk,
                namespace=namespace,
                handler=controller.handle_event,
                count=lambda: self.metrics.watch_event(str(gvk)),
                params=(lambda: sharded.params(gvk)) if sharded is not None else None,
                server_timeout=timeout,
            )
            for namespace in namespaces
        ]

    async def run(self, stop: asyncio.Event) -> None:
        namespaces = self.settings.watching.watch_namespaces
        if namespaces:
            log.info("Watching namespaces", extra={"namespaces": list(namespaces)})
        else:
            log.info("Watching all namespaces")
        async with contextlib.AsyncExitStack() as servers:
            # As upstream, every replica serves these, leader or not.
            for server in (self.user_metrics_server, self.endpoints, self.proxy):
                await server.start()
                servers.push_async_callback(server.stop)
            servers.push_async_callback(self.client.close)
            await self._wait_for_api_server(stop)
            if stop.is_set():  # stopped while waiting: nothing more to start
                return
            checking = asyncio.create_task(self._check_api_server(stop))
            servers.push_async_callback(_cancel, checking)
            if self.webhook is not None:  # every replica converts, leader or not
                await self.webhook.start()
                servers.push_async_callback(self.webhook.stop)
            if self.leader is not None:
                await self.leader.lead(stop, lambda: self._act(stop))
            elif self.shards is not None and self.sharded is not None:
                await self.shards.keep(self.sharded, lambda: self._act(stop))
            else:
                await self._act(stop)

    async def _act(self, stop: asyncio.Event) -> None:
        """What only the leader does: dependent watches, controllers and their informers."""
        self.readiness.acting()
        async with contextlib.AsyncExitStack() as watches:
            if self.settings.proxy.inject_owner_ref:
                await self.dependents.start()
                watches.push_async_callback(self.dependents.stop)
            await self._run_controllers(stop)

    def _kill_runs_now(self) -> None:
        """The Lease is lost: runs cancelled from now on get no grace before SIGKILL (other
        runners stop theirs on cancellation, as the Runner protocol requires)."""
        if isinstance(self.runner, ColdRunner):
            self.runner.kill_grace = 0.0

    async def _run_controllers(self, stop: asyncio.Event) -> None:
        """The workers and the informers, until a stop (then a graceful drain) or a crash; the
        informers stop after the drain."""
        workers = [asyncio.create_task(c.run()) for c in self.controllers]
        informers = [asyncio.create_task(i.run()) for i in self.informers]
        stopped = asyncio.create_task(stop.wait())
        tasks = [stopped, *informers, *workers]
        # Not among the tasks waited for: its end is no reason to stop.
        confirming = asyncio.create_task(self._confirm_watches())
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()  # a crashed part ends the operator, loudly
            timeout = self.settings.ansible.graceful_shutdown_timeout
            await drain(self.controllers, self.gate, timeout=timeout)
        finally:
            stop.set()
            await _cancel(confirming)
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _wait_for_api_server(self, stop: asyncio.Event) -> None:
        """Start only once the API server answers; an outage at start is waited out, one warning
        per try, for --startup-timeout when it is set (then the start fails)."""
        backoff = Backoff(base=1.0, cap=30.0)
        limit = self.settings.api.startup_timeout
        loop = asyncio.get_running_loop()
        deadline = None if limit is None else loop.time() + limit
        while not stop.is_set():
            delay = backoff.next_delay()
            if deadline is not None:
                delay = max(0.0, min(delay, deadline - loop.time()))
            try:
                await self.client.get("/version")
                self.readiness.api_answered()
                return
            except UntrustedServer as err:  # a wrong CA does not heal by waiting
                raise StartupError(str(err)) from err
            except (ApiError, Unreachable) as err:
                if isinstance(err, ApiError) and err.status == 401:  # nor do rejected credentials
                    raise StartupError(f"the API server rejected the credentials: {err}") from err
                why = str(err).removeprefix(f"GET {self.creds.server}/version: ")
                if deadline is not None and loop.time() >= deadline:
                    raise StartupError(
                        f"the API server {self.creds.server} did not answer within "
                        f"--startup-timeout={format_go_duration(limit or 0)}: {why}"
                    ) from None
                log.warning(
                    "API server not reachable, waiting",
                    extra={"url": self.creds.server, "reason": why, "retry_in": round(delay, 3)},
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)

    async def _check_api_server(self, stop: asyncio.Event) -> None:
        """Tell readiness, every few seconds, whether the API server still answers."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), API_CHECK_INTERVAL)
                return
            try:
                await asyncio.wait_for(self.client.get("/version"), API_CHECK_INTERVAL)
                self.readiness.api_answered()
            except (TimeoutError, ApiError, Unreachable, UntrustedServer) as err:
                self.readiness.api_failed()
                log.debug("API server check failed", extra={"error": str(err) or "timeout"})

    async def _confirm_watches(self) -> None:
        """Readiness once every informer has listed its kind where it watches it (a kind that
        is not served, or that these credentials may not list, keeps the operator unready)."""
        await asyncio.gather(*(informer.synced.wait() for informer in self.informers))
        self.readiness.watches_established()
        log.info("Watches established")


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def prepare(argv: Sequence[str]) -> tuple[RunSettings, list[Watch], Credentials]:
    """Everything that can fail because of the user's input, checked before anything starts."""
    settings = parse_run_args(argv)
    logs.configure(
        encoder=settings.logging.zap_encoder
        or ("console" if settings.logging.zap_devel else "json"),
        level=_log_level(settings),
        # zap's defaults: stack traces from warn in development mode, from error otherwise.
        stacktrace_level=settings.logging.zap_stacktrace_level
        or ("warn" if settings.logging.zap_devel else "error"),
        time_encoding=settings.logging.zap_time_encoding or logs.DEFAULT_TIME_ENCODING,
    )
    for warning in settings.warnings:
        log.info(warning)
    try:
        watches = load_watches(
            settings.watching.watches_file, environ=settings.ansible_environ(), warn=log.warning
        )
    except WatchesError as err:
        raise StartupError(f"Failed to load watches: {err}") from None
    try:
        creds = load_credentials(kubeconfig=settings.api.kubeconfig)
    except ConfigError as err:
        raise StartupError(str(err)) from None
    # After the checks: a refused start is its one line, with nothing before it.
    log.info("Version", extra={"version": __version__, "python": sys.version.split()[0]})
    return settings, watches, creds


def main(argv: Sequence[str]) -> int:
    try:
        settings, watches, creds = prepare(argv)
        operator = Operator(settings, watches, creds)
    except (StartupError, RunnerError) as err:
        print(f"ansible-operator run: {err}", file=sys.stderr)
        return 1
    try:
        return asyncio.run(_serve(operator))
    except (
        StartupError,
        UserMetricsServerError,
        ProxyStartError,
        EndpointError,
        LeadershipLost,
        WebhookError,
    ) as err:
        print(f"ansible-operator run: {err}", file=sys.stderr)
        return 1


async def _serve(operator: Operator) -> int:
    stop = asyncio.Event()
    handle_signals(on_stop_signal(stop, operator.gate, operator.controllers))
    await operator.run(stop)
    log.info("Stopped")
    return 0
