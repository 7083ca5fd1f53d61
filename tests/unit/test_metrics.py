"""Operator metrics: upstream's names and labels; bind addresses read as controller-runtime does."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from ansible_operator.runtime.observe.metrics import OperatorMetrics, parse_bind_address


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        (":8443", ("0.0.0.0", 8443)),
        ("127.0.0.1:6789", ("127.0.0.1", 6789)),
        ("[::1]:8080", ("::1", 8080)),
        ("0", None),
    ],
)
def test_bind_addresses(address, expected):
    assert parse_bind_address(address) == expected


@pytest.mark.parametrize("address", ["8443", "localhost", ":http", "host:70000"])
def test_bad_bind_addresses_say_what_is_expected(address):
    with pytest.raises(ValueError, match=r"expected \[host\]:port or 0"):
        parse_bind_address(address)


def test_runs_are_counted_by_result_and_timed():
    metrics = OperatorMetrics()
    gvk = "cache.example.com/v1alpha1, Kind=Memcached"
    metrics.observe_run(gvk, 2.5, True)
    metrics.observe_run(gvk, 1.0, False)
    metrics.observe_run(gvk, 0.5, True)
    text = generate_latest(metrics.registry).decode()
    assert f'ansible_operator_reconcile_result{{GVK="{gvk}",result="succeeded"}} 2.0' in text
    assert f'ansible_operator_reconcile_result{{GVK="{gvk}",result="failed"}} 1.0' in text
    assert f'ansible_operator_reconciles_count{{GVK="{gvk}"}} 3.0' in text
    assert f'ansible_operator_reconciles_sum{{GVK="{gvk}"}} 4.0' in text
    assert "# TYPE ansible_operator_reconcile_result gauge" in text
