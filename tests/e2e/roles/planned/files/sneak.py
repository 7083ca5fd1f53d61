"""Creates a ConfigMap through the run's kubeconfig, as a command task would that ignores
Ansible's check mode, then sends what no dry run can cover (a POST outside the resource paths):
under `ansible-operator plan` the proxy makes the first a dry run and refuses the second."""

import sys
import urllib.error
import urllib.request

from kubernetes import client, config

name, namespace = sys.argv[1:3]
config.load_kube_config()  # KUBECONFIG: the run's, which points at the operator's proxy
body = {"metadata": {"name": name}, "data": {"written": "around check mode"}}
client.CoreV1Api().create_namespaced_config_map(namespace, body)
settings = client.Configuration.get_default_copy()
token = settings.api_key.get("BearerToken") or settings.api_key["authorization"]  # by release
outside = urllib.request.Request(
    f"{settings.host}/version",
    data=b"{}",
    method="POST",
    headers={"Authorization": token},
)
try:
    urllib.request.urlopen(outside, timeout=30)
except urllib.error.HTTPError as err:
    print(f"POST /version: {err.code}")
