"""The conversion webhook: a ConversionReview answered, what anything else that reaches its port
gets (its handler in aiohttp's test server), and which watches run (one version per kind,
upstream's ansible-operator-plugins #154)."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from ansible_operator.core.watches import GVK, Watch
from ansible_operator.project import load_conversion
from ansible_operator.runtime.manager import conversion_webhook
from ansible_operator.runtime.manager.conversion_webhook import (
    MAX_REVIEW_BYTES,
    ConversionWebhook,
    MalformedReview,
    WebhookError,
    review_response,
    select_watches,
)

ROOT = Path(__file__).resolve().parents[2]
NGINX = GVK("operator.example.com", "v1alpha2", "NginxOperator")


def _nginx_watch(version: str = "v1alpha2") -> Watch:
    return Watch(gvk=GVK(NGINX.group, version, NGINX.kind), role=str(ROOT / "roles/nginx"))


def test_a_review_is_answered_with_every_object_converted() -> None:
    conversion = load_conversion(_nginx_watch(), ROOT / "roles/nginx")
    assert conversion is not None
    objects = [
        {"apiVersion": "operator.example.com/v1alpha1", "kind": "NginxOperator",
         "metadata": {"name": f"n{i}", "uid": str(i)}, "spec": {"port": 8000 + i}}
        for i in range(3)
    ]  # fmt: skip
    review = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "705ab4f5",
            "desiredAPIVersion": "operator.example.com/v1alpha2",
            "objects": objects,
        },
    }
    answer = review_response(review, {(NGINX.group, NGINX.kind): conversion})
    assert answer["apiVersion"] == "apiextensions.k8s.io/v1"
    assert answer["kind"] == "ConversionReview"
    response = answer["response"]
    assert response["uid"] == "705ab4f5"
    assert response["result"] == {"status": "Success"}
    assert [o["spec"]["ports"][0]["containerPort"] for o in response["convertedObjects"]] == [
        8000,
        8001,
        8002,
    ]
    assert {o["apiVersion"] for o in response["convertedObjects"]} == {
        "operator.example.com/v1alpha2"
    }


def test_a_kind_without_a_conversion_is_a_failure_the_api_server_reports() -> None:
    review = {
        "request": {
            "uid": "1",
            "desiredAPIVersion": "other.example.com/v2",
            "objects": [{"apiVersion": "other.example.com/v1", "kind": "Thing"}],
        }
    }
    response = review_response(review, {})["response"]
    assert response == {
        "uid": "1",
        "result": {
            "status": "Failure",
            "message": "Thing.other.example.com has no conversion here",
        },
    }


MALFORMED = [
    [],
    {"request": None},
    {"request": {"uid": 1, "desiredAPIVersion": "a/v1", "objects": []}},
    {"request": {"uid": "1", "desiredAPIVersion": "v1", "objects": []}},
    {"request": {"uid": "1", "desiredAPIVersion": "a/v1", "objects": {"kind": "X"}}},
    {"request": {"uid": "1", "desiredAPIVersion": "a/v1", "objects": ["x"]}},
    {"request": {"uid": "1", "desiredAPIVersion": "a/v1", "objects": [{"kind": ["X"]}]}},
]


@pytest.mark.parametrize("review", MALFORMED)
def test_what_is_not_shaped_as_a_review_is_malformed(review: Any) -> None:
    with pytest.raises(MalformedReview):
        review_response(review, {})


def serve(*bodies: bytes, client: Any = None) -> tuple[int, str, CollectorRegistry]:
    """Each body POSTed to a webhook's /convert (its handler, served plain by aiohttp's test
    server: TLS and the CRDs are the e2e tests'); the last status and text, and the metrics."""
    conversion = load_conversion(_nginx_watch(), ROOT / "roles/nginx")
    assert conversion is not None
    registry = CollectorRegistry()
    webhook = ConversionWebhook(
        [conversion],
        client=client,  # only for Events: the handler does not call the API server otherwise
        at=("127.0.0.1", 0),
        cert_dir="",
        registry=registry,
    )

    async def post() -> tuple[int, str]:
        app = web.Application(client_max_size=MAX_REVIEW_BYTES)
        app.router.add_post("/convert", webhook._convert)
        async with TestClient(TestServer(app)) as http:
            for body in bodies:
                resp = await http.post("/convert", data=body)
            return resp.status, await resp.text()

    status, text = asyncio.run(post())
    return status, text, registry


def samples(registry: CollectorRegistry, name: str) -> dict[tuple[str, ...], float]:
    return {
        tuple(sample.labels.values()): sample.value
        for metric in registry.collect()
        for sample in metric.samples
        if sample.name == name
    }


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[" * 100_000, json.dumps(MALFORMED[-1]).encode(), b'{"a": "\xff"}'],
)
def test_anything_else_than_a_review_is_a_400_and_counted_nowhere(body: bytes) -> None:
    status, text, registry = serve(body)
    assert status == 400 and text.startswith("bad ConversionReview: ")
    assert samples(registry, "ansible_operator_conversion_reviews_total") == {}
    assert samples(registry, "controller_runtime_webhook_panics_total") == {(): 0.0}


