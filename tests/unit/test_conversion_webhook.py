"""The conversion webhook's pure parts: a ConversionReview answered, and which watches run
(one version per kind, upstream's ansible-operator-plugins #154)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from ansible_operator.core.watches import GVK, Watch
from ansible_operator.role_api import load_conversion
from ansible_operator.runtime.conversion_webhook import (
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
