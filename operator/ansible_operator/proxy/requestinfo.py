"""What an API request is about, read from its method, path and query alone.

A port of the parts of the API server's RequestInfoFactory the proxy needs: resource requests
(``/api/v1/...``, ``/apis/<group>/<version>/...``) yield group, version, namespace, resource,
name, subresource and verb; anything else (discovery, ``/version``, ``/openapi``) is a
non-resource request that the proxy forwards untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote

# Subresources of a Namespace: /api/v1/namespaces/<name>/status is the namespace's, not a kind.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_WATCH_VALUES = frozenset({"true", "1"})


@dataclass(frozen=True)
class RequestInfo:
    is_resource: bool
    verb: str = ""  # get list watch create update patch delete deletecollection (or the method)
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    name: str = ""
    subresource: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def in_namespace_path(self) -> bool:
        """The path names a namespace the object lives in (a Namespace itself does not)."""
        return bool(self.namespace) and self.resource != "namespaces"


NON_RESOURCE = RequestInfo(is_resource=False)


def parse(method: str, path: str, query: Mapping[str, str] | None = None) -> RequestInfo:
    query = query or {}
    parts = [unquote(p) for p in path.strip("/").split("/") if p]
    if not parts:
        return NON_RESOURCE
    if parts[0] == "api":
        if len(parts) < 3:  # /api, /api/v1: discovery
            return NON_RESOURCE
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis":
        if len(parts) < 4:  # /apis, /apis/<group>, /apis/<group>/<version>
            return NON_RESOURCE
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return NON_RESOURCE

    watch_prefix = False
    if rest[0] == "watch":  # the deprecated /watch/ path prefix
        watch_prefix = True
        rest = rest[1:]
        if not rest:
            return NON_RESOURCE

    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]

    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 else ""

    method = method.upper()
    if watch_prefix or (method == "GET" and query.get("watch", "").lower() in _WATCH_VALUES):
        verb = "watch"
    elif method in ("GET", "HEAD"):
        verb = "get" if name else "list"
    elif method == "POST":
        verb = "create"
    elif method == "PUT":
        verb = "update"
    elif method == "PATCH":
        verb = "patch"
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = method.lower()
    return RequestInfo(
        is_resource=True,
        verb=verb,
        group=group,
        version=version,
        namespace=namespace,
        resource=resource,
        name=name,
        subresource=subresource,
    )
