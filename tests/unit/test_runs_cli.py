"""``ansible-operator runs`` and the timeline's layout: the command against two fake replicas
served over HTTP (their runs merged newest first, one run drawn, errors in one line)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import aiohttp
import pytest
from aiohttp import web

from ansible_operator import cli
from ansible_operator.core import timeline_layout
from ansible_operator.dev import runs, runs_client, runs_command

API_VERSION = "cache.example.com/v1alpha1"


def summary(replica: str, name: str, ident: str, started: str, **fields) -> dict:
    return {
        "id": ident,
        "replica": replica,
        "apiVersion": API_VERSION,
        "kind": "Memcached",
        "namespace": "default",
        "name": name,
        "uid": "u-" + name,
        "generation": 1,
        "trigger": {"reason": "Created", "message": "the CR was created", "object": None},
        "finalizing": False,
        "ansible": "roles/memcached",
        "started": started,
        "ended": None,
        "duration": None,
        "outcome": "Succeeded",
        "message": "",
        "counts": {"ok": 2, "changed": 1, "failed": 0, "skipped": 0},
        "traceId": None,
        **fields,
    }


FAILED_RUN = summary(
    "op-a",
    "web",
    "run-2",
    "2026-11-26T10:00:10.000000Z",
    ended="2026-11-26T10:00:14.000000Z",
    duration=4.0,
    outcome="Failed",
    message="the port is taken",
    trigger={
        "reason": "DependentChanged",
        "message": "Deployment default/web changed",
        "object": {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "namespace": "default",
            "name": "web",
        },
    },
    counts={"ok": 1, "changed": 1, "failed": 1, "skipped": 0},
)
FAILED_RECORD = {
    **FAILED_RUN,
    "tasks": [
        {
            "name": "render",
            "role": "memcached",
            "host": "localhost",
            "status": "ok",
            "changed": False,
            "started": "2026-11-26T10:00:10.000000Z",
            "duration": 1.0,
            "message": "",
        },
        {
            "name": "apply <deployment>",
            "role": "memcached",
            "host": "localhost",
            "status": "changed",
            "changed": True,
            "started": "2026-11-26T10:00:11.000000Z",
            "duration": 2.0,
            "message": "",
        },
        {
            "name": "check the port",
            "role": "memcached",
            "host": "localhost",
            "status": "failed",
            "changed": False,
            "started": "2026-11-26T10:00:13.000000Z",
            "duration": 1.0,
            "message": "the port is taken",
        },
    ],
    "tasksDropped": 0,
    "output": "TASK [check the port] fatal: the port is taken",
}
OLD_RUN = summary(
    "op-a",
    "web",
    "run-1",
    "2026-11-26T09:00:00.000000Z",
    ended="2026-11-26T09:00:03.000000Z",
    duration=3.0,
)
OTHER_REPLICA_RUN = summary(
    "op-b",
    "db",
    "run-9",
    "2026-11-26T09:30:00.000000Z",
    ended="2026-11-26T09:30:01.500000Z",
    duration=1.5,
)
KIND_PATH = "/runs/cache.example.com/v1alpha1/Memcached"


def overview(replica: str, runs_: list[dict]) -> dict:
    resources = {(r["namespace"], r["name"]): r for r in sorted(runs_, key=lambda r: r["started"])}
    return {
        "replica": replica,
        "kinds": [
            {
                "apiVersion": API_VERSION,
                "kind": "Memcached",
                "resources": [
                    {"namespace": ns, "name": name, "last": last}
                    for (ns, name), last in resources.items()
                ],
            }
        ],
    }


def replica_app(replica: str, runs_: list[dict], records: dict[str, dict], status: int = 200):
    """A fake operator's runs API, as the contract says it (or answering ``status`` to all)."""

    async def handle(request: web.Request) -> web.Response:
        if status != 200:
            return web.Response(status=status, text="Unauthorized\n")
        path = request.path
        mine = sorted(runs_, key=lambda r: r["started"], reverse=True)
        if path == "/runs":
            return web.json_response(overview(replica, runs_))
        if path == KIND_PATH:
            return web.json_response({"replica": replica, "runs": mine})
        parts = path[len(KIND_PATH) + 1 :].split("/") if path.startswith(KIND_PATH + "/") else []
        if len(parts) == 2:
            found = [r for r in mine if [r["namespace"], r["name"]] == parts]
            return web.json_response({"replica": replica, "runs": found})
        if len(parts) == 3 and parts[2] in records:
            return web.json_response(records[parts[2]])
        return web.json_response({"error": "no such run on this replica"}, status=404)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    return app


