"""A few HTTPS calls to the local API server with the admin client certificate.

The dev-cluster command only needs health checks and a handful of object reads and creates,
so it uses the standard library rather than importing a full Kubernetes client.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any

from ansible_operator.devcluster.certs import ClusterCerts


class LocalApi:
    def __init__(self, server: str, certs: ClusterCerts) -> None:
        self.server = server
        self._tls = ssl.create_default_context(cafile=str(certs.ca_cert))
        self._tls.load_cert_chain(str(certs.admin_cert), str(certs.admin_key))

    def request(
        self, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = 5
    ) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        req.add_header("Accept", "application/json")
        try:
            with urllib.request.urlopen(req, context=self._tls, timeout=timeout) as resp:
                return resp.status, _decode(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, _decode(err.read())

    def get(self, path: str) -> tuple[int, Any]:
        return self.request("GET", path)


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


def probe(url: str, *, tls: ssl.SSLContext | None = None, timeout: float = 2) -> bool:
    """True when ``url`` answers 200; any connection error or other status is False."""
    try:
        with urllib.request.urlopen(url, context=tls, timeout=timeout) as resp:
            return bool(resp.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def insecure_tls() -> ssl.SSLContext:
    """For the self-signed serving certificates of the controller manager and scheduler."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx
