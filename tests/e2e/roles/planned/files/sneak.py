"""Creates a ConfigMap through the run's kubeconfig, as a command task would that ignores
Ansible's check mode: under `ansible-operator plan` the proxy must make it a dry run."""

import sys

from kubernetes import client, config

name, namespace = sys.argv[1:3]
config.load_kube_config()  # KUBECONFIG: the run's, which points at the operator's proxy
body = {"metadata": {"name": name}, "data": {"written": "around check mode"}}
client.CoreV1Api().create_namespaced_config_map(namespace, body)
