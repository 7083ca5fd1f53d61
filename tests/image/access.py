"""Reaching the operator's metrics as a scraper does: a ServiceAccount's token, bound or not to a
ClusterRole, and a GET with it."""

from __future__ import annotations

import contextlib
import ssl
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator

from kubernetes import client

from tests.e2e.rbac import account_binding


def scrape(url: str, token: str) -> tuple[int, str]:
    """A GET with a bearer token, the self-signed certificate not verified (as Prometheus's
    ServiceMonitor in config/prometheus)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@contextlib.contextmanager
def scraper(cluster, namespace: str, cluster_role: str) -> Iterator[str]:
    """The token of a ServiceAccount bound to ``cluster_role``; the binding removed after."""
    name = f"scraper-{uuid.uuid4().hex[:8]}"
    with cluster.api_client() as api_client:
        client.CoreV1Api(api_client).create_namespaced_service_account(
            namespace, {"metadata": {"name": name}}
        )
        rbac = client.RbacAuthorizationV1Api(api_client)
        rbac.create_cluster_role_binding(
            account_binding(name, "ClusterRole", cluster_role, name, namespace)
        )
        try:
            yield account_token(cluster, namespace, name)
        finally:
            rbac.delete_cluster_role_binding(name)


def account_token(cluster, namespace: str, service_account: str) -> str:
    with cluster.api_client() as api_client:
        request = client.CoreV1Api(api_client).create_namespaced_service_account_token(
            service_account, namespace, {"spec": {"expirationSeconds": 3600}}
        )
    return request.status.token
