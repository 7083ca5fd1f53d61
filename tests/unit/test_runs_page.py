"""The runs page's HTML (``runtime.runs_page``) from a stand-in of the run history: the kinds'
CRs with their last outcome, a CR's runs, one run's timeline picture."""

from __future__ import annotations

import asyncio
import re

from ansible_operator.runtime import runs_page

from .test_runs_cli import API_VERSION, FAILED_RECORD, FAILED_RUN, OLD_RUN, overview


class History:
    """What the page reads of a RunHistory, from the records above."""

    replica = "op-a"

    def kinds(self):
        return overview("op-a", [FAILED_RUN, OLD_RUN])["kinds"]

    def runs(self, group, version, kind, namespace=None, name=""):
        return [FAILED_RUN, OLD_RUN] if (namespace, name) == ("default", "web") else []

    def record(self, group, version, kind, namespace, name, ident):
        return FAILED_RECORD if ident == "run-2" else None


def page(**query) -> tuple[int, str]:
    """The operator's own page: its replica's history as the source."""
    source = runs_page.HistorySource(History())  # type: ignore[arg-type]
    return asyncio.run(runs_page.render(source, query))


def test_the_page_lists_each_kinds_crs_with_their_last_outcome():
    status, html = page()
    assert status == 200
    assert "<h2>Memcached <small>cache.example.com/v1alpha1</small></h2>" in html
    (row,) = re.findall(r'<tr class="resource">.*?</tr>', html, re.S)
    assert (
        'href="?kind=cache.example.com/v1alpha1/Memcached&amp;namespace=default&amp;name=web"'
        in row
    )
    assert '<span class="outcome failed">Failed</span>' in row


def test_the_page_lists_a_crs_runs():
    status, html = page(kind=f"{API_VERSION}/Memcached", namespace="default", name="web")
    assert status == 200
    assert len(re.findall(r'<tr class="run">', html)) == 2
    assert "&amp;run=run-2" in html and "&amp;run=run-1" in html


def test_the_page_draws_a_run_as_a_timeline():
    status, html = page(
        kind=f"{API_VERSION}/Memcached", namespace="default", name="web", run="run-2"
    )
    assert status == 200
    rects = re.findall(r'<rect class="bar (\w+)" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', html)
    left, plot = runs_page.LABEL_WIDTH, runs_page.PLOT_WIDTH
    assert rects == [
        ("ok", f"{left + 0.0}", f"{plot * 0.25}"),
        ("changed", f"{left + plot * 0.25}", f"{plot * 0.5}"),
        ("failed", f"{left + plot * 0.75}", f"{plot * 0.25}"),
    ]
    assert ".bar.failed, .bar.unreachable { fill: #d32f2f; }" in html
    assert "apply &lt;deployment&gt;" in html  # escaped
    assert '<pre class="failed-message">the port is taken</pre>' in html
    assert html.index("</svg>") < html.index('<pre class="failed-message">')


def test_the_page_says_what_is_not_there():
    assert page(kind="nonsense")[0] == 400
    status, html = page(kind=f"{API_VERSION}/Memcached", namespace="default", name="web", run="x")
    assert status == 404 and "no run x here" in html


def test_a_running_run_is_drawn_again_until_it_ends(monkeypatch):
    query = {
        "kind": f"{API_VERSION}/Memcached",
        "namespace": "default",
        "name": "web",
        "run": "run-2",
    }
    refresh = '<meta http-equiv="refresh" content="2">'
    assert refresh not in page(**query)[1]
    running = {**FAILED_RECORD, "outcome": "Running", "ended": None, "duration": None}
    monkeypatch.setattr(History, "record", lambda *args: running)
    assert refresh in page(**query)[1]
