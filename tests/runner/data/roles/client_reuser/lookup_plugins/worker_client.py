"""In the worker, before its module runs: a Kubernetes client as a kubernetes.core lookup leaves
it (in kubernetes.core's pool of clients), a default configuration, and an open socket."""

import socket

from ansible.plugins.lookup import LookupBase

KEPT = []


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        from ansible_collections.kubernetes.core.plugins.module_utils.k8s import client as k8s
        from kubernetes import client

        configuration = client.Configuration(host="https://set-by-the-worker.invalid")
        client.Configuration.set_default(configuration)
        k8s._pool["set-by-the-worker"] = client.ApiClient(configuration)
        KEPT.append(socket.socket())
        return ["set"]
