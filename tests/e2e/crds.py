"""CRDs for the tests: the small test kinds' definitions, and the one way to install CRDs and
wait until the API server serves them (Established)."""

from __future__ import annotations

from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from .waiting import wait_until

GROUP = "test.example.com"
VERSION = "v1alpha1"


def kind_crd(kind: str) -> dict:
    """A namespaced kind of GROUP/VERSION with a status subresource and any spec."""
    plural = kind.lower() + "s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


def install_crds(api_client: client.ApiClient, crds: list[Any]) -> list[str]:
    """Create each CRD, or bring an existing one up to date, then wait until every one is
    Established; their names."""
    ext = client.ApiextensionsV1Api(api_client)
    names = [crd["metadata"]["name"] for crd in crds]
    for crd in crds:
        try:
            ext.create_custom_resource_definition(crd)
        except ApiException as err:
            if err.status != 409:
                raise
            _replace(ext, crd)
    for name in names:

        def established(name: str = name) -> bool:
            obj = ext.read_custom_resource_definition(name)
            return any(
                c.type == "Established" and c.status == "True"
                for c in ((obj.status.conditions if obj.status else None) or [])
            )

        wait_until(established, what=f"CRD {name} Established")
    return names


def _replace(ext: client.ApiextensionsV1Api, crd: Any) -> None:
    """The CRD as given (a session sharing the cluster may have installed an older one); a
    concurrent write in between is retried. An unchanged CRD is left as it is by the server."""
    name = crd["metadata"]["name"]

    def replaced() -> bool:
        current: Any = ext.read_custom_resource_definition(name)
        body: Any = {
            **crd,
            "metadata": {**crd["metadata"], "resourceVersion": current.metadata.resource_version},
        }
        try:
            ext.replace_custom_resource_definition(name, body)
        except ApiException as err:
            if err.status == 409:
                return False
            raise
        return True

    wait_until(replaced, what=f"CRD {name} replaced", timeout=60)


def remove_crds(api_client: client.ApiClient, names: list[str]) -> None:
    ext = client.ApiextensionsV1Api(api_client)
    for name in names:
        try:
            ext.delete_custom_resource_definition(name)
        except ApiException as err:
            if err.status != 404:
                raise
