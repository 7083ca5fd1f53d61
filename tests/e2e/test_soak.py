"""The short version of the fault suite (`make soak`, tests/soak/suite.py): a few CRs and one
fault of each kind, on a private cluster of its own (the suite freezes its API server and etcd,
so it never uses the shared one), with the same code and the same end checks."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.soak.suite import LEASE_SECONDS, SoakConfig, run

pytestmark = [pytest.mark.e2e, pytest.mark.long]


def test_short_fault_run_ends_converged_without_overlaps_or_leftovers(tmp_path: Path) -> None:
    config = SoakConfig(
        workdir=tmp_path,
        n=5,
        seed=int(os.environ.get("SOAK_SEED", "13")),
        plan=("sigkill", "sigterm", "freeze", "change", "change", "delete"),
        # Longer than the Lease, so that a leader loses it; the full soak's also outlast the
        # operator's 60 s request timeout, too long for this layer.
        freeze_seconds=(LEASE_SECONDS + 5, LEASE_SECONDS + 5),
        fault_gap=(1.0, 3.0),
        converge_timeout=300,
        say=lambda line: print(line, file=sys.stderr),
    )
    report = run(config)
    print("\n".join(report.lines()), file=sys.stderr)
    assert report.violations == []
    assert report.converge_seconds is not None
    for fault in (
        "SIGKILL of the operator",
        "SIGTERM of the operator",
        "API server and etcd frozen",
    ):
        assert report.counts[f"fault: {fault}"] == 1
    assert (
        report.counts["CRs Successful at their latest generation"] == report.counts["CRs remaining"]
    )
    assert report.counts["runs started"] >= 6
