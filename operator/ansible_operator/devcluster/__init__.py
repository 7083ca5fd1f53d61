"""A real Kubernetes control plane on loopback for development and tests, without Docker.

Other layers use the names below; `binaries`, `gobuild`, `processes` and `target` are
namespaces, and `command`, `image_command` and `bundle_validator` are the command lines'
(`add_parser`).
"""

from ansible_operator.devcluster import (
    binaries,
    bundle_validator,
    command,
    gobuild,
    image_command,
    processes,
    target,
)
from ansible_operator.devcluster.binaries import KUBERNETES_VERSION
from ansible_operator.devcluster.cluster import ClusterError, DevCluster
from ansible_operator.devcluster.target import Target

__all__ = [
    "KUBERNETES_VERSION",
    "ClusterError",
    "DevCluster",
    "Target",
    "binaries",
    "bundle_validator",
    "command",
    "gobuild",
    "image_command",
    "processes",
    "target",
]
