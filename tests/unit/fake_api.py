"""An in-memory API server with the behaviour the reconciler relies on, for unit tests.

As the real one: every write bumps ``metadata.resourceVersion``; a status PUT with a stale
resourceVersion is a 409 and replaces only ``.status``; a JSON patch whose ``test`` fails is a
422; a missing object is a 404; deleting an object that has finalizers only sets its
``deletionTimestamp``, and removing its last finalizer then deletes it; spec changes bump
``metadata.generation``. ``before`` hooks run before a request is served, so a test can make
another writer act between two steps of the reconciler.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ansible_operator.kube.client import ApiError, ResourceInfo, Unreachable, group_version_path

_OBJECT_PATH = re.compile(
    r"^/apis?/(?:(?P<group>[^/]+)/)?(?P<version>v[^/]*)"
    r"(?:/namespaces/(?P<namespace>[^/]+))?/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?"
    r"(?P<status>/status)?$"
)

_VERBS = ["get", "list", "watch", "create", "update", "patch", "delete"]


@dataclass
class Request:
    method: str
    path: str
    body: Any


Hook = Callable[[Request], None]


class FakeApi:
    def __init__(self, *resources: ResourceInfo) -> None:
        self.resources = {(r.group, r.version, r.plural): r for r in resources}
        self.objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []  # Events POSTed, in order
        self.requests: list[Request] = []
        self.responses: Counter[tuple[str, str]] = Counter()  # as KubeClient's: method, code
        self.before: list[Hook] = []
        self.unreachable = False
        self.closed = False
        self._version = 0
        self._uid = 0

    async def close(self) -> None:  # as KubeClient's: its connections, when the operator stops
        self.closed = True

    # -- what tests do to the objects, as a user or another controller would -------------------

    def create(self, resource: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        self._uid += 1
        meta.setdefault("uid", f"uid-{self._uid}")
        meta["generation"] = 1
        meta["resourceVersion"] = self._next_version()
        self.objects[self._key(resource, meta.get("namespace") or "", meta["name"])] = obj
        return copy.deepcopy(obj)

    def get_object(self, resource: ResourceInfo, namespace: str, name: str) -> dict[str, Any]:
        return copy.deepcopy(self.objects[self._key(resource, namespace, name)])

    def exists(self, resource: ResourceInfo, namespace: str, name: str) -> bool:
        return self._key(resource, namespace, name) in self.objects

    def edit(
        self, resource: ResourceInfo, namespace: str, name: str, change: Callable[[dict], None]
    ) -> None:
        """Change an object in place; a spec change bumps its generation."""
        obj = self.objects[self._key(resource, namespace, name)]
        spec = copy.deepcopy(obj.get("spec"))
        change(obj)
        if obj.get("spec") != spec:
            obj["metadata"]["generation"] += 1
        obj["metadata"]["resourceVersion"] = self._next_version()

    def delete(self, resource: ResourceInfo, namespace: str, name: str) -> None:
        key = self._key(resource, namespace, name)
        obj = self.objects[key]
        if obj["metadata"].get("finalizers"):
            obj["metadata"].setdefault("deletionTimestamp", "2026-01-02T03:04:05Z")
            obj["metadata"]["resourceVersion"] = self._next_version()
        else:
            del self.objects[key]

    # -- the client's verbs ----------------------------------------------------------------------

    async def get(self, path: str, params: dict[str, str] | None = None) -> Any:
        return await self.request("GET", path, params=params)

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = "application/json",
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        code = "<error>"
        try:
            answer = self._answer(method, path, body, content_type)
        except ApiError as err:
            code = str(err.status)
            raise
        else:
            code = "200"
            return answer
        finally:
            self.responses[method, code] += 1

    def _answer(self, method: str, path: str, body: Any, content_type: str) -> Any:
        request = Request(method, path, copy.deepcopy(body))
        self.requests.append(request)
        for hook in list(self.before):
            hook(request)
        if self.unreachable:
            raise Unreachable(f"{method} {path}: connection refused")
        if method == "POST" and path.endswith("/events"):
            self.events.append(copy.deepcopy(body))
            return copy.deepcopy(body)
        listing = self._discovery(path) if method == "GET" else None
        if listing is not None:
            return listing
        match = _OBJECT_PATH.match(path)
        if match is None or match["name"] is None:
            raise ApiError(404, "NotFound", f"the fake serves no {path}")
        resource = self.resources.get((match["group"] or "", match["version"], match["plural"]))
        if resource is None:
            raise ApiError(404, "NotFound", f"the server could not find {path}")
        key = self._key(resource, match["namespace"] or "", match["name"])
        obj = self.objects.get(key)
        if obj is None:
            raise ApiError(404, "NotFound", f'{resource.plural} "{match["name"]}" not found')
        if method == "GET":
            return copy.deepcopy(obj)
        if method == "PUT" and match["status"]:
            return self._put_status(obj, body)
        if method == "PATCH" and content_type == "application/json-patch+json":
            return self._json_patch(key, obj, body)
        raise ApiError(405, "MethodNotAllowed", f"the fake does not serve {method} {path}")

    def _discovery(self, path: str) -> dict[str, Any] | None:
        """The discovery document of a group-version the fake serves, as the API server's."""
        served = [
            r for r in self.resources.values() if group_version_path(r.group, r.version) == path
        ]
        if not served:
            return None
        return {
            "resources": [
                {"name": r.plural, "kind": r.kind, "namespaced": r.namespaced, "verbs": _VERBS}
                for r in served
            ]
        }

    # -- requests served ------------------------------------------------------------------------

    def writes(self, method: str, suffix: str = "") -> list[Request]:
        return [r for r in self.requests if r.method == method and r.path.endswith(suffix)]

    def _put_status(self, obj: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        sent = body["metadata"].get("resourceVersion")
        if sent != obj["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "the object has been modified; please apply again")
        obj["status"] = copy.deepcopy(body.get("status"))
        obj["metadata"]["resourceVersion"] = self._next_version()
        return copy.deepcopy(obj)

    def _json_patch(
        self, key: tuple[str, str, str, str], obj: dict[str, Any], ops: list[dict[str, Any]]
    ) -> dict[str, Any]:
        patched = copy.deepcopy(obj)
        for op in ops:
            *parents, last = [p for p in op["path"].split("/")[1:]]
            target: Any = patched
            for part in parents:
                target = target[int(part)] if isinstance(target, list) else target[part]
            if op["op"] == "test":
                current = target[int(last)] if isinstance(target, list) else target.get(last)
                if current != op["value"]:
                    raise ApiError(422, "Invalid", f"test failed at {op['path']}")
            elif op["op"] == "add" and isinstance(target, list):
                target.insert(len(target) if last == "-" else int(last), op["value"])
            elif op["op"] == "add":
                target[last] = op["value"]
            elif op["op"] == "remove":
                del target[int(last) if isinstance(target, list) else last]
            else:
                raise ApiError(422, "Invalid", f"the fake does not apply {op['op']}")
        meta = patched["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            del self.objects[key]
            return patched
        meta["resourceVersion"] = self._next_version()
        self.objects[key] = patched
        return copy.deepcopy(patched)

    def _key(self, resource: ResourceInfo, namespace: str, name: str) -> tuple[str, str, str, str]:
        return (resource.group, resource.plural, namespace if resource.namespaced else "", name)

    def _next_version(self) -> str:
        self._version += 1
        return str(self._version)
