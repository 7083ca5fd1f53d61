"""``ansible-operator run``: settings and watches in, the operator's runnables out.

``prepare`` reads and checks everything a user can get wrong (flags, watches.yaml, credentials,
the metrics certificate, the Lease's namespace) before anything starts, and reports each problem
in one line with exit code 1. ``Operator`` wires the parts without starting anything; its one
list of groups (``groups``) is what the manager of runnables (``runnables.py``) starts in order
and stops in the reverse order: the start-up probe of Ansible, the servers every replica serves
(user metrics, metrics and probes, the API proxy), the wait for the API server, the conversion
webhook and the API server's check, then, where the elector lets this replica act, the watches
(the sources of the watched kinds, their dependents and related kinds) and the controllers.
The elector is the leader's Lease with ``--leader-elect`` (runtime/manager/leader.py), the shards
held with ``--shards`` (runtime/manager/shards.py), or none. SIGINT and SIGTERM start a graceful
shutdown (``shutdown.py``): no new run, the running ones get ``--graceful-shutdown-timeout``,
then the rest are interrupted; the watches stop after the controllers, the servers last.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ansible_operator import __version__
from ansible_operator.core import (
    GVK,
    KindConversion,
    ShardSpace,
    Watch,
    WatchesError,
    ansible_cores,
    objects,
    reserved_vars,
)
from ansible_operator.kube import (
    ConfigError,
    Credentials,
    Discovery,
    Informer,
    KubeClient,
    MetricsAuth,
    ResourceInfo,
    Skipped,
    load_credentials,
)
from ansible_operator.project import load_watches
from ansible_operator.proxy import Proxy, ProxyStartError
from ansible_operator.runner import (
    DEFAULT_BASE_DIR,
    WARM_FALLBACK_REASONS,
    AnsibleVersions,
    ColdRunner,
    Runner,
    RunnerError,
    WarmNotice,
    WarmRunner,
    versions,
)
from ansible_operator.runs import RunHistory
from ansible_operator.runs import access as runs_access
from ansible_operator.runs import api as runs_api
from ansible_operator.runtime.config.flags import parse_run_args
from ansible_operator.runtime.config.settings import RunSettings, Serving
from ansible_operator.runtime.control.controller import Controller
from ansible_operator.runtime.control.dependents import DependentWatches
from ansible_operator.runtime.control.gate import RunGate
from ansible_operator.runtime.control.handlers import ForObject, Handler
from ansible_operator.runtime.control.reconciler import Reconciler, utc_now
from ansible_operator.runtime.control.related import RelatedWatches
from ansible_operator.runtime.control.session import RunSession
from ansible_operator.runtime.control.sources import Sources
from ansible_operator.runtime.manager.conversion_webhook import (
    ConversionWebhook,
    WebhookError,
    select_watches,
    webhook_address,
)
from ansible_operator.runtime.manager.leader import (
    ElectionConfig,
    LeaderElectionError,
    LeaderElector,
    LeadershipLost,
    LeaseLock,
    election_config,
)
from ansible_operator.runtime.manager.parts import (
    AnsibleRuns,
    ApiServerCheck,
    ApiServerWait,
    Informers,
    StartupError,
    Workers,
)
from ansible_operator.runtime.manager.readiness import Readiness
from ansible_operator.runtime.manager.runnables import (
    Closed,
    Elector,
    Group,
    Manager,
    Runnable,
    Served,
    always,
)
from ansible_operator.runtime.manager.shards import ShardedControllers, ShardKeeper
from ansible_operator.runtime.manager.shutdown import handle_signals, on_stop_signal
from ansible_operator.runtime.observe import logs, tracing
from ansible_operator.runtime.observe.framework_metrics import serve
from ansible_operator.runtime.observe.metrics import (
    EndpointError,
    Endpoints,
    OperatorMetrics,
    ShardMetrics,
    is_loopback,
    parse_bind_address,
)
from ansible_operator.runtime.observe.metrics_tls import (
    MetricsCertError,
    ServingTLS,
    serving_context,
)
from ansible_operator.runtime.observe.recorder import EventRecorder
from ansible_operator.runtime.observe.run_observers import (
    CountedRuns,
    LoggedRuns,
    Observers,
    RecordedRuns,
    TracedRuns,
)
from ansible_operator.runtime.observe.tracing import UNTRACED
from ansible_operator.runtime.observe.user_metrics import (
    UserMetrics,
    UserMetricsServer,
    UserMetricsServerError,
)

log = logging.getLogger("cmd")


def _log_level(settings: RunSettings) -> str:
    level = settings.logging.zap_log_level or ("debug" if settings.logging.zap_devel else "info")
    return "debug" if level.isdigit() else level


@dataclass(frozen=True)
class Inputs:
    """What ``ansible-operator run`` was given, read and checked before anything starts."""

    settings: RunSettings
    watches: list[Watch]  # one per kind (select_watches)
    creds: Credentials  # their TLS context loaded
    conversions: Sequence[KindConversion] = ()  # the versions the watched kinds convert between
    webhook_at: tuple[str, int] | None = None  # where the conversion webhook listens, if any
    metrics_tls: ServingTLS | None = None  # --metrics-secure's certificate
    election: ElectionConfig | None = None  # --leader-elect's or --shards' Leases
    traced: bool = False  # the OTEL_* environment asks for traces


class Operator:
    """The parts of one watches file's operator, wired; ``run`` starts them (``groups``)."""

    def __init__(
        self,
        inputs: Inputs,
        *,
        client: KubeClient | None = None,  # None: one for creds; tests pass an in-memory API
        runner: Runner | None = None,  # None: by --runner; tests pass a scripted one
        ansible: AnsibleVersions | None = None,  # None: asked at start; given with runner
    ) -> None:
        settings = inputs.settings
        self.settings = settings
        self.creds = inputs.creds
        watches, conversions = inputs.watches, list(inputs.conversions)
        self.client = client or KubeClient(inputs.creds)
        self.discovery = Discovery(self.client)
        self.metrics = OperatorMetrics()
        self.events = EventRecorder(self.client, clock=utc_now)  # on objects the watches skip
        self._reports: set[asyncio.Task[None]] = set()  # their Events, under way
        # controller-runtime's, client-go's and the process's families, as upstream serves them.
        self.controller_metrics = serve(
            self.metrics.registry,
            server=inputs.creds.server,
            responses=self.client.responses,
            tls=inputs.metrics_tls,
        )
        self.reconcilers: list[Reconciler] = []
        self.tracing = tracing.otlp(settings.environ) if inputs.traced else None
        if self.tracing is not None:
            self.tracing.count_in(self.metrics.registry)
        self._probed: ColdRunner | None = None  # the runner the start-up probe asks
        if runner is None:
            # As upstream, the path flags are the roles' and collections' paths of every run.
            kind = WarmRunner if settings.ansible.runner == "warm" else ColdRunner
            runner = self._probed = kind(environ=settings.ansible_environ())
        elif ansible is None:
            raise ValueError("a runner given without the Ansible versions it runs")
        self.runner = runner
        self._warm_reasons_said: set[str] = set()
        if isinstance(runner, WarmRunner):
            self._report_warm_patches(runner)
        self.gate = RunGate()  # every run passes it; closed and interrupted at shutdown
        self.user_metrics = UserMetrics()
        self.user_metrics_server = UserMetricsServer(self.user_metrics)
        self.readiness = Readiness()
        # The record of every run, beside the runner's artifacts (read on first use).
        self.history = RunHistory(
            DEFAULT_BASE_DIR,
            per_resource=settings.runs.run_history,
            max_bytes=settings.runs.run_history_size,
            kinds=[watch.gvk for watch in watches],
            namespaces=settings.watching.watch_namespaces,
        )
        # What every run tells: its span first (the record carries its trace id), its record.
        self.run_observers = Observers(
            [
                *([TracedRuns(self.tracing)] if self.tracing is not None else []),
                *([RecordedRuns(self.history)] if self.history.enabled else []),
                CountedRuns(self.metrics),
                LoggedRuns(settings.logging),
            ]
        )
        metrics_auth = MetricsAuth(self.client) if settings.serving.metrics_require_rbac else None
        try:
            self.endpoints = Endpoints(
                metrics_address=settings.serving.metrics_bind_address,
                probe_address=settings.serving.health_probe_bind_address,
                registries=[self.metrics.registry, self.user_metrics.registry],
                ready=self.readiness.why_not_ready,
                metrics_tls=inputs.metrics_tls,
                metrics_auth=metrics_auth,
                metrics_routes=self._runs_routes(settings.serving, metrics_auth),
            )
        except ValueError as err:
            raise StartupError(str(err)) from None
        # Every watch: an informer per kind and scope, its events to handlers.
        self.sources = Sources(
            self.client,
            self.discovery,
            namespaces=settings.watching.watch_namespaces,
            count=lambda gvk: self.metrics.watch_event(str(gvk)),
            skipped=self._skipped,
        )
        # The API proxy the runs talk through, and the watches on what they create.
        self.dependents = DependentWatches(self.sources)
        # Other kinds whose changes reconcile CRs (watches.yaml's relatedResources).
        self.related = RelatedWatches(self.sources, registry=self.metrics.registry)
        self.proxy = Proxy(
            inputs.creds,
            client=self.client,
            port=settings.proxy.proxy_port,
            inject_owner_refs=settings.proxy.inject_owner_ref,
            dependents=self.dependents,
            discovery=self.discovery,
        )
        self.shards: ShardKeeper | None = None
        if settings.election.shards:
            self.shard_metrics = ShardMetrics(self.metrics.registry)
            self.shards = ShardKeeper(
                _election(inputs),
                ShardSpace(settings.election.shards),
                self.client,
                metrics=self.shard_metrics,
            )
        self.webhook: ConversionWebhook | None = None
        if conversions and inputs.webhook_at is not None:
            self.webhook = ConversionWebhook(
                conversions,
                client=self.client,
                at=inputs.webhook_at,
                cert_dir=settings.serving.webhook_cert_dir,
                registry=self.metrics.registry,
            )
        self.controllers: list[Controller] = []
        self.object_handlers: list[ForObject] = []  # each controller's own kind's
        for watch in watches:
            controller = self._controller(watch)
            self.controllers.append(controller)
            self.object_handlers.append(ForObject(controller))
        self.sharded: ShardedControllers | None = None
        if self.shards is not None:
            keeper = self.shards
            self.sharded = ShardedControllers(
                self.object_handlers,
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
            informer for handler in self.object_handlers for informer in self._sources(handler)
        ] + self.related.sources()
        self.leader: LeaderElector | None = None
        if settings.election.leader_elect:
            config = _election(inputs)
            self.leader = LeaderElector(
                config,
                LeaseLock(self.client, config.namespace, config.name),
                abandon=self._kill_runs_now,
                registry=self.metrics.registry,
            )
        else:
            self.readiness.acting()
        if ansible is not None:
            self._ansible_found(ansible)
        self.groups = self._groups()

    def _groups(self) -> list[Group]:
        """Everything the operator runs, in the order it starts; a stop takes it backwards."""
        servers: list[Runnable] = [
            Served("user-metrics", self.user_metrics_server),
            Served("endpoints", self.endpoints),
            Served("proxy", self.proxy),
        ]
        api: list[Runnable] = [ApiServerCheck(self.client, self.readiness)]
        if self.webhook is not None:  # every replica converts, leader or not
            api.append(Served("conversion-webhook", self.webhook))
        watches: list[Runnable] = [Informers(self.informers, self.readiness)]
        if self.settings.proxy.inject_owner_ref:
            watches.insert(0, Served("dependents", self.dependents))
        grace = self.settings.ansible.graceful_shutdown_timeout
        groups = [
            # The spans of the last runs are exported before this stops, after everything else.
            Group("tracing", [Served("tracing", self.tracing)] if self.tracing else []),
            # Closed after every part that uses it has stopped.
            Group("api-connections", [Closed("api-connections", self.client.close)]),
            Group("ansible", [AnsibleRuns(self.runner, self._ansible_found, probed=self._probed)]),
            # As upstream, every replica serves these, leader or not.
            Group("servers", servers),
            Group(
                "api-server",
                [
                    ApiServerWait(
                        self.client, self.readiness, timeout=self.settings.api.startup_timeout
                    )
                ],
            ),
            Group("api-clients", api),
            Group("watches", watches, need_leader_election=True),
            Group(
                "controllers",
                [Workers(self.controllers, self.gate, grace=grace)],
                need_leader_election=True,
            ),
        ]
        return [group for group in groups if group.runnables]

    def _ansible_found(self, ansible: AnsibleVersions) -> None:
        """What the start-up probe found: refused if too old, else given to the runs."""
        versions.check_supported(ansible)
        log.info("Ansible", extra={"ansible_core": ansible.core, "ansible_runner": ansible.runner})
        if ansible.ansible_names is None:
            log.warning(
                "Spec keys that shadow Ansible's magic variables are not warned about: "
                f"{ansible.names_problem}"
            )
        for reconciler in self.reconcilers:
            reconciler.ansible_names = ansible.ansible_names or frozenset()
        core = ansible_cores.find(ansible.core_release)
        if core is not None and core.past_end_of_life(utc_now().date()):
            newest = ansible_cores.NEWEST
            log.warning(
                f"ansible-core {ansible.core} reached its end of life in {core.end_of_life_text} "
                "(ansible-core's maintenance schedule): no more fixes, security fixes included. "
                f"Run the roles on ansible-core {newest.name}: the image's build argument "
                f"ANSIBLE='{newest.package}', after checking them against "
                "docs/ansible-core-versions.md"
            )
            self.metrics.ansible_found(ansible, end_of_life=core.end_of_life_month)
        else:
            self.metrics.ansible_found(ansible)

    def _runs_routes(
        self, serving: Serving, metrics_auth: MetricsAuth | None
    ) -> list[runs_api.Route]:
        """The runs API beside /metrics, unless anyone who reaches that port could read it: a
        run's output may show task results, so on an address other than loopback the records
        are served only behind --metrics-require-rbac (said once, here), where a user reads the
        records of the CRs they may read (runs_access)."""
        at = parse_bind_address(serving.metrics_bind_address)
        if at is None:
            return []
        if not serving.metrics_require_rbac and not is_loopback(at[0]):
            why = (
                f"Run records are not served on {serving.metrics_bind_address}: it is not a "
                "loopback address and --metrics-require-rbac is off, so anyone who reaches it "
                "could read them; add --metrics-require-rbac, or bind the metrics to 127.0.0.1"
            )
            log.warning(why)
            return [("/runs{rest:.*}", runs_api.not_served(why))]
        if metrics_auth is not None:
            runs_access.scoped(metrics_auth, self.discovery)
        return runs_api.routes(self.history)

    def _report_warm_patches(self, runner: WarmRunner) -> None:
        """Say, in one line and a metric, which warm patches stay off and whether runs are cold;
        and have each thing the warm runner's processes do the slower way reported."""
        runner.on_notice = self._warm_notice
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

    def _warm_notice(self, notice: WarmNotice) -> None:
        """Counted each time, said the first time for its reason (runner/warm/notices.py)."""
        self.metrics.warm_fallback(notice.reason, patch=notice.patch)
        if notice.reason not in self._warm_reasons_said:
            self._warm_reasons_said.add(notice.reason)
            log.warning(
                f"Warm runner: {WARM_FALLBACK_REASONS[notice.reason]} ({notice.detail}); said once "
                "for this reason, counted each time in ansible_operator_warm_fallbacks_total"
            )

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
            observers=self.run_observers,
            extra_env=self.user_metrics_server.run_env,
        )
        reconciler = Reconciler(
            watch,
            client=self.client,
            session=session,
            resource=resource,
            reconcile_period=self.settings.reconcile.reconcile_period,
            gate=self.gate,
            metrics=self.metrics,
            kstatus_conditions=self.settings.reconcile.kstatus_conditions,
            tracing=self.tracing or UNTRACED,
        )
        self.reconcilers.append(reconciler)
        controller = Controller(
            watch,
            reconciler,
            workers=self.settings.max_concurrent_reconciles_for(gvk),
            owns=self.shards.owns if self.shards is not None else None,
            resync_rate=self.settings.watching.resync_rate,
            metrics=self.controller_metrics,
        )
        if self.shards is not None:
            self.shard_metrics.owned.labels(GVK=str(gvk)).set_function(controller.owned_count)
        self.dependents.add_owner(watch, controller.enqueue)
        self.related.add_owner(watch, controller.enqueue)
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

    def _sources(self, handler: ForObject) -> list[Informer]:
        """The sources of a controller's kind, one per watched namespace (or one for all);
        their events feed the related watches' index of the kind's CRs first."""
        gvk = handler.watch.gvk
        index = self.related.index_of(handler.watch)
        handlers: list[Handler] = [handler] if index is None else [index, handler]
        sharded = self.sharded
        timeout = 300
        if self.shards is not None:
            # The shards' selector reaches the API server at each watch request: a change of
            # the shards held takes effect within this (the client-side filter, at once).
            timeout = int(self.shards.timings.lease_duration)
        return [
            self.sources.kind(
                gvk,
                handlers,
                namespace=namespace,
                params=(lambda: sharded.params(gvk)) if sharded is not None else None,
                server_timeout=timeout,
            )
            for namespace in self.sources.scopes()
        ]

    def _skipped(self, gvk: GVK) -> Skipped:
        """What reports an object of `gvk` the watches skip (the informer logs it): a metric,
        and a Warning Event on it where it has a namespace."""

        def report(obj: dict[str, Any], why: str) -> None:
            self.metrics.watch_object_skipped(str(gvk))
            if objects.key(obj)[0]:
                task = asyncio.create_task(self.events.skipped(obj, why))
                self._reports.add(task)
                task.add_done_callback(self._reports.discard)

        return report

    def _kill_runs_now(self) -> None:
        """The Lease is lost: runs cancelled from now on get no grace before SIGKILL (other
        runners stop theirs on cancellation, as the Runner protocol requires)."""
        if isinstance(self.runner, ColdRunner):
            self.runner.kill_grace = 0.0

    async def run(self, stop: asyncio.Event) -> None:
        namespaces = self.settings.watching.watch_namespaces
        if namespaces:
            log.info("Watching namespaces", extra={"namespaces": list(namespaces)})
        else:
            log.info("Watching all namespaces")
        await Manager(self.groups, elector=self._elector(), on_elected=self.readiness.acting).run(
            stop
        )

    def _elector(self) -> Elector:
        """What decides whether this replica runs the watches and controllers: the leader's
        Lease, the shards it holds, or nothing (it always does)."""
        if self.leader is not None:
            return self.leader.lead
        if self.shards is not None and self.sharded is not None:
            keeper, hooks = self.shards, self.sharded
            return lambda stop, act: keeper.keep(hooks, act)
        return always


