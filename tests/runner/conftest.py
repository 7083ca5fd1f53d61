"""Fixtures for tests that really run ansible-runner on this machine (no cluster needed).

Every run gets its own private data dir under pytest's tmp_path (the operator_sdk.util collection
comes with the installed package), and a tag in its environment (RUNNER_TEST_TAG) so a test
can find the processes a run started by reading /proc, independently of the runner's own marker.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ansible_operator.runner import ColdRunner, RunRequest, new_ident
from ansible_operator.runner.warm.client import WarmRunner

from .runs import TAG_ENV, MakeRequest


@pytest.fixture(params=["cold", "warm"])
def runner(request: pytest.FixtureRequest) -> Iterator[ColdRunner]:
    """Each runner test runs with both runners (the warm one is a ColdRunner with forks)."""
    if request.param == "cold":
        yield ColdRunner(kill_grace=2.0)
        return
    warm = WarmRunner(kill_grace=2.0)
    try:
        yield warm
    finally:
        warm.server.kill()


@pytest.fixture
def warm() -> Iterator[WarmRunner]:
    """A warm runner alone, for what only the warm runner does."""
    runner = WarmRunner(kill_grace=2.0)
    try:
        yield runner
    finally:
        runner.server.kill()


@pytest.fixture
def make_request(tmp_path: Path) -> MakeRequest:
    """Build a RunRequest with test defaults; keyword arguments override any field."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("# not used by these tests\n")
    pdd = tmp_path / "runner" / "example.com" / "v1" / "Thing" / "ns" / "thing-1"

    def make(**overrides: Any) -> RunRequest:
        extra_env = {
            TAG_ENV: uuid.uuid4().hex,
            **overrides.pop("extra_env", {}),
        }
        fields: dict[str, Any] = {
            "ident": new_ident(),
            "private_data_dir": pdd,
            "extravars": {},
            "kubeconfig": str(kubeconfig),
            "extra_env": extra_env,
        }
        fields.update(overrides)
        return RunRequest(**fields)

    return make
