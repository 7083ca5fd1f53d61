"""Conversion served by the operator, called by the real API server: the nginx operator's
v1alpha1 (`port`) and v1alpha2 (`ports`, stored), as roles/nginx/meta/conversion.yml declares.

The repository's operator runs with its webhook on loopback (the launcher's default), so it
points the CRD at its own URL and CA; the API server then calls it for every read or write in
the version that is not stored. A CR is created as v1alpha1, read as v1alpha2 and back, updated
through either, and nothing is lost; the role runs for it once, at v1alpha2 only.
"""

from __future__ import annotations

import base64
import copy
import json
import socket
import ssl
import urllib.request
from urllib.parse import urlsplit

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from prometheus_client.parser import text_string_to_metric_families

from .operators import STRUCTURED_LOG, records_of
from .project import RepoOperator, install_repo_crds, successful
from .waiting import wait_until

pytestmark = pytest.mark.e2e

GROUP, PLURAL, KIND = "operator.example.com", "nginxoperators", "NginxOperator"
CRD = f"{PLURAL}.{GROUP}"
KEPT = "conversion.ansible-operator.io/v1alpha2"


@pytest.fixture
def nginx_operator(cluster, namespace, tmp_path):
    with cluster.api_client() as api_client:
        install_repo_crds(api_client)
    op = RepoOperator(tmp_path, cluster.kubeconfig, [namespace])
    op.start()
    try:
        yield op
    finally:
        with cluster.api_client() as api_client:
            crs = client.CustomObjectsApi(api_client)
            for item in crs.list_namespaced_custom_object(GROUP, "v1alpha2", namespace, PLURAL)[
                "items"
            ]:
                crs.delete_namespaced_custom_object(
                    GROUP, "v1alpha2", namespace, PLURAL, item["metadata"]["name"]
                )
        op.stop()
        op.print_log()


def _client_config(cluster) -> dict:
    with cluster.api_client() as api_client:
        crd = client.ApiextensionsV1Api(api_client).read_custom_resource_definition(CRD)
    return crd.to_dict()["spec"]["conversion"]["webhook"]["client_config"]


def _get(crs, namespace: str, version: str, name: str) -> dict:
    return crs.get_namespaced_custom_object(GROUP, version, namespace, PLURAL, name)


def _metrics(op: RepoOperator) -> str:
    assert op.launched is not None and op.launched.metrics_url is not None
    with urllib.request.urlopen(op.launched.metrics_url, timeout=30) as resp:
        return resp.read().decode()


def _conversions(op: RepoOperator) -> float:
    text = _metrics(op)
    return sum(
        s.value
        for f in text_string_to_metric_families(text)
        if f.name == "ansible_operator_conversion_reviews"
        for s in f.samples
        if s.name.endswith("_total") and s.labels == {"kind": KIND, "result": "Success"}
    )


