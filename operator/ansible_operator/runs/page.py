"""The runs page: the run records (``runs``) as HTML at ``/runs/ui`` on the metrics endpoint,
behind the same authentication and authorization as ``/metrics`` and the runs API.

One path, three views by query: without one, each kind's CRs with their last run; with
``kind=<group>/<version>/<Kind>&namespace=&name=``, that CR's runs; with ``&run=<id>`` too, one
run as a timeline picture (an SVG drawn on the server: a bar per task, placed by its start and
as long as it took, failed ones red, their messages under it) and its output; a running run's
view reloads itself every 2 s (a meta refresh) until it ends. One path keeps
the page apart from the API's (``/runs/{group}/...``) and needs no rule beyond theirs. The
HTML is a Jinja2 template (Jinja2 comes with ansible-core), escaped throughout; there is no
script, and every link is relative (a query, or ``ui``), so the page works as well behind the
API server's Pod proxy (``kubectl proxy``) as on the port itself.

One renderer, two sources (``RunsSource``): the operator serves its own replica's runs
(``HistorySource``: each replica keeps its own, docs/runs.md), and ``ansible-operator runs ui``
serves the same page on the user's machine from every replica's runs, merged
(``dev.runs_ui``), with a replica column and a line on each replica that did not answer. A
source is opened afresh for each page load and closed after it (``Sources``), so a merged page
is as new as the replicas' answers, and its replicas are found again at each load.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from importlib import resources
from typing import Any, Protocol

from aiohttp import web

from ansible_operator.core import timeline_layout
from ansible_operator.runs.access import ReadableHistory, access_of
from ansible_operator.runs.history import RunHistory

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Route = tuple[str, Handler]
PATH = "/runs/ui"
TEMPLATE = "page.html.j2"

# The picture's geometry, in SVG user units.
LABEL_WIDTH = 320
PLOT_WIDTH = 640
ROW_HEIGHT = 22
AXIS_HEIGHT = 24


@dataclass(frozen=True)
class Origin:
    """Where a page's runs come from: the replicas that answered, by name; when several were
    asked and merged (``merged``), each run names the one that ran it, and ``skipped`` says, a
    line each, why the others did not answer."""

    replicas: tuple[str, ...]
    skipped: tuple[str, ...] = ()
    merged: bool = False


class Unavailable(Exception):
    """The runs cannot be read just now (a replica that stopped answering): one line, shown on
    the page with 502."""


class RunsSource(Protocol):
    """What the page reads, in the runs API's shapes (docs/runs.md): ``kinds`` as ``GET
    /runs`` says them, ``runs`` a CR's summaries newest first, ``record`` one run with its
    tasks and output (None when there is no such run). Any method may raise Unavailable."""

    @property
    def origin(self) -> Origin: ...

    async def kinds(self) -> list[dict[str, Any]]: ...

    async def runs(
        self, group: str, version: str, kind: str, namespace: str, name: str
    ) -> list[dict[str, Any]]: ...

    async def record(
        self, group: str, version: str, kind: str, namespace: str, name: str, run_id: str
    ) -> dict[str, Any] | None: ...


Sources = Callable[[], AbstractAsyncContextManager[RunsSource]]  # a source for one page load


class HistorySource:
    """This replica's runs: the operator's own RunHistory, as the page's request may read it."""

    def __init__(self, history: ReadableHistory) -> None:
        self.history = history

    @property
    def origin(self) -> Origin:
        return Origin((self.history.history.replica,))

    async def kinds(self) -> list[dict[str, Any]]:
        return await self.history.kinds()

    async def runs(
        self, group: str, version: str, kind: str, namespace: str, name: str
    ) -> list[dict[str, Any]]:
        return await self.history.runs(group, version, kind, namespace, name)

    async def record(
        self, group: str, version: str, kind: str, namespace: str, name: str, run_id: str
    ) -> dict[str, Any] | None:
        return await self.history.record(group, version, kind, namespace, name, run_id)


