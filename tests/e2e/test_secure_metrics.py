"""Secure metrics (--metrics-secure, --metrics-require-rbac) against the real API server.

Scrapers are ServiceAccounts of the test's namespace with tokens from the TokenRequest API; the
one allowed is bound to config/rbac's metrics-reader ClusterRole (applied under a name of the
test's own), so the rule the test grants is the one the project ships.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from ansible_operator.devcluster.processes import free_ports
from ansible_operator.runtime.observe.metrics_tls import self_signed_pair

from .crds import GROUP, VERSION
from .resources import new_cr, wait_condition

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def scrape(url: str, token: str | None, context: ssl.SSLContext) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def unverified() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


@pytest.fixture
def scrapers(cluster, namespace):
    """Tokens: (allowed to get /metrics, allowed to get /runs..., of a ServiceAccount with
    neither), through config/rbac's metrics-reader and runs-reader ClusterRoles."""
    with cluster.api_client() as api_client:
        core, rbac = client.CoreV1Api(api_client), client.RbacAuthorizationV1Api(api_client)
        tokens = []
        for name in ("prometheus", "viewer", "stranger"):
            core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
            request = core.create_namespaced_service_account_token(
                name, namespace, {"spec": {"expirationSeconds": 3600}}
            )
            tokens.append(request.status.token)
        names = []
        for account, file in (
            ("prometheus", "metrics_reader_role"),
            ("viewer", "runs_reader_role"),
        ):
            role = yaml.safe_load((REPO / f"config/rbac/{file}.yaml").read_text())
            role["metadata"]["name"] = f"{role['metadata']['name']}-{uuid.uuid4().hex[:8]}"
            rbac.create_cluster_role(role)
            binding = {
                "metadata": {"name": role["metadata"]["name"]},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role["metadata"]["name"],
                },
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
            }
            rbac.create_cluster_role_binding(binding)
            names.append(role["metadata"]["name"])
        try:
            yield tuple(tokens)
        finally:
            for name in names:
                rbac.delete_cluster_role_binding(name)
                rbac.delete_cluster_role(name)


def test_scrapes_are_authenticated_and_authorized(operator, crs, namespace, scrapers):
    allowed, viewer, stranger = scrapers
    metrics_port, probe_port = free_ports(2)
    operator.write_watches([{"kind": "Greeting", "role": "greeting"}])
    operator.start(
        f"--metrics-bind-address=127.0.0.1:{metrics_port}",
        f"--health-probe-bind-address=127.0.0.1:{probe_port}",
        "--metrics-secure",
        "--metrics-require-rbac",
    )
    crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "greetings", new_cr("Greeting", "m", {"who": "metrics"})
    )
    wait_condition(crs, namespace, "Greeting", "m", "Successful")
    url = f"https://127.0.0.1:{metrics_port}/metrics"
    tls = unverified()

    assert scrape(url, None, tls)[0] == 401
    assert scrape(url, "not-a-token", tls)[0] == 401
    status, body = scrape(url, stranger, tls)
    assert status == 403
    assert f"system:serviceaccount:{namespace}:stranger" in body
    status, body = scrape(url, allowed, tls)
    assert status == 200
    gvk = f"{GROUP}/{VERSION}, Kind=Greeting"
    assert "ansible_operator_build_info{" in body
    assert f'ansible_operator_reconcile_result{{GVK="{gvk}",result="succeeded"}} 1.0' in body
    assert f'ansible_operator_reconciles_count{{GVK="{gvk}"}} 1.0' in body
    assert scrape(url, viewer, tls)[0] == 403  # runs-reader reads runs, not metrics
    # Plain HTTP is not spoken on the secure port.
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=30)

    # The runs API: the same authentication, its own ClusterRole.
    runs = f"https://127.0.0.1:{metrics_port}/runs/{GROUP}/{VERSION}/Greeting/{namespace}/m"
    assert scrape(runs, None, tls)[0] == 401
    assert scrape(runs, allowed, tls)[0] == 403  # metrics-reader reads metrics, not runs
    assert scrape(runs, stranger, tls)[0] == 403
    status, body = scrape(runs, viewer, tls)
    assert status == 200
    [run] = json.loads(body)["runs"]
    assert (run["outcome"], run["trigger"]["reason"], run["name"]) == ("Succeeded", "Created", "m")
    status, body = scrape(f"{runs}/{run['id']}", viewer, tls)
    assert status == 200
    assert [task["status"] for task in json.loads(body)["tasks"]]  # its tasks, each with a status


def test_the_certificate_comes_from_the_cert_dir(operator, tmp_path):
    certs = tmp_path / "certs"
    certs.mkdir()
    cert_pem, key_pem = self_signed_pair()
    (certs / "tls.crt").write_bytes(cert_pem)
    (certs / "tls.key").write_bytes(key_pem)
    metrics_port, probe_port = free_ports(2)
    operator.write_watches([{"kind": "Greeting", "role": "greeting"}])
    operator.start(
        f"--metrics-bind-address=127.0.0.1:{metrics_port}",
        f"--health-probe-bind-address=127.0.0.1:{probe_port}",
        "--metrics-secure",
        f"--metrics-cert-dir={certs}",
    )
    # Verified against that certificate alone; without --metrics-require-rbac anyone may scrape.
    trusting = ssl.create_default_context(cadata=cert_pem.decode())
    status, body = scrape(f"https://localhost:{metrics_port}/metrics", None, trusting)
    assert status == 200 and "ansible_operator_build_info" in body
