"""The kubeconfig an Ansible run is given: how the role's kubernetes.core modules reach the API.

It points at the operator's API proxy on loopback, on the port the proxy really listens on
(upstream always wrote 8888), and carries the run's own bearer token, which tells the proxy whom
the run acts for; the operator's credentials never reach the role. It is written fresh for
each run, readable by the operator's user only, and removed when the run ends.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

CLUSTER = "proxy-server"
USER = "admin/proxy-server"


def render(*, port: int, token: str, owner_namespace: str = "", host: str = "127.0.0.1") -> dict:
    context = f"{owner_namespace}/{CLUSTER}"  # upstream's context name; no default namespace
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CLUSTER, "cluster": {"server": f"http://{host}:{port}"}}],
        "users": [{"name": USER, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": CLUSTER, "user": USER}}],
        "current-context": context,
    }


def write(
    path: Path, *, port: int, token: str, owner_namespace: str = "", host: str = "127.0.0.1"
) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(
            render(port=port, token=token, owner_namespace=owner_namespace, host=host),
            f,
            sort_keys=False,
        )
    return path
