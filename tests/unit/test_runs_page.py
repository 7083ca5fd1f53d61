"""The runs page's HTML (``runtime.runs_page``) from a stand-in of the run history: the kinds'
CRs with their last outcome, a CR's runs, one run's timeline picture; and the same page merged
from several replicas (``dev.runs_ui``, ``ansible-operator runs ui``) against the fake replicas
of test_runs_cli: a replica column, the replicas that did not answer, each run once, newest
first, the command's server started and stopped."""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import aiohttp
import pytest

from ansible_operator.dev import runs_client, runs_ui
from ansible_operator.runs import page as runs_page
from ansible_operator.runs.access import EVERYTHING, ReadableHistory

from . import test_runs_cli
from .test_runs_cli import (
    API_VERSION,
    FAILED_RECORD,
    FAILED_RUN,
    OLD_RUN,
    OTHER_REPLICA_RUN,
    overview,
    replica_app,
    run_cli,
)

serve = test_runs_cli.serve  # the fake replicas' server (a fixture)
CLI = Path(sys.executable).parent / "ansible-operator"


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
    readable = ReadableHistory(History(), EVERYTHING)  # type: ignore[arg-type]
    source = runs_page.HistorySource(readable)
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


def test_the_operators_page_is_its_replicas_alone():
    for query in ({}, {"kind": f"{API_VERSION}/Memcached", "namespace": "default", "name": "web"}):
        status, html = page(**query)
        assert status == 200
        assert "Replica <strong>op-a</strong>: the runs this replica ran." in html
        assert "<th>Replica</th>" not in html and 'class="skipped"' not in html
        assert "<title>" in html and "(op-a)</title>" in html


# -- the page of every replica, merged (ansible-operator runs ui) ------------------------------

WEB = {"kind": f"{API_VERSION}/Memcached", "namespace": "default", "name": "web"}
# op-b shares op-a's disk (two operators on one machine): it lists and keeps op-a's failed run
# too, with an output of its own here, so a record read from the wrong replica shows.
B_RECORD = {**FAILED_RECORD, "output": "op-b's copy"}


@pytest.fixture
def fakes(serve) -> dict[str, str]:
    return {
        "op-a": serve(replica_app("op-a", [FAILED_RUN, OLD_RUN], {"run-2": FAILED_RECORD})),
        "op-b": serve(replica_app("op-b", [OTHER_REPLICA_RUN, FAILED_RUN], {"run-2": B_RECORD})),
        "broken": serve(replica_app("op-c", [], {}, status=500)),
    }


def fixed(replicas: list[runs_client.Replica]) -> runs_ui.Reach:
    """The same replicas found at every page load."""

    @contextlib.asynccontextmanager
    async def reach():
        yield replicas

    return reach


def merged_pages(urls: list[str], *queries: dict[str, str]) -> list[tuple[int, str]]:
    """The merged page of the replicas at ``urls``, a fresh look for each query."""

    async def go() -> list[tuple[int, str]]:
        async with aiohttp.ClientSession() as session:
            replicas = [
                runs_client.url_replica(url, session, token=None, insecure=False) for url in urls
            ]
            look = runs_ui.sources(fixed(replicas))
            pages = []
            for query in queries:
                async with look() as source:
                    pages.append(await runs_page.render(source, query))
            return pages

    return asyncio.run(go())


