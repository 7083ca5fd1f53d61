"""User metrics: request validation, upstream's operation semantics, exposition, the HTTP server."""

from __future__ import annotations

import asyncio
import math
import socket
import time

import aiohttp
import pytest
from prometheus_client import CollectorRegistry, Gauge, generate_latest

from ansible_operator.runtime.observe import user_metrics
from ansible_operator.runtime.observe.user_metrics import (
    UserMetricError,
    UserMetrics,
    UserMetricsServer,
    UserMetricsServerError,
    parse_request,
)


@pytest.fixture
def metrics() -> UserMetrics:
    return UserMetrics(CollectorRegistry())


def exposition(metrics: UserMetrics) -> str:
    return generate_latest(metrics.registry).decode()


def value(metrics: UserMetrics, name: str) -> float | None:
    return metrics.registry.get_sample_value(name)


def post(metrics: UserMetrics, name: str, **body) -> None:
    metrics.handle({"name": name, "description": f"{name} help", **body})


# --- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "must be a JSON object"),
        ({"description": "x", "gauge": {}}, "invalid metric name None"),
        ({"name": "bad-name", "gauge": {}}, "invalid metric name 'bad-name'"),
        ({"name": "m", "description": 3, "gauge": {}}, "description must be a string"),
        (
            {"name": "m"},
            "exactly one of counter, gauge, histogram, summary must be given, got none",
        ),
        ({"name": "m", "counter": {}, "gauge": {}}, "got counter, gauge"),
        ({"name": "m", "gauge": 5}, "gauge must be an object"),
        ({"name": "m", "gauge": {"set": "5"}}, "gauge.set must be a number, got a string"),
        ({"name": "m", "gauge": {"set": True}}, "gauge.set must be a number, got a boolean"),
        ({"name": "m", "gauge": {"set": math.nan}}, "gauge.set must be a number, got NaN"),
        ({"name": "m", "counter": {"increment": 1}}, "increment must be a boolean, got a number"),
        ({"name": "m", "histogram": {"observe": [1]}}, "observe must be a number, got an array"),
    ],
)
def test_bad_requests_are_refused_saying_why(body, message):
    with pytest.raises(UserMetricError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_request(body)


@pytest.mark.parametrize(
    "kind, key", [("gauge", "set"), ("counter", "increment"), ("summary", "observe")]
)
def test_a_refused_value_is_not_repeated(kind, key):
    # The message goes to the operator's log: a no_log task's value must not.
    with pytest.raises(UserMetricError) as refused:
        parse_request({"name": "m", kind: {key: {"password": "s3cret"}}})
    assert "s3cret" not in str(refused.value)


def test_null_types_count_as_absent_and_unknown_fields_are_ignored():
    request = parse_request(
        {"name": "m", "counter": None, "gauge": {"set": 2, "color": "red"}, "extra": 1}
    )
    assert (request.type, dict(request.fields)) == ("gauge", {"set": 2.0})


# --- semantics --------------------------------------------------------------------------------


def test_counter_increment_and_add(metrics):
    post(metrics, "c", counter={})
    assert value(metrics, "c") == 0
    post(metrics, "c", counter={"increment": True})
    post(metrics, "c", counter={"add": 2.5})
    assert value(metrics, "c") == 3.5


def test_counter_increment_wins_over_add(metrics):
    post(metrics, "c", counter={"increment": True, "add": 10})
    assert value(metrics, "c") == 1


def test_a_negative_counter_add_is_refused_and_changes_nothing(metrics):
    post(metrics, "c", counter={"add": 1})
    with pytest.raises(UserMetricError, match="add must not be negative"):
        post(metrics, "c", counter={"add": -1})
    assert value(metrics, "c") == 1


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        ({"set": 5}, 5),
        ({"increment": True}, 1),
        ({"decrement": True}, -1),
        ({"add": 7}, 7),
        ({"subtract": 7}, -7),
        # First match wins, in the order of upstream's code: increment, decrement, add,
        # subtract, set, set_to_current_time.
        ({"set": 5, "increment": True}, 1),
        ({"set": 5, "add": 2}, 2),
        ({"add": 2, "decrement": True}, -1),
        ({"set": 5, "subtract": 1}, -1),
        # Zero values do nothing, as upstream (`set: 0` included).
        ({"set": 0}, 0),
        ({"add": 0, "set": 3}, 3),
    ],
)
def test_gauge_operations(metrics, ops, expected):
    post(metrics, "g", gauge=ops)
    assert value(metrics, "g") == expected


