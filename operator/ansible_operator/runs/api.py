"""The runs API: the run records (``runs``) as JSON, on the metrics endpoint and behind its
authentication (``--metrics-require-rbac``: a token the API server accepts); a user allowed
``get`` on the path as a non-resource URL reads every record, any other the records of the CRs
they may read (``runs_access``).

    GET /runs                                         each kind's CRs with their last run
    GET /runs/{group}/{version}/{kind}                the kind's runs, newest first
    GET /runs/{group}/{version}/{kind}/{ns}/{name}    one CR's runs ("_" for no namespace)
    GET /runs/{group}/{version}/{kind}/{ns}/{name}/{id}   one run, with its tasks and output
    GET /runs/ui                                      the same as a web page (``runs_page``)

Every answer says which replica it comes from: each replica keeps the records of the runs it
ran, and a client that wants them all asks each replica.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from ansible_operator.runs import page as runs_page
from ansible_operator.runs.access import ReadableHistory, access_of
from ansible_operator.runs.history import RunHistory

Route = tuple[str, Callable[[web.Request], Awaitable[web.StreamResponse]]]
NO_NAMESPACE = "_"


def routes(history: RunHistory) -> list[Route]:
    """The GET routes of the API, for the metrics server's application; each request reads
    what its user may (``runs_access``)."""

    def readable(request: web.Request) -> ReadableHistory:
        return ReadableHistory(history, access_of(request))

    async def kinds(request: web.Request) -> web.Response:
        return _json({"replica": history.replica, "kinds": await readable(request).kinds()})

    async def of_kind(request: web.Request) -> web.Response:
        found = await readable(request).runs(*_gvk(request))
        return _json({"replica": history.replica, "runs": found})

    async def of_resource(request: web.Request) -> web.Response:
        refused = await _refused(request)
        if refused is not None:
            return refused
        found = history.runs(*_gvk(request), *_where(request))
        return _json({"replica": history.replica, "runs": found})

    async def one(request: web.Request) -> web.Response:
        refused = await _refused(request)
        if refused is not None:
            return refused
        record = history.record(*_gvk(request), *_where(request), request.match_info["id"])
        if record is None:
            return _json({"error": "no such run on this replica"}, status=404)
        return _json(record)

    base = "/runs/{group}/{version}/{kind}"
    return [
        ("/runs", kinds),
        (base, of_kind),
        (base + "/{namespace}/{name}", of_resource),
        (base + "/{namespace}/{name}/{id}", one),
        *runs_page.routes(history),
    ]


async def _refused(request: web.Request) -> web.Response | None:
    """403 for one CR's runs when the request's user may not get that CR."""
    (group, version, kind), (namespace, name) = _gvk(request), _where(request)
    if await access_of(request).may_get(group, version, kind, namespace, name):
        return None
    where = f"{namespace}/{name}" if namespace else name
    return _json({"error": f"reading the runs of {kind} {where} needs get on it"}, status=403)


def not_served(why: str) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The answer to every runs path where the records are not served: 404, saying why."""

    async def refuse(_: web.Request) -> web.Response:
        return _json({"error": why}, status=404)

    return refuse


def _gvk(request: web.Request) -> tuple[str, str, str]:
    match = request.match_info
    return match["group"], match["version"], match["kind"]


def _where(request: web.Request) -> tuple[str, str]:
    namespace = request.match_info["namespace"]
    return ("" if namespace == NO_NAMESPACE else namespace), request.match_info["name"]


def _json(body: Any, *, status: int = 200) -> web.Response:
    return web.Response(
        status=status, text=json.dumps(body, separators=(",", ":")), content_type="application/json"
    )