def cells(html: str, row_class: str) -> list[list[str]]:
    """The text of each cell of the rows of ``row_class``, tags dropped."""
    rows = re.findall(rf'<tr class="{row_class}">(.*?)</tr>', html, re.S)
    return [
        [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in rows
    ]


def test_the_merged_source_unites_the_replicas(fakes):
    async def go():
        async with aiohttp.ClientSession() as session:
            replicas = [
                runs_client.url_replica(fakes[name], session, token=None, insecure=False)
                for name in ("op-b", "broken", "op-a")
            ]
            source = await runs_ui.MergedRuns.ask(replicas)
            group, version = API_VERSION.split("/")
            where = (group, version, "Memcached", "default")
            return (
                source.origin,
                await source.kinds(),
                await source.runs(*where, "web"),
                await source.record(*where, "web", "run-2"),
                await source.record(*where, "web", "run-7"),
            )

    origin, kinds, web_runs, record, missing = asyncio.run(go())
    assert origin == runs_page.Origin(
        ("op-b", "op-a"), (f"{fakes['broken']}: GET /runs: 500 Unauthorized",), merged=True
    )
    (kind,) = kinds
    assert [(r["name"], r["last"]["id"]) for r in kind["resources"]] == [
        ("db", "run-9"),
        ("web", "run-2"),
    ]
    assert [run["id"] for run in web_runs] == ["run-2", "run-1"]  # each once, newest first
    assert record == FAILED_RECORD  # from op-a, which ran it, though op-b was asked first
    assert missing is None


@pytest.mark.parametrize("order", [1, -1])
def test_a_copy_read_mid_run_does_not_hide_how_the_run_ended(order):
    # Two operators on one machine share a disk: one read the other's record while it ran.
    stale = {**FAILED_RUN, "outcome": "Interrupted", "ended": None, "duration": None}
    overviews = [overview("op-a", [FAILED_RUN, OLD_RUN]), overview("op-b", [OLD_RUN, stale])]
    (kind,) = runs_client.merged_kinds(overviews[::order])
    (web,) = kind["resources"]
    assert web["last"] == FAILED_RUN


@pytest.mark.parametrize("order", [1, -1])
def test_a_crs_runs_keep_each_runs_freshest_copy(order):
    stale = {**FAILED_RUN, "outcome": "Interrupted", "ended": None, "duration": None}

    def replica(runs: list[dict]) -> runs_client.Replica:
        async def get(path: str) -> dict:
            return {"replica": "-", "runs": runs}

        return runs_client.Replica(get)

    replicas = [replica([FAILED_RUN, OLD_RUN]), replica([stale, OLD_RUN])][::order]
    merged = asyncio.run(runs_client.summaries(replicas, ["/runs/g/v/K/ns/web"]))
    assert merged == [FAILED_RUN, OLD_RUN]


def test_the_merged_page_names_each_runs_replica(fakes):
    urls = [fakes["op-a"], fakes["op-b"], fakes["broken"]]
    (status, kinds), (_, runs), (_, run), (missing, _) = merged_pages(
        urls, {}, WEB, {**WEB, "run": "run-2"}, {**WEB, "run": "run-7"}
    )
    assert status == 200
    assert (
        '<p class="replica">The runs of 2 replicas, merged: <strong>op-a</strong>, '
        "<strong>op-b</strong>; each run names the replica that ran it."
    ) in kinds
    skipped = re.findall(r'<p class="skipped">(.*?)</p>', kinds)
    assert skipped == [f"Skipped: {fakes['broken']}: GET /runs: 500 Unauthorized"]
    assert "(2 replicas)</title>" in kinds
    # CR, last outcome, started, replica, trigger, duration
    assert [[row[0], row[1], row[3]] for row in cells(kinds, "resource")] == [
        ["default/db", "Succeeded", "op-b"],
        ["default/web", "Failed", "op-a"],
    ]
    assert "<th>Started</th><th>Replica</th><th>Outcome</th>" in runs
    assert [(row[1], row[-1]) for row in cells(runs, "run")] == [
        ("op-a", "run-2"),
        ("op-a", "run-1"),
    ]
    assert "<tr><th>Replica</th><td>op-a</td></tr>" in run
    assert len(re.findall(r'<rect class="bar ', run)) == 3
    assert "op-b&#39;s copy" not in run and "TASK [check the port]" in run
    assert missing == 404


def test_the_merged_page_of_a_replica_alone_names_it():
    # A replica that has runs of one CR and answers everything else 404.
    async def go():
        async def get(path: str):
            if path == "/runs":
                return overview("op-b", [OTHER_REPLICA_RUN])
            raise runs_client.NotFound(f"op-b: {path}")

        source = await runs_ui.MergedRuns.ask([runs_client.Replica(get)])
        return await runs_page.render(source, {}), await runs_page.render(source, WEB)

    (_, kinds), (status, runs) = asyncio.run(go())
    assert "The runs of 1 replica, merged: <strong>op-b</strong>;" in kinds
    assert status == 200 and "No runs of this CR on these replicas." in runs


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_the_served_page_asks_the_replicas_at_each_load(fakes):
    up = {"op-b": False, "op-a": True}

    async def go() -> list[tuple[int, str]]:
        async with aiohttp.ClientSession() as session:

            def replica(name: str) -> runs_client.Replica:
                real = runs_client.url_replica(fakes[name], session, token=None, insecure=False)

                async def get(path: str):
                    if not up[name]:
                        raise runs_client.RunsError(f"{name} is down")
                    return await real.get(path)

                return runs_client.Replica(get)

            reach = fixed([replica("op-a"), replica("op-b")])
            async with runs_ui.serving(reach, "127.0.0.1", 0) as url:
                assert url.startswith("http://127.0.0.1:") and url.endswith("/runs/ui")
                loads = [await asyncio.to_thread(fetch, url)]
                up["op-b"] = True
                loads.append(await asyncio.to_thread(fetch, url))
                loads.append(await asyncio.to_thread(fetch, url.removesuffix("/runs/ui") + "/"))
                up.update({"op-a": False, "op-b": False})
                loads.append(await asyncio.to_thread(fetch, url))
            return loads

    (status, first), (_, second), (_, home), (none, html) = asyncio.run(go())
    assert status == 200
    assert '<p class="skipped">Skipped: op-b is down</p>' in first
    assert [row[0] for row in cells(first, "resource")] == ["default/web"]
    assert 'class="skipped"' not in second
    assert [row[0] for row in cells(second, "resource")] == ["default/db", "default/web"]
    assert home == second  # / leads to the page
    assert none == 502
    assert '<p class="error">no replica answered: op-a is down</p>' in html


def test_the_served_page_finds_the_replicas_again_at_each_load(fakes):
    """Pods come and go while ``runs ui`` serves: each load finds them anew, and a load that
    finds none says why."""
    found: list[list[str]] = [["op-a"], ["op-a", "op-b"], []]
    opened, closed = [], []

    async def go() -> list[tuple[int, str]]:
        async with aiohttp.ClientSession() as session:

            @contextlib.asynccontextmanager
            async def reach():
                names = found.pop(0)
                if not names:
                    raise runs_client.RunsError("no operator Pod labelled x in namespace ops")
                opened.append(names)
                yield [
                    runs_client.url_replica(fakes[name], session, token=None, insecure=False)
                    for name in names
                ]
                closed.append(names)

            async with runs_ui.serving(reach, "127.0.0.1", 0) as url:
                return [await asyncio.to_thread(fetch, url) for _ in range(3)]

    (_, first), (_, second), (status, third) = asyncio.run(go())
    assert [row[0] for row in cells(first, "resource")] == ["default/web"]
    assert [row[0] for row in cells(second, "resource")] == ["default/db", "default/web"]
    assert opened == closed == [["op-a"], ["op-a", "op-b"]]  # each load's forwards closed
    assert status == 502
    assert '<p class="error">no operator Pod labelled x in namespace ops</p>' in third


def test_a_replica_that_stops_answering_is_a_502_that_says_why():
    async def get(path: str):
        if path == "/runs":
            return overview("op-a", [FAILED_RUN])
        raise runs_client.RunsError("op-a: GET a CR's runs: timed out")

    async def go():
        async with runs_ui.serving(fixed([runs_client.Replica(get)]), "127.0.0.1", 0) as url:
            query = "?kind=cache.example.com/v1alpha1/Memcached&namespace=default&name=web"
            return await asyncio.to_thread(fetch, url + query)

    status, html = asyncio.run(go())
    assert status == 502
    assert "The runs of 1 replica, merged: <strong>op-a</strong>;" in html
    assert '<p class="error">op-a: GET a CR&#39;s runs: timed out</p>' in html


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["ui", "Memcached"], "unexpected argument 'Memcached': runs ui serves every kind's runs"),
        (["ui", "--follow"], "ui takes no --follow, -n or -o"),
        (["ui", "-n", "default"], "ui takes no --follow, -n or -o"),
        (["--port", "8080"], "--address and --port go with ui"),
        (["ui", "--port", "65536"], "--port must be 0 (a free one) to 65535, not 65536"),
        (["--url", "127.0.0.1:1", "ui"], "--url must be http://HOST:PORT or https://HOST:PORT"),
    ],
)
def test_a_bad_ui_command_line_is_one_line(capsys, argv, error):
    code, out, err = run_cli(capsys, *argv)
    assert (code, out) == (1, "")
    assert err.startswith(f"ansible-operator runs: {error}") and err.count("\n") == 1