def test_the_api_server_converts_through_the_operator_and_loses_nothing(
    nginx_operator, cluster, namespace, crs
):
    # the operator pointed the CRD at itself, with its own CA
    config = wait_until(
        lambda: (c := _client_config(cluster)).get("url") and c,
        what="the CRD's webhook pointed at the operator",
    )
    assert config["url"].startswith("https://127.0.0.1:") and config["url"].endswith("/convert")
    assert b"BEGIN CERTIFICATE" in base64.b64decode(config["ca_bundle"])

    # created as v1alpha1, as the book's sample-cr.yaml
    crs.create_namespaced_custom_object(
        GROUP, "v1alpha1", namespace, PLURAL,
        {"apiVersion": f"{GROUP}/v1alpha1", "kind": KIND, "metadata": {"name": "cluster"},
         "spec": {"replicas": 1, "port": 8080}},
    )  # fmt: skip
    new = _get(crs, namespace, "v1alpha2", "cluster")
    assert new["spec"] == {"replicas": 1, "ports": [{"containerPort": 8080, "protocol": "TCP"}]}
    old = _get(crs, namespace, "v1alpha1", "cluster")
    assert old["spec"] == {"replicas": 1, "port": 8080}
    assert KEPT not in (old["metadata"].get("annotations") or {})

    # the role runs for it, at the version the watch names (the stored one)
    done = wait_until(
        lambda: successful(o := _get(crs, namespace, "v1alpha2", "cluster")) and o,
        what="the v1alpha1 CR reconciled",
        timeout=300,
    )
    deployment = client.AppsV1Api(crs.api_client).read_namespaced_deployment("cluster", namespace)
    ports = deployment.spec.template.spec.containers[0].ports
    assert [(p.container_port, p.name) for p in ports] == [(8080, "http")]
    assert {c["type"] for c in done["status"]["conditions"]} >= {"Ready", "Degraded"}
    assert nginx_operator.reconciles(KIND, GROUP, "v1alpha2")["succeeded"] >= 1
    assert nginx_operator.reconciles(KIND, GROUP, "v1alpha1") == {"succeeded": 0, "failed": 0}

    # updated through v1alpha2 with what v1alpha1 cannot say: kept in its annotation
    two = [
        {"containerPort": 8080, "name": "web", "protocol": "TCP"},
        {"containerPort": 8443, "name": "https", "protocol": "TCP", "hostPort": 30443},
    ]
    crs.patch_namespaced_custom_object(
        GROUP, "v1alpha2", namespace, PLURAL, "cluster", {"spec": {"ports": two}}
    )
    old = _get(crs, namespace, "v1alpha1", "cluster")
    assert old["spec"] == {"replicas": 1, "port": 8080}
    kept = json.loads(old["metadata"]["annotations"][KEPT])
    assert kept == {"ports": [{"name": "web"}, {k: v for k, v in two[1].items()}]}

    # updated through v1alpha1 (a replace, as kubectl apply of an edited file does): the new
    # port lands in the first port, and nothing v1alpha1 never showed is lost
    def replace_through_v1alpha1() -> bool:
        edited = copy.deepcopy(_get(crs, namespace, "v1alpha1", "cluster"))
        assert edited["metadata"]["annotations"][KEPT] == old["metadata"]["annotations"][KEPT]
        edited["spec"]["port"] = 9090
        edited["spec"]["replicas"] = 2
        try:
            crs.replace_namespaced_custom_object(
                GROUP, "v1alpha1", namespace, PLURAL, "cluster", edited
            )
        except ApiException as err:  # the operator wrote the status since the read: again
            if err.status != 409:
                raise
            return False
        return True

    wait_until(replace_through_v1alpha1, what="a replace through v1alpha1")
    new = _get(crs, namespace, "v1alpha2", "cluster")
    assert new["spec"]["replicas"] == 2
    assert new["spec"]["ports"] == [{**two[0], "containerPort": 9090}, two[1]]
    assert KEPT not in (new["metadata"].get("annotations") or {})
    assert new["status"] == _get(crs, namespace, "v1alpha1", "cluster")["status"]

    # and the role follows the change made through v1alpha1
    def deployed() -> bool:
        d = client.AppsV1Api(crs.api_client).read_namespaced_deployment("cluster", namespace)
        got = [(p.container_port, p.name) for p in d.spec.template.spec.containers[0].ports]
        return d.spec.replicas == 2 and got == [(9090, "web"), (8443, "https")]

    wait_until(deployed, what="the Deployment with both ports and two replicas", timeout=300)
    assert _conversions(nginx_operator) >= 4


def _served_certificate(op: RepoOperator) -> bytes:
    """The certificate the operator's webhook serves (DER), at the port its log names."""
    serving = records_of(op.records(), "Serving conversion")
    assert serving, "the operator did not say where it serves conversion"
    port = urlsplit(serving[-1]["url"]).port
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # what is served is compared, not trusted
        with context.wrap_socket(raw) as tls:
            der = tls.getpeercert(binary_form=True)
    assert der
    return der


def test_replicas_behind_the_service_serve_one_certificate(cluster, namespace, tmp_path):
    """Not on loopback (in a cluster, behind the CRD's Service), the first operator keeps its
    certificate in a Secret beside the Service and a second one serves the same; the CRD's CA
    bundle is that certificate. A certificate each would leave the API server trusting one."""
    with cluster.api_client() as api_client:
        install_repo_crds(api_client)
        service = _client_config(cluster).get("service") or {}
        core = client.CoreV1Api(api_client)
        try:
            core.create_namespace({"metadata": {"name": service["namespace"]}})
        except ApiException as err:
            assert err.status == 409, err
        secret = f"{service['name']}-cert"
        operators = [
            RepoOperator(tmp_path / str(i), cluster.kubeconfig, [namespace]) for i in (1, 2)
        ]
        try:
            for op in operators:  # one after the other: the first makes the Secret
                op.start(*STRUCTURED_LOG, "--webhook-bind-address=0.0.0.0:0")
            served = [_served_certificate(op) for op in operators]
            kept = core.read_namespaced_secret(secret, service["namespace"]).data
            pem = base64.b64decode(kept["tls.crt"])
            assert served[0] == served[1] == ssl.PEM_cert_to_DER_cert(pem.decode())
            config = _client_config(cluster)
            assert "url" not in config or not config["url"]
            assert base64.b64decode(config["ca_bundle"]) == pem
            for op in operators:
                shared = [
                    s
                    for f in text_string_to_metric_families(_metrics(op))
                    if f.name == "ansible_operator_conversion_certificate"
                    for s in f.samples
                ]
                assert [(s.labels, s.value) for s in shared] == [({"source": "shared"}, 1.0)]
        finally:
            for op in operators:
                op.stop()
            try:
                core.delete_namespaced_secret(secret, service["namespace"])
            except ApiException as err:  # none made: the test failed before, and says why
                assert err.status == 404, err
