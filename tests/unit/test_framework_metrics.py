"""controller-runtime's, client-go's and operator-lib's families move as upstream's do: the
controller counts reconciles by outcome, its queue counts adds and retries and times waits and
work, CRs carry their creation time, and the client's requests are counted by code."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ansible_operator.core.watches import GVK, Watch
from ansible_operator.devcluster.processes import free_ports
from ansible_operator.kube import Credentials, KubeClient, Unreachable
from ansible_operator.runtime.control.controller import Controller
from ansible_operator.runtime.control.handlers import ForObject
from ansible_operator.runtime.control.reconcile import ReconcileError, Result, TerminalError
from ansible_operator.runtime.control.workqueue import WorkQueue
from ansible_operator.runtime.observe.framework_metrics import (
    GO_DEFAULT_BUCKETS,
    CertificateReads,
    ControllerFamilies,
    RestClientRequests,
    controller_name,
    register_process,
    serve,
)
from ansible_operator.runtime.observe.metrics import OperatorMetrics
from ansible_operator.runtime.observe.metrics_tls import (
    MetricsCertError,
    ServingTLS,
    self_signed_pair,
    serving_context,
)

WATCH = Watch(gvk=GVK("test.example.com", "v1alpha1", "Thing"), role="/roles/thing")
NAME = "thing-v1alpha1-controller"
QUEUE = {"name": NAME, "controller": NAME}


def value(registry: CollectorRegistry, family: str, **labels: str) -> float | None:
    return registry.get_sample_value(family, labels)


def test_the_controller_is_named_as_upstream_names_it():
    assert controller_name(WATCH.gvk) == NAME
    assert controller_name(GVK("", "V1", "ConfigMap")) == "configmap-v1-controller"


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_queue_counts_adds_once_per_wait_and_times_the_wait_and_the_work():
    registry = CollectorRegistry()
    clock = FakeClock()
    families = ControllerFamilies(registry)
    queue: WorkQueue[str] = WorkQueue(clock=clock, metrics=families.bind(NAME, 1).queue)

    async def scenario():
        queue.add("a")
        queue.add("a")  # already waiting: not an add
        queue.add_resync("b")
        assert value(registry, "workqueue_adds_total", **QUEUE) == 2
        assert value(registry, "workqueue_depth", priority="", **QUEUE) == 2
        clock.now += 3
        key = await queue.get()
        assert key == "a"
        assert value(registry, "workqueue_depth", priority="", **QUEUE) == 1
        queue.add("a")  # an event while it runs: counted now, queued once it is done
        assert value(registry, "workqueue_adds_total", **QUEUE) == 3
        clock.now += 5
        assert value(registry, "workqueue_unfinished_work_seconds", **QUEUE) == 5
        assert value(registry, "workqueue_longest_running_processor_seconds", **QUEUE) == 5
        queue.done("a")  # the dirty key goes back in the queue, not a new add
        assert value(registry, "workqueue_adds_total", **QUEUE) == 3
        assert value(registry, "workqueue_depth", priority="", **QUEUE) == 2
        assert value(registry, "workqueue_unfinished_work_seconds", **QUEUE) == 0

    asyncio.run(scenario())
    assert value(registry, "workqueue_queue_duration_seconds_count", **QUEUE) == 1
    assert value(registry, "workqueue_queue_duration_seconds_sum", **QUEUE) == 3
    assert value(registry, "workqueue_work_duration_seconds_count", **QUEUE) == 1
    assert value(registry, "workqueue_work_duration_seconds_sum", **QUEUE) == 5
    assert value(registry, "workqueue_retries_total", **QUEUE) == 0


def test_every_schedule_is_a_retry_and_its_firing_an_add():
    registry = CollectorRegistry()
    queue: WorkQueue[str] = WorkQueue(metrics=ControllerFamilies(registry).bind(NAME, 1).queue)

    async def scenario():
        queue.schedule("a", 0.01)
        queue.schedule("a", 0.01)  # replaces the timer, and is a retry of its own
        assert value(registry, "workqueue_adds_total", **QUEUE) == 0
        assert await asyncio.wait_for(queue.get(), 5) == "a"

    asyncio.run(scenario())
    assert value(registry, "workqueue_retries_total", **QUEUE) == 2
    assert value(registry, "workqueue_adds_total", **QUEUE) == 1


def run_controller(
    controller: Controller, keys: list[tuple[str, str]], ended: Callable[[], bool]
) -> None:
    """Run the controller's workers until ``ended()``."""

    async def scenario():
        worker = asyncio.create_task(controller.run())
        for key in keys:
            controller.queue.add(key)
        while not ended():
            await asyncio.sleep(0.005)
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)

    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_each_reconcile_is_counted_by_outcome_and_timed():
    outcomes = {
        "ok": Result(requeue_after=3600),
        "done": Result(),
        "failed": ReconcileError("task failed"),
        "bad": TerminalError("bad annotation"),
        "bug": RuntimeError("a bug"),
    }
    busy: list[float | None] = []
    registry = CollectorRegistry()

    async def reconcile(request):
        busy.append(value(registry, "controller_runtime_active_workers", controller=NAME))
        outcome = outcomes[request.key[1]]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    families = ControllerFamilies(registry)
    controller = Controller(WATCH, reconcile, workers=2, metrics=families)
    assert value(registry, "controller_runtime_max_concurrent_reconciles", controller=NAME) == 2
    for result in ("success", "error", "requeue_after"):  # there from the start, at 0
        assert (
            value(registry, "controller_runtime_reconcile_total", controller=NAME, result=result)
            == 0
        )
    timed = "controller_runtime_reconcile_time_seconds_count"
    run_controller(
        controller,
        [("ns", name) for name in outcomes],
        ended=lambda: value(registry, timed, controller=NAME) == 5,
    )

    def total(result: str) -> float | None:
        return value(registry, "controller_runtime_reconcile_total", controller=NAME, result=result)

    assert (total("success"), total("requeue_after"), total("error")) == (1, 1, 3)
    assert value(registry, "controller_runtime_reconcile_errors_total", controller=NAME) == 3
    assert (
        value(registry, "controller_runtime_terminal_reconcile_errors_total", controller=NAME) == 1
    )
    assert value(registry, "controller_runtime_reconcile_panics_total", controller=NAME) == 1
    assert value(registry, "controller_runtime_reconcile_time_seconds_count", controller=NAME) == 5
    assert busy and all(n is not None and 1 <= n <= 2 for n in busy)
    assert value(registry, "controller_runtime_active_workers", controller=NAME) == 0
    # The requeue_after and the two retried failures are retries; the terminal error is not.
    assert value(registry, "workqueue_retries_total", **QUEUE) == 3


