"""A run's Kubernetes clients end up on the run's kubeconfig (the proxy, the run's token), never
on the operator's own in-cluster credentials, whichever loader a module calls and whichever
runner runs it: the operator here runs as in a Pod (the in-cluster variables set, no kubeconfig)."""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from ansible_operator.kube import kubeconfig
from ansible_operator.runner import ColdRunner
from ansible_operator.runner.warm.client import WarmRunner

from .runs import ROLES, MakeRequest

pytestmark = pytest.mark.ansible_core  # the core's own behaviour, on each core


@pytest.fixture(params=["cold", "warm"])
def pod_runner(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ColdRunner]:
    """A runner whose operator has a Pod's environment: the in-cluster variables, no KUBECONFIG,
    and no ~/.kube/config (the warm runner's fork server imports the Kubernetes client in it)."""
    home = tmp_path / "home"
    home.mkdir()
    environ = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    environ |= {
        "HOME": str(home),
        "KUBERNETES_SERVICE_HOST": "192.0.2.1",
        "KUBERNETES_SERVICE_PORT": "6443",
    }
    if request.param == "cold":
        yield ColdRunner(kill_grace=2.0, environ=environ)
        return
    warm = WarmRunner(kill_grace=2.0, environ=environ)
    try:
        yield warm
    finally:
        warm.server.kill()


def test_every_loader_of_a_module_ends_up_on_the_runs_kubeconfig_or_refuses(
    pod_runner: ColdRunner, make_request: MakeRequest, tmp_path: Path
) -> None:
    token = secrets.token_urlsafe(16)
    path = kubeconfig.write(tmp_path / "run-kubeconfig", port=18888, token=token)
    request = make_request(role=str(ROLES / "kube_loaders"), kubeconfig=str(path), skip_facts=True)
    result = asyncio.run(pod_runner.run(request))
    assert result.ok, result.outcome.failures
    proxy: dict[str, object] = {
        "in_cluster_env": [],
        "host": "http://127.0.0.1:18888",
        "authorization": f"Bearer {token}",
        "error": None,
    }
    assert result.outcome.artifact_data["loaders"] == {
        "load_config": proxy,
        "load_kube_config": proxy,
        # Refused before it reads the ServiceAccount token (here a missing file).
        "load_incluster_config": {
            "in_cluster_env": [],
            "host": None,
            "authorization": None,
            "error": "Service host/port is not set.",
        },
    }