@pytest.fixture
def serve() -> Iterator:
    """Starts aiohttp apps on free loopback ports in a thread of their own; their URLs."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    runners = []

    def start(app: web.Application) -> str:
        async def go() -> str:
            runner = web.AppRunner(app)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            runners.append(runner)
            return f"http://127.0.0.1:{runner.addresses[0][1]}"

        return asyncio.run_coroutine_threadsafe(go(), loop).result(10)

    yield start
    for runner in runners:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["runs", *argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- the layout ---------------------------------------------------------------------------------


def test_layout_places_tasks_on_the_run_span():
    laid = timeline_layout.layout(FAILED_RECORD)
    assert laid.seconds == 4.0
    assert [(b.name, b.start, b.width, b.failed) for b in laid.bars] == [
        ("render", 0.0, 0.25, False),
        ("apply <deployment>", 0.25, 0.5, False),
        ("check the port", 0.75, 0.25, True),
    ]


def test_a_running_task_lasts_until_now():
    record = {
        "started": "2026-11-26T10:00:00Z",
        "ended": None,
        "tasks": [
            {
                "name": "wait",
                "status": "running",
                "started": "2026-11-26T10:00:02+00:00",
                "duration": None,
            }
        ],
    }
    laid = timeline_layout.layout(record, now=datetime(2026, 11, 26, 10, 0, 10, tzinfo=UTC))
    assert laid.seconds == 10.0
    (bar,) = laid.bars
    assert (bar.start, bar.width, bar.seconds) == (0.2, 0.8, 8.0)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "-"), (0.423, "0.42s"), (12.34, "12.3s"), (245, "4m05s"), (3720, "1h02m")],
)
def test_format_seconds(seconds, text):
    assert timeline_layout.format_seconds(seconds) == text


def test_a_time_without_a_zone_is_refused():
    with pytest.raises(ValueError, match="no time zone"):
        timeline_layout.parse_time("2026-11-26T10:00:00")


# -- the command ----------------------------------------------------------------------------


@pytest.fixture
def two_replicas(serve) -> list[str]:
    return [
        serve(replica_app("op-a", [FAILED_RUN, OLD_RUN], {"run-2": FAILED_RECORD})),
        serve(replica_app("op-b", [OTHER_REPLICA_RUN], {})),
    ]


def reach(monkeypatch, urls: list[str]) -> list[str]:
    """``runs`` reaching the fake replicas at ``urls`` as it reaches the Pods of a cluster; the
    flags that say so."""
    sessions = []

    class Client:
        def __init__(self, creds):
            pass

        async def close(self):
            await sessions[-1].close()

    @contextlib.asynccontextmanager
    async def replicas(client, namespace, selector, *, token):
        sessions.append(aiohttp.ClientSession())
        yield [
            runs.runs_client.url_replica(url, sessions[-1], token=token, insecure=False)
            for url in urls
        ]

    monkeypatch.setattr(runs, "KubeClient", Client)
    monkeypatch.setattr(runs, "load_credentials", lambda kubeconfig: None)
    monkeypatch.setattr(runs.runs_client, "cluster_replicas", replicas)
    return ["--operator-namespace", "ops"]


@pytest.fixture
def both(monkeypatch, two_replicas):
    return reach(monkeypatch, two_replicas)


def test_the_cluster_is_reached_again_with_the_kubeconfig_read_once(monkeypatch, two_replicas):
    """``runs ui`` finds the replicas at each page load, with the credentials read once (an exec
    plugin's token kept), a client of its own each time."""
    where = reach(monkeypatch, two_replicas)
    loaded, clients = [], []
    monkeypatch.setattr(runs, "load_credentials", lambda kubeconfig: loaded.append(1) or "creds")
    real_client = runs.KubeClient
    monkeypatch.setattr(
        runs, "KubeClient", lambda creds: clients.append(creds) or real_client(creds)
    )
    args = runs_command_args(where)
    find = runs._reach(args)

    async def twice() -> list[int]:
        counts = []
        for _ in range(2):
            async with find() as replicas:
                counts.append(len(replicas))
        return counts

    assert asyncio.run(twice()) == [2, 2]
    assert loaded == [1] and clients == ["creds", "creds"]


def runs_command_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    runs_command.add_parser(parser.add_subparsers())
    return parser.parse_args(["runs", *argv])


def test_list_merges_the_replicas_newest_first(capsys, both):
    code, out, err = run_cli(capsys, *both)
    assert (code, err) == (0, "")
    header, *lines = out.splitlines()
    assert header.split() == [
        "STARTED",
        "REPLICA",
        "CR",
        "TRIGGER",
        "OUTCOME",
        "DURATION",
        "OK",
        "CHANGED",
        "FAILED",
        "SKIPPED",
        "ID",
    ]
    assert [line.split()[2] for line in lines] == ["op-a", "op-b", "op-a"]
    assert lines[0].split()[3:6] == ["Memcached", "default/web", "DependentChanged"]
    assert "Deployment default/web  Failed" in lines[0]
    assert lines[0].split()[-5:] == ["1", "1", "1", "0", "run-2"]
    assert "db" in lines[1] and "1.50s" in lines[1]


def test_list_of_one_cr_and_as_json(capsys, both):
    code, out, _ = run_cli(capsys, *both, "memcached/web", "-o", "json")
    assert code == 0
    assert [run["id"] for run in json.loads(out)["runs"]] == ["run-2", "run-1"]
    code, out, _ = run_cli(capsys, *both, "memcached.cache.example.com", "-n", "default")
    assert code == 0 and len(out.splitlines()) == 4


def test_show_draws_the_newest_run_as_a_timeline(capsys, both):
    code, out, err = run_cli(capsys, *both, "show", "Memcached/web")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "Memcached default/web  run run-2  replica op-a"
    assert "outcome   Failed: the port is taken" in out
    bars = [line for line in out.splitlines() if "█" in line]
    assert len(bars) == 3
    # Each bar starts where its task started on the 40-column span.
    assert [len(line[2:]) - len(line[2:].lstrip()) for line in bars] == [0, 10, 30]
    assert bars[2].startswith("✗") and "failed" in bars[2]
    assert out.splitlines()[out.splitlines().index(bars[2]) + 1].strip() == "the port is taken"


def test_show_as_json_is_the_record(capsys, both):
    code, out, _ = run_cli(capsys, *both, "show", "Memcached/web", "run-2", "-o", "json")
    assert code == 0 and json.loads(out) == FAILED_RECORD


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["Nothing"], "no run records of a kind 'Nothing' (kinds with runs: Memcached)"),
        (["Memcached/nobody"], "no run records of 'nobody'"),
        (["show", "Memcached/web", "run-7"], "run 'run-7' of Memcached default/web not found"),
        (
            ["show", "Memcached/web", "run-"],
            "run id 'run-' matches 2 runs of Memcached default/web",
        ),
        (["show", "Memcached"], "show takes KIND/NAME, not 'Memcached'"),
        (["Memcached", "--follow"], "--follow follows one run"),
    ],
)
def test_what_is_not_there_is_one_line(capsys, both, argv, error):
    code, out, err = run_cli(capsys, *both, *argv)
    assert (code, out) == (1, "")
    assert err.startswith(f"ansible-operator runs: {error}")
    assert err.count("\n") == 1 and err.endswith("\n")


