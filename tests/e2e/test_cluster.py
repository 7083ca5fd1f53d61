"""The local control plane behaves like a real cluster: schemas, status, workloads, GC, RBAC."""

from __future__ import annotations

import uuid

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from ansible_operator.devcluster import binaries, components, deploy

from .crds import install_crds
from .rbac import account_binding
from .waiting import wait_until

pytestmark = pytest.mark.e2e

GROUP = "e2e.example.com"
WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["size"],
                                "properties": {"size": {"type": "integer", "minimum": 1}},
                            },
                            "status": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture(scope="module")
def widgets(cluster):
    with cluster.api_client() as api_client:
        install_crds(api_client, [WIDGET_CRD])
        yield client.CustomObjectsApi(api_client)


def widget(name, size):
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size},
    }


def test_schema_violation_is_rejected_naming_the_field(widgets, namespace):
    with pytest.raises(ApiException) as err:
        widgets.create_namespaced_custom_object(
            GROUP, "v1", namespace, "widgets", widget("bad", "three")
        )
    assert err.value.status == 422
    assert "spec.size" in err.value.body


def test_status_subresource_and_generation(widgets, namespace):
    args = (GROUP, "v1", namespace, "widgets")
    created = widgets.create_namespaced_custom_object(*args, widget("w", 1))
    assert created["metadata"]["generation"] == 1

    patched = widgets.patch_namespaced_custom_object_status(
        *args, "w", {"status": {"phase": "Ready"}}
    )
    assert patched["status"] == {"phase": "Ready"}
    assert patched["metadata"]["generation"] == 1, "a status write must not bump generation"

    updated = widgets.patch_namespaced_custom_object(*args, "w", {"spec": {"size": 2}})
    assert updated["metadata"]["generation"] == 2
    assert updated["status"] == {"phase": "Ready"}, "a spec write must leave status alone"

    # Status sent through the main resource is ignored when the subresource is enabled.
    ignored = widgets.patch_namespaced_custom_object(*args, "w", {"status": {"phase": "Hacked"}})
    assert ignored["status"] == {"phase": "Ready"}


def test_deployment_pods_become_running(cluster, namespace):
    labels = {"app": "web"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
    }
    with cluster.api_client() as api_client:
        apps, core = client.AppsV1Api(api_client), client.CoreV1Api(api_client)
        apps.create_namespaced_deployment(namespace, deployment)

        def available():
            d = apps.read_namespaced_deployment("web", namespace)
            return d.status.available_replicas == 2

        wait_until(available, what="2 available replicas")
        pods = core.list_namespaced_pod(namespace, label_selector="app=web").items
        assert len(pods) == 2
        assert {p.status.phase for p in pods} == {"Running"}
        assert all(p.spec.node_name for p in pods)


def test_garbage_collector_deletes_dependents(cluster, namespace):
    with cluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
        ref = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "owner",
            "uid": owner.metadata.uid,
        }
        core.create_namespaced_secret(
            namespace, {"metadata": {"name": "dependent", "ownerReferences": [ref]}}
        )
        core.delete_namespaced_config_map("owner", namespace)

        def dependent_gone():
            try:
                core.read_namespaced_secret("dependent", namespace)
            except ApiException as err:
                return err.status == 404
            return False

        wait_until(dependent_gone, what="the garbage collector to delete the dependent")