def cr(name: str, created: str = "2026-11-26T21:28:41Z") -> dict:
    meta = {"name": name, "namespace": "ns", "generation": 1, "creationTimestamp": created}
    return {"apiVersion": "test.example.com/v1alpha1", "kind": "Thing", "metadata": meta}


def test_a_cr_carries_its_creation_time_until_it_is_deleted():
    async def reconcile(key):
        return Result()

    registry = CollectorRegistry()
    controller = Controller(WATCH, reconcile, workers=1, metrics=ControllerFamilies(registry))
    events = ForObject(controller)
    labels = {
        "name": "a",
        "namespace": "ns",
        "group": "test.example.com",
        "version": "v1alpha1",
        "kind": "Thing",
    }
    events("ADDED", cr("a"))
    assert value(registry, "resource_created_at_seconds", **labels) == 1795728521
    events("DELETED", cr("a"))
    assert value(registry, "resource_created_at_seconds", **labels) is None


def test_a_cr_of_a_shard_not_held_has_no_creation_time_here():
    async def reconcile(key):
        return Result()

    registry = CollectorRegistry()
    controller = Controller(
        WATCH,
        reconcile,
        workers=1,
        owns=lambda uid: uid == "mine",
        metrics=ControllerFamilies(registry),
    )
    events = ForObject(controller)
    theirs = cr("b")
    theirs["metadata"]["uid"] = "theirs"
    events("ADDED", theirs)
    assert 'name="b"' not in generate_latest(registry).decode()


