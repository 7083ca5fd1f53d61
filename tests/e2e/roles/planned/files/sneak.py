"""Creates a ConfigMap through the run's kubeconfig, as a command task would that ignores
Ansible's check mode, then sends what no dry run can cover (a POST outside the resource paths):
under `ansible-operator plan` the proxy makes the first a dry run and refuses the second."""

import sys

from kubernetes import client, config
from kubernetes.client.rest import ApiException

name, namespace = sys.argv[1:3]
config.load_kube_config()  # KUBECONFIG: the run's, which points at the operator's proxy
body = {"metadata": {"name": name}, "data": {"written": "around check mode"}}
client.CoreV1Api().create_namespaced_config_map(namespace, body)
try:
    client.ApiClient().call_api("/version", "POST", auth_settings=["BearerToken"])
except ApiException as err:
    print(f"POST /version: {err.status}")
