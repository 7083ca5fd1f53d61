"""Talking to the Kubernetes API: credentials and a small async client.

Other layers use the names below; `kubeconfig` (what a run is given) and `portforward` (a
port-forward to a Pod) are namespaces.
"""

from ansible_operator.kube import jsontext, kubeconfig, portforward
from ansible_operator.kube.api import Api
from ansible_operator.kube.client import (
    ApiError,
    KubeClient,
    ResourceInfo,
    Unreachable,
    UntrustedServer,
    auth_headers,
    list_pages,
    reason,
)
from ansible_operator.kube.config import (
    SERVICE_ACCOUNT_DIR,
    ConfigError,
    Credentials,
    from_kubeconfig,
)
from ansible_operator.kube.config import load as load_credentials
from ansible_operator.kube.discovery import Discovery, ServedResource
from ansible_operator.kube.informer import Informer, Skipped
from ansible_operator.kube.reviews import MetricsAuth, ReviewFailed, User

__all__ = [
    "SERVICE_ACCOUNT_DIR",
    "Api",
    "ApiError",
    "ConfigError",
    "Credentials",
    "Discovery",
    "Informer",
    "KubeClient",
    "MetricsAuth",
    "ResourceInfo",
    "ReviewFailed",
    "ServedResource",
    "Skipped",
    "Unreachable",
    "UntrustedServer",
    "User",
    "auth_headers",
    "from_kubeconfig",
    "jsontext",
    "kubeconfig",
    "list_pages",
    "load_credentials",
    "portforward",
    "reason",
]