def prepare(argv: Sequence[str]) -> Inputs:
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
    try:  # one watch per kind; the versions it serves beside its own, converted here
        watches, conversions = select_watches(watches)
        webhook_at = webhook_address(settings.serving.webhook_bind_address, conversions)
    except WebhookError as err:
        raise StartupError(str(err)) from None
    creds = checked_credentials(settings.api.kubeconfig)
    election = None
    if settings.election.leader_elect or settings.election.shards:
        flag = "--shards" if settings.election.shards else "--leader-elect"
        try:
            election = election_config(settings, flag=flag)
        except LeaderElectionError as err:
            raise StartupError(str(err)) from None
    try:
        traced = tracing.wanted(settings.environ)
    except tracing.TracingError as err:
        raise StartupError(str(err)) from None
    metrics_tls = None
    if settings.serving.metrics_secure:
        try:
            metrics_tls = serving_context(settings.serving.metrics_cert_dir)
        except MetricsCertError as err:
            raise StartupError(str(err)) from None
    # After the checks: a refused start is its one line, with nothing before it.
    log.info("Version", extra={"version": __version__, "python": sys.version.split()[0]})
    if metrics_tls is not None:
        log.info("Metrics certificate", extra={"source": metrics_tls.source})
    return Inputs(
        settings,
        watches,
        creds,
        conversions,
        webhook_at,
        metrics_tls=metrics_tls,
        election=election,
        traced=traced,
    )


def checked_credentials(kubeconfig: str) -> Credentials:
    """The API server's credentials with their TLS context loaded, once: no credentials, or a CA
    or client certificate that is not one, is refused here (StartupError, one line)."""
    try:
        creds = load_credentials(kubeconfig=kubeconfig)
        _ = creds.tls
    except ConfigError as err:
        raise StartupError(str(err)) from None
    except (ssl.SSLError, OSError) as err:
        raise StartupError(
            f"the API server's CA or client certificate cannot be loaded: {err}"
        ) from None
    return creds


def _election(inputs: Inputs) -> ElectionConfig:
    if inputs.election is None:
        raise ValueError("--leader-elect or --shards without their Lease configuration")
    return inputs.election


def main(argv: Sequence[str]) -> int:
    try:
        operator = Operator(prepare(argv))
        return asyncio.run(_serve(operator))
    except (
        StartupError,
        RunnerError,
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
