"""The kubeconfig an Ansible run is given: how the role's kubernetes.core modules reach the API.

It is written fresh for each run, readable by the operator's user only, and removed when the run
ends. Until the owner-injecting proxy sits in between, it carries the operator's own credentials.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import yaml

from .config import Credentials


def render(creds: Credentials, *, namespace: str | None = None) -> dict:
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    cluster: dict[str, object] = {"server": creds.server}
    if creds.insecure:
        cluster["insecure-skip-tls-verify"] = True
    elif creds.ca_data:
        cluster["certificate-authority-data"] = b64(creds.ca_data)
    user: dict[str, object] = {}
    token = creds.bearer_token()
    if token:
        user["token"] = token
    if creds.cert_data and creds.key_data:
        user["client-certificate-data"] = b64(creds.cert_data)
        user["client-key-data"] = b64(creds.key_data)
    if creds.username is not None:
        user.update(username=creds.username, password=creds.password or "")
    context: dict[str, object] = {"cluster": "operator", "user": "operator"}
    if namespace:
        context["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "operator", "cluster": cluster}],
        "users": [{"name": "operator", "user": user}],
        "contexts": [{"name": "operator", "context": context}],
        "current-context": "operator",
    }


def write(path: Path, creds: Credentials, *, namespace: str | None = None) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(render(creds, namespace=namespace), f, sort_keys=False)
    return path