def routes(history: RunHistory) -> list[Route]:
    """The page's one GET route, for the metrics server's application."""

    async def page(request: web.Request) -> web.StreamResponse:
        source = HistorySource(ReadableHistory(history, access_of(request)))

        @contextlib.asynccontextmanager
        async def this_replica() -> AsyncIterator[RunsSource]:
            yield source

        return await handler(this_replica)(request)

    return [(PATH, page)]


def handler(sources: Sources) -> Handler:
    """The page's GET handler, each load rendered from a fresh source."""

    async def page(request: web.Request) -> web.Response:
        source = None
        try:
            async with sources() as source:
                status, html = await render(source, request.query)
        except Unavailable as err:
            origin = Origin((), merged=True) if source is None else source.origin
            status, html = 502, _error(origin, str(err))
        return web.Response(status=status, text=html, content_type="text/html", charset="utf-8")

    return page


@functools.cache
def _template() -> Any:
    import jinja2  # only when the page is first asked for: most operators never serve it

    text = resources.files(__package__).joinpath(TEMPLATE).read_text(encoding="utf-8")
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    environment.filters["seconds"] = timeline_layout.format_seconds
    environment.filters["time"] = timeline_layout.format_time
    return environment.from_string(text)


def _html(origin: Origin, **view: Any) -> str:
    replica = f"{len(origin.replicas)} replicas" if origin.merged else ", ".join(origin.replicas)
    return _template().render(origin=origin, replica=replica, **view)


def _error(origin: Origin, error: str) -> str:
    return _html(origin, view="error", error=error)


async def render(source: RunsSource, query: Mapping[str, str]) -> tuple[int, str]:
    """The view ``query`` asks for, as (HTTP status, HTML); Unavailable when the source is."""
    origin = source.origin
    kind = query.get("kind", "")
    if not kind:
        return 200, _html(origin, view="kinds", kinds=await source.kinds())
    group, _, rest = kind.partition("/")
    version, _, kind_name = rest.partition("/")
    name = query.get("name", "")
    if not (group and version and kind_name and name):
        return 400, _error(origin, "kind=<group>/<version>/<Kind> and name= are needed")
    namespace = query.get("namespace", "")
    cr = {"kind": kind, "kindName": kind_name, "namespace": namespace, "name": name}
    run_id = query.get("run", "")
    if not run_id:
        runs = await source.runs(group, version, kind_name, namespace, name)
        return 200, _html(origin, view="cr", cr=cr, runs=runs)
    record = await source.record(group, version, kind_name, namespace, name, run_id)
    if record is None:
        where = "on these replicas" if origin.merged else "here"
        return 404, _error(origin, f"no run {run_id} {where}")
    return 200, _html(origin, view="run", cr=cr, run=record, picture=picture(record))


def picture(record: Mapping[str, Any]) -> dict[str, Any]:
    """Where the template draws each task's bar and the axis of the run's span."""
    laid = timeline_layout.layout(record)
    rows = [
        {
            "bar": bar,
            "y": AXIS_HEIGHT + index * ROW_HEIGHT,
            "x": LABEL_WIDTH + bar.start * PLOT_WIDTH,
            "width": max(bar.width * PLOT_WIDTH, 2.0),  # an instant task stays visible
        }
        for index, bar in enumerate(laid.bars)
    ]
    ticks = [
        {"x": LABEL_WIDTH + fraction * PLOT_WIDTH, "label": laid.seconds * fraction}
        for fraction in (0.0, 0.25, 0.5, 0.75, 1.0)
    ]
    return {
        "rows": rows,
        "ticks": ticks,
        "width": LABEL_WIDTH + PLOT_WIDTH + 80,
        "height": AXIS_HEIGHT + len(rows) * ROW_HEIGHT + 4,
        "label_width": LABEL_WIDTH,
        "plot_width": PLOT_WIDTH,
        "row_height": ROW_HEIGHT,
        "failed": [bar for bar in laid.bars if bar.failed],
    }