def test_set_zero_does_not_reset_a_gauge(metrics):
    post(metrics, "g", gauge={"set": 4})
    post(metrics, "g", gauge={"set": 0})
    assert value(metrics, "g") == 4


def test_set_to_current_time(metrics):
    before = time.time()
    post(metrics, "g", gauge={"set_to_current_time": True})
    assert value(metrics, "g") >= before


def test_histogram_observes_into_go_default_buckets(metrics):
    post(metrics, "h", histogram={"observe": 0.3})
    post(metrics, "h", histogram={"observe": 2})
    post(metrics, "h", histogram={"observe": 0})  # zero: not observed, as upstream
    assert value(metrics, "h_count") == 2
    assert value(metrics, "h_sum") == 2.3
    text = exposition(metrics)
    assert 'h_bucket{le="0.25"} 0.0' in text
    assert 'h_bucket{le="0.5"} 1.0' in text
    assert 'h_bucket{le="2.5"} 2.0' in text
    assert 'h_bucket{le="+Inf"} 2.0' in text
    assert 'le="0.075"' not in text  # Python's default buckets are not Go's


def test_summary_observes(metrics):
    post(metrics, "s", summary={"observe": 2})
    assert (value(metrics, "s_count"), value(metrics, "s_sum")) == (1, 2)


def test_changing_the_type_of_a_metric_is_refused(metrics):
    post(metrics, "m", gauge={"set": 1})
    with pytest.raises(UserMetricError, match="cannot change metric type of m, which is a gauge"):
        post(metrics, "m", counter={"increment": True})
    assert value(metrics, "m") == 1


def test_a_name_already_served_by_someone_else_is_refused():
    registry = CollectorRegistry()
    Gauge("taken", "an operator metric", registry=registry)
    with pytest.raises(UserMetricError, match="cannot register taken"):
        post(UserMetrics(registry), "taken", gauge={"set": 1})


def test_the_first_description_is_kept(metrics):
    metrics.handle({"name": "g", "description": "first", "gauge": {}})
    metrics.handle({"name": "g", "description": "second", "gauge": {"set": 1}})
    assert "# HELP g first" in exposition(metrics)


def test_clear_unregisters(metrics):
    post(metrics, "g", gauge={"set": 1})
    metrics.clear()
    assert value(metrics, "g") is None
    post(metrics, "g", counter={})  # the name is free again, with another type
    assert value(metrics, "g") == 0


def test_the_module_registry_is_the_default():
    assert UserMetrics().registry is user_metrics.registry


# --- exposition: upstream's memcached molecule assertions --------------------------------------


def test_exposition_has_the_strings_upstreams_memcached_test_expects(metrics):
    for kind in ("counter", "gauge", "histogram", "summary"):
        post(metrics, f"sanity_{kind}", **{kind: {}})
    post(metrics, "counter_inc_test", counter={"increment": True})
    post(metrics, "counter_add_test", counter={"add": 2})
    post(metrics, "gauge_set_test", gauge={"set": 5})
    post(metrics, "gauge_add_test", gauge={"add": 7})
    post(metrics, "gauge_sub_test", gauge={"subtract": 7})
    post(metrics, "gauge_time_test", gauge={"set_to_current_time": True})
    post(metrics, "summary_test", summary={"observe": 2})
    post(metrics, "histogram_test", histogram={"observe": 2})
    text = exposition(metrics)
    for expected in [
        "sanity_counter 0",
        "sanity_gauge 0",
        "sanity_histogram_bucket",
        "sanity_summary summary",
        "counter_inc_test 1",
        "counter_add_test 2",
        "gauge_set_test 5",
        "gauge_add_test 7",
        "gauge_sub_test -7",
        "gauge_time_test 1",
        "summary_test_sum 2",
        "histogram_test_sum 2",
    ]:
        assert expected in text, f"{expected!r} missing from:\n{text}"
    assert "_created" not in text