def test_ui_refuses_a_port_in_use_and_no_replica_in_one_line(capsys, fakes):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = run_cli(capsys, "ui", "--url", fakes["op-a"], "--port", str(port))
    assert (code, out) == (1, "")
    assert err == (
        f"ansible-operator runs: cannot serve the runs page on 127.0.0.1:{port}: "
        "Address already in use\n"
    )
    code, out, err = run_cli(capsys, "ui", "--url", fakes["broken"], "--url", "http://127.0.0.1:9")
    assert (code, out) == (1, "")
    assert err.startswith("ansible-operator runs: ") and err.count("\n") == 1
    assert "GET /runs: 500" in err


def test_several_urls_are_several_replicas(capsys, fakes):
    code, out, err = run_cli(capsys, "--url", fakes["op-a"], "--url", fakes["op-b"])
    assert (code, err) == (0, "")
    assert [line.split()[-1] for line in out.splitlines()[1:]] == ["run-2", "run-9", "run-1"]


def test_runs_ui_serves_until_interrupted(fakes):
    """The command as a user runs it: the line that says where, the page, Ctrl-C, exit 0."""
    ui = subprocess.Popen(
        [str(CLI), "runs", "ui", "--url", fakes["op-a"], "--url", fakes["op-b"]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert ui.stdout is not None
        line = ui.stdout.readline()
        found = re.fullmatch(
            r"Serving the runs page of 2 replica\(s\) at (http://127\.0\.0\.1:(\d+)/runs/ui) "
            r"\(Ctrl-C to stop\)\n",
            line,
        )
        assert found, line
        status, html = fetch(found.group(1))
        assert status == 200
        assert [row[3] for row in cells(html, "resource")] == ["op-b", "op-a"]
        ui.send_signal(signal.SIGINT)
        assert ui.wait(30) == 0
        assert ui.stdout.read() == "" and ui.stderr is not None and ui.stderr.read() == ""
        with pytest.raises(ConnectionRefusedError):  # nothing left listening
            socket.create_connection(("127.0.0.1", int(found.group(2))), timeout=5).close()
    finally:
        if ui.poll() is None:
            ui.kill()
            ui.wait(30)


@pytest.mark.parametrize("planned", [False, True])
def test_the_page_lists_the_objects_a_run_changed(monkeypatch, planned):
    changed = {
        "apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "<web>",
        "action": "update", "fields": ["spec.replicas", "spec.template"], "changes": [],
    }  # fmt: skip
    same = {**changed, "name": "same", "action": "none", "fields": []}
    record = {**FAILED_RECORD, "planned": planned, "writes": {"objects": [changed, same]}}
    monkeypatch.setattr(History, "record", lambda *args: record)
    status, html = page(
        kind=f"{API_VERSION}/Memcached", namespace="default", name="web", run="run-2"
    )
    assert status == 200
    rows = re.findall(r'<tr class="change">(.*?)</tr>', html)
    action = "would update" if planned else "update"
    assert rows == [
        f"<td>{action}</td><td>Deployment default/&lt;web&gt;</td>"
        "<td>spec.replicas, spec.template</td>"
    ]
    heading = "Planned: nothing written, every write a dry run" if planned else "Changed"
    assert f"<h3>{heading}</h3>" in html


def test_a_run_without_writes_shows_no_changes():
    html = page(kind=f"{API_VERSION}/Memcached", namespace="default", name="web", run="run-2")[1]
    assert '<table class="changes">' not in html


def test_runs_ui_serves_the_page_without_loading_the_operator():
    """The run records are a layer below the runtime: `runs ui` imports none of it."""
    code = (
        "import sys; import ansible_operator.dev.runs_ui; "
        "print(sorted(m for m in sys.modules if m.startswith('ansible_operator.runtime')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
