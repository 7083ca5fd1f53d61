"""A restart with many CRs already Successful: new work goes first, the backlog is re-run at the
resync rate, and every old CR is re-run (drift repair). The order is read from the operator's
structured log records, never from timings."""

from __future__ import annotations

import pytest

from .crds import GROUP, VERSION
from .operators import STRUCTURED_LOG, records_of
from .resources import config_map_data, new_cr, wait_condition
from .waiting import wait_until

pytestmark = pytest.mark.e2e

OLD = [f"old-{i}" for i in range(8)]


def runs(core, namespace, name):
    data = config_map_data(core, namespace, f"{name}-runs")
    return int(data["runs"]) if data else 0


def test_after_a_restart_a_new_cr_goes_before_the_successful_backlog(
    operator, crs, core, namespace
):
    # No dependent watches: the counter role rewrites its ConfigMap on every run, and each
    # rewrite would ask for another run.
    operator.write_watches(
        [{"kind": "Counter", "role": "counter", "watchDependentResources": False}]
    )
    operator.start(*STRUCTURED_LOG)
    for name in OLD:
        crs.create_namespaced_custom_object(
            GROUP, VERSION, namespace, "counters", new_cr("Counter", name, {})
        )
    for name in OLD:
        wait_condition(crs, namespace, "Counter", name, "Successful", timeout=300)
    assert operator.stop() == 0

    since = len(operator.log())
    # One resync every 5 s: the 8 old CRs take over 30 s to come round again.
    operator.start(*STRUCTURED_LOG, "--resync-rate=0.2")
    crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "counters", new_cr("Counter", "fresh", {})
    )
    wait_condition(crs, namespace, "Counter", "fresh", "Successful", timeout=300)
    keys = {f"{namespace}/{name}" for name in [*OLD, "fresh"]}

    def reconciled() -> list[str]:
        return [r["key"] for r in records_of(operator.records(since), "reconciled")]

    wait_until(
        lambda: set(reconciled()) == keys,
        what="every old CR re-run after the restart",
        timeout=600,
    )
    assert all(runs(core, namespace, name) == 2 for name in OLD), "each re-run exactly once"

    records = operator.records(since)
    lanes = {r["key"]: r["lane"] for r in records_of(records, "event passes")}
    assert lanes == {f"{namespace}/{name}": "resync" for name in OLD} | {
        f"{namespace}/fresh": "now"
    }
    done = [r["key"] for r in records_of(records, "reconciled")]
    assert sorted(done) == sorted(keys)
    old_before_fresh = done.index(f"{namespace}/fresh")
    assert old_before_fresh < len(OLD) // 2, (
        f"the new CR waited for {old_before_fresh} of the {len(OLD)} old ones"
    )
