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
API server's Pod proxy (``kubectl proxy``) as on the port itself. The page shows this replica's
runs: each replica keeps its own (docs/runs.md).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from importlib import resources
from typing import Any

from aiohttp import web

from ansible_operator.core import timeline_layout
from ansible_operator.runtime.runs import RunHistory

Route = tuple[str, Callable[[web.Request], Awaitable[web.StreamResponse]]]
PATH = "/runs/ui"
TEMPLATE = "runs_page.html.j2"

# The picture's geometry, in SVG user units.
LABEL_WIDTH = 320
PLOT_WIDTH = 640
ROW_HEIGHT = 22
AXIS_HEIGHT = 24


def routes(history: RunHistory) -> list[Route]:
    """The page's one GET route, for the metrics server's application."""

    async def page(request: web.Request) -> web.Response:
        status, html = render(history, request.query)
        return web.Response(status=status, text=html, content_type="text/html", charset="utf-8")

    return [(PATH, page)]


@functools.cache
def _template() -> Any:
    import jinja2  # only when the page is first asked for: most operators never serve it

    text = resources.files(__package__).joinpath(TEMPLATE).read_text(encoding="utf-8")
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    environment.filters["seconds"] = timeline_layout.format_seconds
    environment.filters["time"] = timeline_layout.format_time
    return environment.from_string(text)


def render(history: RunHistory, query: Mapping[str, str]) -> tuple[int, str]:
    """The view ``query`` asks for, as (HTTP status, HTML)."""
    page: dict[str, Any] = {"replica": history.replica}
    kind = query.get("kind", "")
    if not kind:
        return 200, _template().render(view="kinds", kinds=history.kinds(), **page)
    group, _, rest = kind.partition("/")
    version, _, kind_name = rest.partition("/")
    name = query.get("name", "")
    if not (group and version and kind_name and name):
        return 400, _template().render(
            view="error", error="kind=<group>/<version>/<Kind> and name= are needed", **page
        )
    namespace = query.get("namespace", "")
    cr = {"kind": kind, "kindName": kind_name, "namespace": namespace, "name": name}
    run_id = query.get("run", "")
    if not run_id:
        runs = history.runs(group, version, kind_name, namespace, name)
        return 200, _template().render(view="cr", cr=cr, runs=runs, **page)
    record = history.record(group, version, kind_name, namespace, name, run_id)
    if record is None:
        return 404, _template().render(view="error", error=f"no run {run_id} here", **page)
    return 200, _template().render(view="run", cr=cr, run=record, picture=picture(record), **page)


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