def test_a_refusal_and_no_answer_are_one_line(capsys, serve):
    url = serve(replica_app("op-a", [], {}, status=401))
    code, _, err = run_cli(capsys, "--url", url)
    assert code == 1
    assert err == (
        f"ansible-operator runs: {url} requires a bearer token that the API server accepts "
        "(--metrics-require-rbac): pass --token\n"
    )
    code, _, err = run_cli(capsys, "--url", "http://127.0.0.1:9")
    assert code == 1
    assert err == (
        "ansible-operator runs: cannot reach the operator at http://127.0.0.1:9: "
        "Connection refused\n"
    )


def test_a_replica_that_does_not_answer_is_skipped_in_one_line(capsys, monkeypatch, serve):
    answering = serve(replica_app("op-a", [FAILED_RUN, OLD_RUN], {"run-2": FAILED_RECORD}))
    broken = serve(replica_app("op-b", [], {}, status=500))
    where = reach(monkeypatch, [answering, broken])
    code, out, err = run_cli(capsys, *where)
    assert code == 0
    assert [line.split()[-1] for line in out.splitlines()[1:]] == ["run-2", "run-1"]
    assert err == f"ansible-operator runs: skipped: {broken}: GET /runs: 500 Unauthorized\n"


def test_a_replica_is_asked_over_a_few_connections_kept_alive(serve):
    """A command asks a path per kind; through a port-forward each connection is a WebSocket
    through the API server, so the paths share a few connections rather than one each."""
    peers: set[tuple[str, int]] = set()

    async def handle(request: web.Request) -> web.Response:
        peers.add(request.transport.get_extra_info("peername"))
        await asyncio.sleep(0.01)  # the requests overlap
        return web.json_response({"runs": []})

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    url = serve(app)

    async def ask() -> list[dict]:
        async with runs_client.replica_session() as session:
            replica = runs_client.url_replica(url, session, token=None, insecure=False)
            return await runs_client.summaries([replica], [f"/runs/g/v/K{i}" for i in range(40)])

    assert asyncio.run(ask()) == []
    assert len(peers) == runs_client.CONNECTIONS_PER_REPLICA


