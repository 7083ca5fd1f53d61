"""Who may scrape ``/metrics`` with ``--metrics-require-rbac``: controller-runtime's
``filters.WithAuthenticationAndAuthorization``, as an aiohttp middleware.

A scrape's bearer token is authenticated with a TokenReview, and the user it names is
authorized with a SubjectAccessReview for the request's verb (its method, lower-cased) on its
non-resource path. No token or a rejected one is 401, a denial 403, an API server that cannot
answer 500. Answers are cached as controller-runtime caches them (authentication 1 minute,
allowed 5 minutes, denied 30 seconds), so a Prometheus scraping every few seconds costs the API
server two requests per interval, not per scrape.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from ansible_operator.kube import ApiError, Unreachable

log = logging.getLogger("metrics")

AUTHENTICATION_TTL = 60.0
ALLOWED_TTL = 300.0
DENIED_TTL = 30.0
CACHE_SIZE = 1024


class TTLCache[K: Hashable, V]:
    """Answers kept for a time each; expired ones are dropped when the cache fills."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._entries: dict[K, tuple[float, V]] = {}

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] <= self._clock():
            return None
        return entry[1]

    def put(self, key: K, value: V, ttl: float) -> None:
        now = self._clock()
        if len(self._entries) >= CACHE_SIZE:
            self._entries = {k: e for k, e in self._entries.items() if e[0] > now}
            if len(self._entries) >= CACHE_SIZE:  # all fresh: forget the oldest
                del self._entries[next(iter(self._entries))]
        self._entries[key] = (now + ttl, value)


@dataclass(frozen=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def from_review(cls, user: dict[str, Any]) -> User:
        extra = user.get("extra") or {}
        return cls(
            name=user.get("username", ""),
            uid=user.get("uid", ""),
            groups=tuple(user.get("groups") or ()),
            extra=tuple(sorted((k, tuple(v or ())) for k, v in extra.items())),
        )


def bearer_token(authorization: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (the scheme in any case)."""
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


@dataclass(frozen=True)
class Authentication:
    user: User | None  # None: the token was rejected


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


class ApiRequester(Protocol):
    """What the reviews need of a KubeClient (tests pass an in-memory one)."""

    async def request(self, method: str, path: str, *, body: Any = None) -> Any: ...


class ReviewFailed(Exception):
    """The API server could not answer a review."""


class MetricsAuth:
    """TokenReview and SubjectAccessReview against the API server, cached."""

    def __init__(
        self, client: ApiRequester, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._client = client
        self._users: TTLCache[str, Authentication] = TTLCache(clock=clock)
        self._decisions: TTLCache[tuple[User, tuple[str, ...]], Decision] = TTLCache(clock=clock)
        # Whether a request its path's review denied may go on as its user, who the handler then
        # checks itself (the run records: runs.access); None: never.
        self.scoped: Callable[[web.Request, User], bool] | None = None

    async def _create(self, path: str, review: dict[str, Any]) -> dict[str, Any]:
        try:
            answer = await self._client.request("POST", path, body=review)
        except (ApiError, Unreachable) as err:
            raise ReviewFailed(str(err)) from err
        return dict(answer.get("status") or {})

    async def authenticate(self, token: str) -> User | None:
        """The token's user, or None if the API server does not accept the token."""
        key = hashlib.sha256(token.encode()).hexdigest()  # no raw tokens kept in memory
        cached = self._users.get(key)
        if cached is not None:
            return cached.user
        status = await self._create(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": token},
            },
        )
        user = User.from_review(status.get("user") or {}) if status.get("authenticated") else None
        self._users.put(key, Authentication(user), AUTHENTICATION_TTL)
        return user

    async def authorize(self, user: User, verb: str, path: str) -> Decision:
        """May `user` `verb` the non-resource URL `path`?"""
        return await self._review(user, {"nonResourceAttributes": {"path": path, "verb": verb}})

    async def authorize_resource(
        self,
        user: User,
        verb: str,
        group: str,
        version: str,
        resource: str,
        namespace: str,
        name: str = "",
    ) -> Decision:
        """May `user` `verb` the resource (a kind's plural) in `namespace` ("" for all), or the
        object `name` of it?"""
        attributes = {"verb": verb, "group": group, "version": version, "resource": resource,
                      "namespace": namespace, "name": name}  # fmt: skip
        return await self._review(user, {"resourceAttributes": attributes})

    async def _review(self, user: User, attributes: dict[str, Any]) -> Decision:
        key = (user, tuple(f"{k}={v}" for what in attributes.values() for k, v in what.items()))
        cached = self._decisions.get(key)
        if cached is not None:
            return cached
        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups), **attributes}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        status = await self._create(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": spec,
            },
        )
        decision = Decision(bool(status.get("allowed")), status.get("reason", ""))
        self._decisions.put(key, decision, ALLOWED_TTL if decision.allowed else DENIED_TTL)
        return decision

    @web.middleware
    async def middleware(
        self,
        request: web.Request,
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    ) -> web.StreamResponse:
        token = bearer_token(request.headers.get("Authorization", ""))
        try:
            user = await self.authenticate(token) if token else None
        except ReviewFailed as err:
            log.error("Authentication failed", extra={"error": str(err)})
            return web.Response(status=500, text="Authentication failed\n")
        if user is None:
            return web.Response(status=401, text="Unauthorized\n")
        try:
            decision = await self.authorize(user, request.method.lower(), request.path)
        except ReviewFailed as err:
            message = f"Authorization for user {user.name} failed"
            log.error(message, extra={"error": str(err)})
            return web.Response(status=500, text=message + "\n")
        if not decision.allowed and not (self.scoped and self.scoped(request, user)):
            log.debug("Authorization denied", extra={"user": user.name, "reason": decision.reason})
            return web.Response(status=403, text=f"Authorization denied for user {user.name}\n")
        return await handler(request)