def test_requests_are_counted_by_method_code_and_host():
    async def scenario():
        app = web.Application()

        async def ok(_: web.Request) -> web.Response:
            return web.json_response({})

        async def missing(_: web.Request) -> web.Response:
            return web.json_response({}, status=404)

        app.router.add_get("/ok", ok)
        app.router.add_get("/missing", missing)
        runner = web.AppRunner(app)
        await runner.setup()
        (port,) = free_ports(1)
        await web.TCPSite(runner, "127.0.0.1", port).start()
        client = KubeClient(Credentials(server=f"http://127.0.0.1:{port}"))
        try:
            await client.get("/ok")
            await client.get("/ok")
            with pytest.raises(Exception, match="404"):
                await client.get("/missing")
        finally:
            await runner.cleanup()
        with pytest.raises(Unreachable):
            await client.request("PUT", "/ok", body={})
        await client.close()
        return client

    client = asyncio.run(scenario())
    registry = CollectorRegistry()
    registry.register(RestClientRequests(client.creds.server, client.responses))
    host = client.creds.server.removeprefix("http://")

    def count(code: str, method: str) -> float | None:
        return value(registry, "rest_client_requests_total", code=code, method=method, host=host)

    assert (count("200", "GET"), count("404", "GET"), count("<error>", "PUT")) == (2, 1, 1)


def test_the_process_families_are_client_golangs():
    registry = CollectorRegistry()
    register_process(registry)
    families = {
        f.name: f.type for f in text_string_to_metric_families(generate_latest(registry).decode())
    }
    for name in ("process_cpu_seconds", "process_network_receive_bytes"):
        assert families[name] == "counter"
    for name in (
        "process_max_fds",
        "process_open_fds",
        "process_resident_memory_bytes",
        "process_start_time_seconds",
        "process_virtual_memory_bytes",
        "process_virtual_memory_max_bytes",
    ):
        assert families[name] == "gauge"
    received = registry.get_sample_value("process_network_receive_bytes_total")
    assert received is not None and received > 0
    limit = registry.get_sample_value("process_virtual_memory_max_bytes")
    assert limit is not None and limit > 0


def test_the_checks_of_the_metrics_certificate_are_certwatchers_reads(tmp_path):
    cert, key = self_signed_pair()
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    tls = serving_context(str(tmp_path))
    registry = CollectorRegistry()
    registry.register(CertificateReads(tls))
    tls.reload_if_changed()
    (tmp_path / "tls.key").write_bytes(b"not a key")
    with pytest.raises(MetricsCertError):
        tls.reload_if_changed()
    assert registry.get_sample_value("certwatcher_read_certificate_total") == 3
    assert registry.get_sample_value("certwatcher_read_certificate_errors_total") == 1


def test_certwatcher_is_served_only_for_a_certificate_from_files(tmp_path):
    cert, key = self_signed_pair()
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    from_files = serving_context(str(tmp_path))
    self_signed = ServingTLS(from_files.context, "self-signed")
    for tls, served in ((from_files, True), (self_signed, False), (None, False)):
        registry = CollectorRegistry()
        serve(registry, server="https://10.0.0.1:443", responses={}, tls=tls).bind(NAME, 1)
        text = generate_latest(registry).decode()
        assert ("certwatcher_read_certificate_total" in text) is served
        assert "process_cpu_seconds_total" in text
        assert "# TYPE rest_client_requests_total counter" in text
        assert "_created{" not in text and "_created " not in text


def test_a_kind_and_version_watched_in_two_groups_get_two_controller_names():
    async def reconcile(key):
        return Result()

    families = ControllerFamilies(CollectorRegistry())
    other = Watch(gvk=GVK("other.example.com", "v1alpha1", "Thing"), role="/roles/thing")
    first = Controller(WATCH, reconcile, workers=1, metrics=families)
    second = Controller(other, reconcile, workers=1, metrics=families)
    assert (first.name, second.name) == (NAME, "thing.other.example.com-v1alpha1-controller")


def test_upstreams_own_histogram_has_gos_default_buckets():
    metrics = OperatorMetrics()
    metrics.observe_run("cache.example.com/v1alpha1, Kind=Memcached", 0.3, True)
    bounds = [
        sample.labels["le"]
        for family in metrics.registry.collect()
        if family.name == "ansible_operator_reconciles"
        for sample in family.samples
        if sample.name.endswith("_bucket")
    ]
    assert [float(b) for b in bounds] == [*GO_DEFAULT_BUCKETS, float("inf")]
    assert GO_DEFAULT_BUCKETS == (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
