"""The scrape filter of --metrics-require-rbac: answers, caching and failures, against an
in-memory API that answers TokenReviews and SubjectAccessReviews."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from ansible_operator.kube.client import Unreachable
from ansible_operator.kube.reviews import (
    ALLOWED_TTL,
    AUTHENTICATION_TTL,
    DENIED_TTL,
    MetricsAuth,
    TTLCache,
    User,
    bearer_token,
)

PROMETHEUS = "system:serviceaccount:monitoring:prometheus"


class FakeReviews:
    """Tokens map to users; ``allowed`` holds (user, verb, path) granted. Counts each review."""

    def __init__(self) -> None:
        self.tokens = {"good": PROMETHEUS, "nobody": "system:serviceaccount:x:nobody"}
        self.allowed = {(PROMETHEUS, "get", "/metrics")}
        self.calls: list[str] = []
        self.down = False

    async def request(self, method: str, path: str, *, body: Any = None) -> Any:
        assert method == "POST"
        self.calls.append(body["kind"])
        if self.down:
            raise Unreachable("connection refused")
        spec = body["spec"]
        if body["kind"] == "TokenReview":
            user = self.tokens.get(spec["token"])
            if user is None:
                return {"status": {"authenticated": False, "error": "invalid token"}}
            return {
                "status": {
                    "authenticated": True,
                    "user": {"username": user, "uid": "u1", "groups": ["system:authenticated"]},
                }
            }
        attrs = spec["nonResourceAttributes"]
        assert spec["groups"] == ["system:authenticated"] and spec["uid"] == "u1"
        allowed = (spec["user"], attrs["verb"], attrs["path"]) in self.allowed
        return {"status": {"allowed": allowed, "reason": "" if allowed else "no rule"}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _scrape(auth: MetricsAuth, token: str | None, method: str = "GET") -> tuple[int, str]:
    async def metrics(_: web.Request) -> web.Response:
        return web.Response(text="metrics body")

    app = web.Application(middlewares=[auth.middleware])
    app.router.add_route("*", "/metrics", metrics)
    async with TestClient(TestServer(app)) as http:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        resp = await http.request(method, "/metrics", headers=headers)
        return resp.status, await resp.text()


def scrape(auth: MetricsAuth, token: str | None, method: str = "GET") -> tuple[int, str]:
    return asyncio.run(_scrape(auth, token, method))


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("BEARER  abc ", "abc"),
        ("Bearer", None),
        ("Bearer ", None),
        ("Basic dXNlcjpwYXNz", None),
        ("", None),
    ],
)
def test_bearer_tokens(header, token):
    assert bearer_token(header) == token


def test_answers():
    api = FakeReviews()
    auth = MetricsAuth(api)
    assert scrape(auth, None) == (401, "Unauthorized\n")
    assert api.calls == []  # no token: nothing to review
    assert scrape(auth, "forged")[0] == 401
    assert scrape(auth, "nobody") == (
        403,
        "Authorization denied for user system:serviceaccount:x:nobody\n",
    )
    assert scrape(auth, "good") == (200, "metrics body")
    # The verb is the method, lower-cased: the rule grants get only.
    assert scrape(auth, "good", "POST")[0] == 403


def test_answers_are_cached_for_controller_runtimes_times():
    api, clock = FakeReviews(), Clock()
    auth = MetricsAuth(api, clock=clock)
    for _ in range(3):
        assert scrape(auth, "good")[0] == 200
        assert scrape(auth, "nobody")[0] == 403
        assert scrape(auth, "forged")[0] == 401
    assert sorted(api.calls) == ["SubjectAccessReview"] * 2 + ["TokenReview"] * 3

    api.calls.clear()
    clock.now += DENIED_TTL + 1  # a denial is asked again after 30 s, an allowance is not
    assert scrape(auth, "nobody")[0] == 403
    assert scrape(auth, "good")[0] == 200
    assert api.calls == ["SubjectAccessReview"]

    api.calls.clear()
    clock.now += AUTHENTICATION_TTL  # tokens are reviewed again after a minute
    assert scrape(auth, "good")[0] == 200
    assert api.calls == ["TokenReview"]

    api.calls.clear()
    api.allowed.clear()  # the rule is removed: it still holds until the allowance expires
    assert scrape(auth, "good")[0] == 200
    clock.now += ALLOWED_TTL
    assert scrape(auth, "good")[0] == 403


def test_an_api_server_that_cannot_answer_is_500_and_not_cached():
    api = FakeReviews()
    auth = MetricsAuth(api)
    api.down = True
    assert scrape(auth, "good") == (500, "Authentication failed\n")
    api.down = False
    assert scrape(auth, "good")[0] == 200
    api.down = True
    assert scrape(auth, "good")[0] == 200  # both answers cached now
    auth = MetricsAuth(api)
    api.down = False
    asyncio.run(auth.authenticate("good"))
    api.down = True
    assert scrape(auth, "good") == (500, f"Authorization for user {PROMETHEUS} failed\n")


def test_the_cache_forgets_expired_answers_first_when_full(monkeypatch):
    monkeypatch.setattr("ansible_operator.kube.reviews.CACHE_SIZE", 3)
    clock = Clock()
    cache: TTLCache[str, int] = TTLCache(clock=clock)
    cache.put("short", 1, 10)
    cache.put("a", 2, 100)
    cache.put("b", 3, 100)
    clock.now += 20
    cache.put("c", 4, 100)  # full: the expired entry goes
    assert [cache.get(k) for k in ("a", "b", "c")] == [2, 3, 4]
    cache.put("d", 5, 100)  # full of fresh ones: the oldest goes
    assert [cache.get(k) for k in ("a", "b", "c", "d")] == [None, 3, 4, 5]


def test_users_from_token_reviews_are_keys():
    user = User.from_review(
        {"username": "u", "uid": "1", "groups": ["g"], "extra": {"scopes": ["b", "a"]}}
    )
    assert user == User("u", "1", ("g",), (("scopes", ("b", "a")),))
