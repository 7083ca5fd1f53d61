"""Reading an API request's target from its method and path, as the API server does."""

from __future__ import annotations

import pytest

from ansible_operator.proxy.requestinfo import RequestInfo, parse


def r(verb, group="", version="v1", namespace="", resource="", name="", subresource=""):
    return RequestInfo(True, verb, group, version, namespace, resource, name, subresource)


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        (
            "GET",
            "/api/v1/namespaces/a/configmaps/b",
            {},
            r("get", namespace="a", resource="configmaps", name="b"),
        ),
        (
            "GET",
            "/api/v1/namespaces/a/configmaps",
            {},
            r("list", namespace="a", resource="configmaps"),
        ),
        ("GET", "/api/v1/configmaps", {}, r("list", resource="configmaps")),
        (
            "GET",
            "/api/v1/namespaces/a/configmaps",
            {"watch": "true"},
            r("watch", namespace="a", resource="configmaps"),
        ),
        (
            "GET",
            "/api/v1/namespaces/a/configmaps",
            {"watch": "1"},
            r("watch", namespace="a", resource="configmaps"),
        ),
        (
            "GET",
            "/api/v1/watch/namespaces/a/configmaps",
            {},
            r("watch", namespace="a", resource="configmaps"),
        ),
        (
            "POST",
            "/apis/apps/v1/namespaces/a/deployments",
            {},
            r("create", "apps", namespace="a", resource="deployments"),
        ),
        (
            "PUT",
            "/apis/apps/v1/namespaces/a/deployments/d",
            {},
            r("update", "apps", namespace="a", resource="deployments", name="d"),
        ),
        (
            "PATCH",
            "/apis/apps/v1/namespaces/a/deployments/d/scale",
            {},
            r(
                "patch",
                "apps",
                namespace="a",
                resource="deployments",
                name="d",
                subresource="scale",
            ),
        ),
        (
            "PATCH",
            "/apis/x.io/v1beta1/namespaces/a/things/t/status",
            {},
            r("patch", "x.io", "v1beta1", "a", "things", "t", "status"),
        ),
        (
            "DELETE",
            "/api/v1/namespaces/a/pods/p",
            {},
            r("delete", namespace="a", resource="pods", name="p"),
        ),
        (
            "DELETE",
            "/api/v1/namespaces/a/pods",
            {},
            r("deletecollection", namespace="a", resource="pods"),
        ),
        (
            "GET",
            "/api/v1/namespaces/a/pods/p/log",
            {"follow": "true"},
            r("get", namespace="a", resource="pods", name="p", subresource="log"),
        ),
        (
            "POST",
            "/api/v1/namespaces/a/pods/p/exec",
            {},
            r("create", namespace="a", resource="pods", name="p", subresource="exec"),
        ),
        # A Namespace is addressed by itself: its name is also its namespace.
        ("POST", "/api/v1/namespaces", {}, r("create", resource="namespaces")),
        (
            "GET",
            "/api/v1/namespaces/a",
            {},
            r("get", namespace="a", resource="namespaces", name="a"),
        ),
        (
            "PUT",
            "/api/v1/namespaces/a/finalize",
            {},
            r("update", namespace="a", resource="namespaces", name="a", subresource="finalize"),
        ),
        (
            "PATCH",
            "/api/v1/namespaces/a/status",
            {},
            r("patch", namespace="a", resource="namespaces", name="a", subresource="status"),
        ),
        (
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            {},
            r("create", "rbac.authorization.k8s.io", resource="clusterroles"),
        ),
        (
            "GET",
            "/api/v1/namespaces/a/configmaps/my%2Fodd",
            {},
            r("get", namespace="a", resource="configmaps", name="my/odd"),
        ),
    ],
)
def test_resource_requests(method, path, query, expected):
    assert parse(method, path, query) == expected


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/api",
        "/api/v1",
        "/apis",
        "/apis/apps",
        "/apis/apps/v1",
        "/version",
        "/openapi/v2",
        "/healthz",
        "/api/v1/watch",
    ],
)
def test_non_resource_requests(path):
    assert parse("GET", path).is_resource is False


def test_namespaced_path():
    assert parse("POST", "/api/v1/namespaces/a/configmaps").in_namespace_path
    assert not parse("POST", "/api/v1/namespaces").in_namespace_path
    assert not parse("GET", "/api/v1/namespaces/a").in_namespace_path
    assert parse("GET", "/apis/apps/v1/deployments").api_version == "apps/v1"
    assert parse("GET", "/api/v1/pods").api_version == "v1"