def test_rbac_refuses_what_the_role_does_not_allow(cluster, namespace):
    with cluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        rbac = client.RbacAuthorizationV1Api(api_client)
        core.create_namespaced_service_account(namespace, {"metadata": {"name": "reader"}})
        rbac.create_namespaced_role(
            namespace,
            {
                "metadata": {"name": "cm-get"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
            },
        )
        rbac.create_namespaced_role_binding(
            namespace, account_binding("reader-cm-get", "Role", "cm-get", "reader", namespace)
        )
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "readable"}})
        token = core.create_namespaced_service_account_token(
            "reader", namespace, {"spec": {"expirationSeconds": 600}}
        ).status.token
        host = api_client.configuration.host
        ca = api_client.configuration.ssl_ca_cert

    config = client.Configuration()
    config.host = host
    config.ssl_ca_cert = ca
    config.api_key = {"authorization": f"Bearer {token}"}
    with client.ApiClient(config) as as_reader:
        reader = client.CoreV1Api(as_reader)
        # The binding may take a moment to reach the authorizer's cache.
        wait_until(lambda: _can_get(reader, namespace), what="the reader to be allowed to get")
        with pytest.raises(ApiException) as err:
            reader.create_namespaced_config_map(namespace, {"metadata": {"name": "nope"}})
        assert err.value.status == 403


def _can_get(reader, namespace):
    try:
        return reader.read_namespaced_config_map("readable", namespace) is not None
    except ApiException as err:
        if err.status == 403:
            return False
        raise


def test_a_deploy_says_no_container_runs_only_where_every_node_is_kwoks(cluster):
    kubectl = binaries.kubectl()
    assert deploy.no_container_runs(kubectl, cluster.kubeconfig)  # the local cluster's kwok node
    # A Node kwok does not manage (as a real kubelet's would be); cordoned and tainted, so that
    # nothing of the other tests on this cluster is scheduled to it meanwhile.
    node = client.V1Node(
        metadata=client.V1ObjectMeta(name=f"real-{uuid.uuid4().hex[:8]}"),
        spec=client.V1NodeSpec(
            unschedulable=True,
            taints=[client.V1Taint(key="e2e.example.com/real", effect="NoSchedule")],
        ),
    )
    with cluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        core.create_node(node)
        try:
            assert not deploy.no_container_runs(kubectl, cluster.kubeconfig)
        finally:
            core.delete_node(node.metadata.name)


def test_kwok_manages_only_the_nodes_annotated_for_it(cluster):
    # A real kubelet's Node must stay its kubelet's: kwok takes only the Nodes annotated
    # kwok.x-k8s.io/node=fake. The plain Node is created first, so kwok, which handles the
    # Nodes' events in order, has seen it by the time it reports the annotated one Ready.
    suffix = uuid.uuid4().hex[:8]

    def node(name: str, annotations: dict[str, str]) -> client.V1Node:
        return client.V1Node(
            metadata=client.V1ObjectMeta(name=name, annotations=annotations),
            spec=client.V1NodeSpec(
                unschedulable=True,
                taints=[client.V1Taint(key="e2e.example.com/real", effect="NoSchedule")],
            ),
        )

    plain, fake = f"real-{suffix}", f"fake-{suffix}"
    with cluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        core.create_node(node(plain, {}))
        core.create_node(node(fake, {components.KWOK_NODE: "fake"}))
        try:

            def ready(name: str) -> bool:
                conditions = core.read_node(name).status.conditions or []
                return any(c.type == "Ready" and c.status == "True" for c in conditions)

            wait_until(lambda: ready(fake), what=f"kwok to report {fake} Ready")
            assert not core.read_node(plain).status.conditions
        finally:
            core.delete_node(plain)
            core.delete_node(fake)


def test_a_deploy_by_a_user_who_may_not_list_nodes_is_not_refused_for_it(
    cluster, namespace, tmp_path
):
    with cluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        core.create_namespaced_service_account(namespace, {"metadata": {"name": "deployer"}})
        token = core.create_namespaced_service_account_token(
            "deployer", namespace, {"spec": {"expirationSeconds": 600}}
        ).status.token
        server, ca = api_client.configuration.host, api_client.configuration.ssl_ca_cert
    kubeconfig = tmp_path / "deployer.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": server, "certificate-authority": ca}}
                ],
                "users": [{"name": "deployer", "user": {"token": token}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "deployer"}}],
                "current-context": "c",
            }
        )
    )
    assert not deploy.no_container_runs(binaries.kubectl(), kubeconfig)