def test_url_and_cluster_flags_do_not_mix(capsys):
    code, _, err = run_cli(capsys, "--url", "http://x:1", "--operator-namespace", "ops")
    assert code == 1 and "--url names the operator" in err
    code, _, err = run_cli(capsys, "--insecure-skip-tls-verify", "--operator-namespace", "ops")
    assert code == 1 and "--insecure-skip-tls-verify goes with --url" in err


def test_the_pods_metrics_endpoint():
    pod = {
        "spec": {
            "containers": [
                {"name": "sidecar", "ports": [{"name": "http", "containerPort": 80}]},
                {
                    "name": "manager",
                    "args": ["--leader-elect", "--metrics-secure"],
                    "ports": [{"name": "metrics", "containerPort": 8443}],
                },
            ]
        }
    }
    endpoint = runs.runs_client.Endpoint
    assert runs.runs_client.metrics_endpoint(pod) == endpoint("https", 8443, guarded=False)
    pod["spec"]["containers"][1]["args"] = ["--metrics-secure=false", "--metrics-require-rbac"]
    assert runs.runs_client.metrics_endpoint(pod) == endpoint("http", 8443, guarded=True)
    pod["spec"]["containers"][1]["args"] = ["--metrics-require-rbac=false"]
    assert runs.runs_client.metrics_endpoint(pod) == endpoint("http", 8443, guarded=False)
    assert runs.runs_client.metrics_endpoint({"spec": {"containers": [{"name": "x"}]}}) is None