def test_a_counter_named_total_is_a_real_counter(metrics):
    post(metrics, "jobs_total", counter={"increment": True})
    text = exposition(metrics)
    assert "# TYPE jobs_total counter" in text
    assert "jobs_total 1.0" in text


# --- the HTTP endpoint ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _exercise(server: UserMetricsServer) -> list[tuple[int, str]]:
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            results = []
            requests = [
                ("POST", {"name": "hits", "description": "d", "counter": {"increment": True}}),
                ("POST", {"name": "hits", "gauge": {"set": 1}}),
                ("POST", {"name": "both", "gauge": {}, "summary": {}}),
                ("GET", None),
                ("PUT", {"name": "x", "gauge": {}}),
            ]
            for method, body in requests:
                async with session.request(method, server.url, json=body) as resp:
                    results.append((resp.status, await resp.text()))
            async with session.post(server.url, data=b"{not json") as resp:
                results.append((resp.status, await resp.text()))
            return results
    finally:
        await server.stop()


def test_the_server_answers_with_upstreams_status_codes():
    metrics = UserMetrics(CollectorRegistry())
    server = UserMetricsServer(metrics, address=f"127.0.0.1:{free_port()}", environ={})
    results = asyncio.run(_exercise(server))
    statuses = [status for status, _ in results]
    assert statuses == [200, 400, 400, 405, 405, 400]
    assert "cannot change metric type of hits" in results[1][1]
    assert "exactly one of" in results[2][1]
    assert "invalid JSON" in results[5][1]
    assert value(metrics, "hits") == 1
    assert server.run_env() == {}  # withdrawn on stop


def test_the_url_is_published_to_runs_while_listening():
    server = UserMetricsServer(UserMetrics(CollectorRegistry()), address="127.0.0.1:0", environ={})
    assert server.run_env() == {}  # nothing to publish before listening

    async def start_and_read() -> tuple[dict[str, str], str]:
        await server.start()
        try:
            return server.run_env(), server.url
        finally:
            await server.stop()

    published, url = asyncio.run(start_and_read())
    assert published == {user_metrics.URL_ENV: url}
    assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
    assert not url.startswith("http://127.0.0.1:0/")


def test_a_taken_default_port_falls_back_to_an_ephemeral_one(monkeypatch):
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        taken = blocker.getsockname()[1]
        monkeypatch.setattr(user_metrics, "DEFAULT_PORT", taken)
        server = UserMetricsServer(UserMetrics(CollectorRegistry()), environ={})

        async def start() -> int:
            await server.start()
            try:
                return server.port
            finally:
                await server.stop()

        port = asyncio.run(start())
    assert port != taken


def test_a_taken_explicit_address_is_a_startup_error():
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        address = f"127.0.0.1:{blocker.getsockname()[1]}"
        server = UserMetricsServer(
            UserMetrics(CollectorRegistry()), environ={user_metrics.ADDRESS_ENV: address}
        )
        with pytest.raises(UserMetricsServerError, match=f"cannot listen on {address}"):
            asyncio.run(server.start())


def test_a_malformed_address_is_a_startup_error():
    server = UserMetricsServer(UserMetrics(CollectorRegistry()), address="localhost")
    with pytest.raises(UserMetricsServerError, match="is not host:port"):
        asyncio.run(server.start())