def test_a_body_past_the_limit_is_refused_before_it_is_read() -> None:
    status, _, _ = serve(b" " * (MAX_REVIEW_BYTES + 1))
    assert status == 413


def test_the_metrics_labels_are_the_watched_kinds_whatever_the_request_names() -> None:
    objects = [
        {"apiVersion": "operator.example.com/v1alpha1", "kind": f"Made{i}"} for i in range(50)
    ]
    review = {"request": {"uid": "1", "desiredAPIVersion": "operator.example.com/v1alpha2",
                          "objects": objects}}  # fmt: skip
    status, text, registry = serve(json.dumps(review).encode())
    assert status == 200 and json.loads(text)["response"]["result"]["status"] == "Failure"
    assert samples(registry, "ansible_operator_conversion_reviews_total") == {("", "Failure"): 1.0}


class Recorder:
    """What the webhook asks of the API server."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, Any]] = []

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        self.requests.append((method, path, body))
        return {}


def test_an_annotation_the_version_cannot_hold_is_reported_once_and_converts(caplog) -> None:
    obj = {"apiVersion": "operator.example.com/v1alpha1", "kind": "NginxOperator",
           "metadata": {"name": "web", "namespace": "shop", "uid": "u1", "resourceVersion": "7",
                        "annotations": {"conversion.ansible-operator.io/v1alpha2": "{bad"}},
           "spec": {"port": 80}}  # fmt: skip
    review = {"request": {"uid": "1", "desiredAPIVersion": "operator.example.com/v1alpha2",
                          "objects": [obj]}}  # fmt: skip
    api = Recorder()
    status, text, _ = serve(json.dumps(review).encode(), json.dumps(review).encode(), client=api)
    answer = json.loads(text)["response"]
    assert status == 200 and answer["result"] == {"status": "Success"}
    assert answer["convertedObjects"][0]["spec"]["ports"][0]["containerPort"] == 80
    why = "the annotation conversion.ansible-operator.io/v1alpha2 is ignored: it is not JSON"
    ((method, path, event),) = api.requests  # two reviews of one version: one Event
    assert (method, path) == ("POST", "/api/v1/namespaces/shop/events")
    assert (event["reason"], event["message"], event["involvedObject"]["uid"]) == (
        "ConversionAnnotationIgnored",
        why,
        "u1",
    )
    assert [r.message for r in caplog.records if "is ignored" in r.message] == [
        f"Conversion of NginxOperator shop/web: {why}"
    ]


def test_a_handler_that_raises_is_a_500_counted_as_upstreams_panics(monkeypatch, caplog) -> None:
    def broken(review, conversions):
        raise KeyError("a bug")

    monkeypatch.setattr(conversion_webhook, "review_response", broken)
    status, text, registry = serve(b"{}")
    assert (status, text) == (500, "internal error")
    assert samples(registry, "controller_runtime_webhook_panics_total") == {(): 1.0}
    assert "a request's handling raised" in caplog.text


def test_two_watches_of_one_kind_run_one_role_at_the_highest_version(caplog) -> None:
    memcached = Watch(gvk=GVK("cache.example.com", "v1alpha1", "Memcached"), role="/r/m")
    old = Watch(gvk=GVK("aws.example.com", "v1", "IAMRole"), role="/r/v1")
    new = Watch(gvk=GVK("aws.example.com", "v2", "IAMRole"), role="/r/v2")
    with caplog.at_level(logging.WARNING):
        kept, conversions = select_watches([memcached, old, new])
    assert kept == [memcached, new]
    assert conversions == []
    [record] = caplog.records
    assert record.getMessage().startswith(
        "Not watching aws.example.com/v1, Kind=IAMRole: IAMRole is watched at v2"
    )


def test_a_role_with_a_conversion_gets_one_watch(tmp_path: Path) -> None:
    kept, conversions = select_watches([_nginx_watch()])
    assert kept == [_nginx_watch()]
    assert [c.versions for c in conversions] == [["v1alpha2", "v1alpha1"]]

    with pytest.raises(WebhookError, match="keep one watch, of the version the role is written"):
        select_watches([_nginx_watch(), _nginx_watch("v1alpha1")])


def test_a_conversion_file_that_cannot_work_stops_the_start_in_one_line(tmp_path: Path) -> None:
    role = tmp_path / "nginx"
    shutil.copytree(ROOT / "roles/nginx", role)
    conversion = role / "meta/conversion.yml"
    conversion.write_text(conversion.read_text().replace("to: ports[0].containerPort", "to: prots"))
    watch = Watch(gvk=NGINX, role=str(role))
    with pytest.raises(WebhookError) as err:
        select_watches([watch])
    assert str(err.value) == (
        f"{conversion}: version v1alpha1: fields[1]: to: prots is not a field of v1alpha2's spec"
    )
