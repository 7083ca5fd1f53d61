# Copyright: ansible-operator-py contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""osdk_metric's request: the argument spec, the JSON body, and the POST to the operator.

Shared by the module and the action plugin of the same name, so both accept exactly the same
arguments and send exactly the same body (the operator's user-metrics endpoint contract).
"""

from __future__ import annotations

import json
import os
from typing import Any

from ansible.module_utils.urls import open_url

URL_ENV = "ANSIBLE_OPERATOR_USER_METRICS_URL"  # set by the operator for every run
DEFAULT_ADDRESS = "http://localhost:5050/metrics"
TYPES = ("counter", "gauge", "histogram", "summary")
TIMEOUT = 10

ARGUMENT_SPEC: dict[str, Any] = {
    "name": {"type": "str", "required": True},
    "description": {"type": "str", "required": True},
    "address": {"type": "str"},
    "counter": {
        "type": "dict",
        "options": {"increment": {"type": "bool"}, "add": {"type": "float"}},
    },
    "gauge": {
        "type": "dict",
        "options": {
            "set": {"type": "float"},
            "increment": {"type": "bool"},
            "decrement": {"type": "bool"},
            "add": {"type": "float"},
            "subtract": {"type": "float"},
            "set_to_current_time": {"type": "bool"},
        },
    },
    "histogram": {"type": "dict", "options": {"observe": {"type": "float"}}},
    "summary": {"type": "dict", "options": {"observe": {"type": "float"}}},
}
MUTUALLY_EXCLUSIVE = [list(TYPES)]
REQUIRED_ONE_OF = [list(TYPES)]


class MetricPostError(Exception):
    """The operator could not be reached, or refused the metric; the message says which."""


def address(params: dict[str, Any], environ: Any = None) -> str:
    """The endpoint: the `address` argument, else the operator's published URL, else 5050."""
    env = os.environ if environ is None else environ
    return str(params.get("address") or env.get(URL_ENV) or DEFAULT_ADDRESS)


def request_body(params: dict[str, Any]) -> dict[str, Any]:
    """The JSON the endpoint expects: name, description and one type with the fields given."""
    body: dict[str, Any] = {"name": params["name"], "description": params["description"]}
    for kind in TYPES:
        spec = params.get(kind)
        if spec is not None:
            body[kind] = {k: v for k, v in spec.items() if v is not None}
    return body


def post(url: str, body: dict[str, Any]) -> int:
    """POST the body; the HTTP status on success, MetricPostError otherwise."""
    try:
        response = open_url(
            url,
            data=json.dumps(body),
            method="POST",
            headers={"Content-Type": "application/json"},
            timeout=TIMEOUT,
            validate_certs=True,
        )
        return int(response.getcode())
    except Exception as err:
        code = getattr(err, "code", None)
        if code is not None:
            try:
                detail = err.read().decode("utf-8", "replace").strip()  # type: ignore[attr-defined]
            except Exception:
                detail = str(err)
            raise MetricPostError(
                f"the operator refused metric {body['name']!r} ({code}): {detail}"
            ) from None
        reason = getattr(err, "reason", err)
        raise MetricPostError(
            f"cannot reach the operator's user metrics endpoint at {url}: {reason}"
        ) from None
