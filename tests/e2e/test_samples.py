"""The repository's own operator: its watches.yaml and roles reconcile every sample CR."""

from __future__ import annotations

import sys

import pytest
import yaml

from .project import (
    CONFIG,
    REPO,
    RepoOperator,
    install_repo_crds,
    kubectl,
    samples,
    wait_all_successful,
    watched_version,
)

pytestmark = [pytest.mark.e2e, pytest.mark.ansible_core, pytest.mark.long]


@pytest.fixture
def repo_operator(cluster, namespace, tmp_path):
    with cluster.api_client() as api_client:
        install_repo_crds(api_client)
    op = RepoOperator(tmp_path, cluster.kubeconfig, [namespace])
    try:
        yield op
    finally:
        # The CRs go while the operator still runs, so that memcached's finalizer is removed.
        kubectl(
            cluster.kubeconfig, "delete", "-k", str(CONFIG / "samples"), "-n", namespace,
            "--ignore-not-found", "--timeout=120s", check=False,
        )  # fmt: skip
        op.stop()
        print(f"---- operator log ({op.log_path}) ----\n{op.log()[-20000:]}", file=sys.stderr)


def test_every_watch_has_one_sample():
    watched = {(w["group"], w["kind"]) for w in yaml.safe_load((REPO / "watches.yaml").read_text())}
    assert {(s.group, s.kind) for s in samples()} == watched


def test_every_sample_reaches_successful(repo_operator, cluster, namespace, crs):
    repo_operator.start()
    kubectl(cluster.kubeconfig, "apply", "-k", str(CONFIG / "samples"), "-n", namespace)

    objs = wait_all_successful(crs, namespace)

    # and each role did its part
    assert objs["Memcached"]["status"]["test"] == "hello world"
    assert "cache.example.com/finalizer" in objs["Memcached"]["metadata"]["finalizers"]
    assert objs["At"]["status"]["phase"] in ("RUNNING", "DONE")
    nginx_conditions = {c["type"] for c in objs["NginxOperator"]["status"]["conditions"]}
    assert {"Ready", "Degraded"} <= nginx_conditions
    assert "availableReplicas" in objs["Foo"]["status"]
    # and no run failed on the way (the operator's own count of its runs)
    for sample in samples():
        runs = repo_operator.reconciles(sample.kind, sample.group, watched_version(sample))
        assert runs["failed"] == 0 and runs["succeeded"] >= 1, (sample.kind, runs)
