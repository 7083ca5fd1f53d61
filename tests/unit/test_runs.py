"""Run records: why a run happened (triggers, through the controller), its task timeline from
job events, the records kept on disk per CR (bounded, read back after a restart, gone with the
CR), and the runs API over them."""

from __future__ import annotations

import asyncio
import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from ansible_operator.core import GVK, ItemBackoff, Watch, WriteLog, triggers
from ansible_operator.core.plan import Write
from ansible_operator.dev import runs
from ansible_operator.runner import Timeline
from ansible_operator.runner.events import summarize
from ansible_operator.runner.types import RunResult
from ansible_operator.runs import api as runs_api
from ansible_operator.runs.history import RunHistory
from ansible_operator.runtime.control.controller import Controller
from ansible_operator.runtime.control.handlers import ForObject
from ansible_operator.runtime.control.reconcile import Key, ReconcileError, Request, Result

MEMCACHED = GVK("cache.example.com", "v1alpha1", "Memcached")


def cr(name: str = "mc", generation: int = 1, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": MEMCACHED.api_version,
        "kind": MEMCACHED.kind,
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "generation": generation,
            **meta,
        },
        "spec": {"size": generation},
    }


# -- triggers -------------------------------------------------------------------------------------


def view(obj: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {k: v for k, v in obj["metadata"].items() if k != "uid"}}


def test_a_primary_event_says_what_changed() -> None:
    first = triggers.of_event("create", None, cr(), resync=False)
    assert (first.reason, first.message) == (triggers.CREATED, "first seen at generation 1")
    relisted = triggers.of_event("create", None, cr(), resync=True)
    assert relisted.reason == triggers.RESYNC
    spec = triggers.of_event("update", view(cr()), cr(generation=2), resync=False)
    assert (spec.reason, spec.message) == (triggers.SPEC_CHANGED, "generation 1 → 2")
    labelled = triggers.of_event("update", view(cr()), cr(labels={"a": "b"}), resync=False)
    assert (labelled.reason, labelled.message) == (triggers.CHANGED, "labels changed")
    deleting = cr(deletionTimestamp="2026-11-26T00:00:00Z")
    assert triggers.of_event("update", view(cr()), deleting, resync=False).reason == "Deleted"


def test_the_controller_hands_the_first_reason_to_the_reconcile_and_then_the_timed_one() -> None:
    seen: list[tuple[Key, triggers.Trigger]] = []

    async def reconcile(request: Request) -> Result:
        seen.append((request.key, request.trigger))
        if len(seen) == 1:
            return Result(requeue_after=0.01, reason=triggers.requeue(0.01))
        return Result()

    async def scenario() -> None:
        controller = Controller(Watch(MEMCACHED, role="/r"), reconcile, workers=1)
        configmap = {"metadata": {"name": "cm", "namespace": "ns"}}
        why = triggers.dependent("MODIFIED", configmap, "v1", "CM")
        controller.enqueue(Request(("ns", "mc"), why))
        ForObject(controller)("MODIFIED", cr(generation=2))  # queued already: one run
        running = asyncio.create_task(controller.run())
        while len(seen) < 2:
            await asyncio.sleep(0.01)
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)

    asyncio.run(scenario())
    (key, first), (_, second) = seen
    assert key == ("ns", "mc")
    assert first.reason == triggers.DEPENDENT_CHANGED
    assert first.object == triggers.ObjectRef("v1", "CM", "ns", "cm")
    assert second.reason == triggers.REQUEUE


def test_a_timer_that_fires_during_another_run_is_the_reason_of_the_run_after() -> None:
    # A failed run's retry timer, then a spec change that runs at once: the timer still fires
    # (it is replaced only when that run ends), and the run it brings is a backoff, not the
    # periodic re-run the spec change's success asked for.
    seen: list[str] = []
    spec_run_started = asyncio.Event()

    async def reconcile(request: Request) -> Result:
        seen.append(request.trigger.reason)
        if len(seen) == 1:
            raise ReconcileError("boom")
        if len(seen) == 2:
            spec_run_started.set()
            await asyncio.sleep(1.0)  # the retry timer (under 1 s) fires meanwhile
            return Result(requeue_after=3600, reason=triggers.periodic(3600))
        return Result()

    async def scenario() -> None:
        controller = Controller(
            Watch(MEMCACHED, role="/r"),
            reconcile,
            workers=1,
            backoff=ItemBackoff(base_delay=0.1, max_delay=0.1),
        )
        events = ForObject(controller)
        events("ADDED", cr())
        running = asyncio.create_task(controller.run())
        while len(seen) < 1:
            await asyncio.sleep(0.01)
        events("MODIFIED", cr(generation=2))
        while len(seen) < 3:
            await asyncio.sleep(0.01)
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)

    asyncio.run(scenario())
    assert seen == [triggers.CREATED, triggers.SPEC_CHANGED, triggers.BACKOFF]


# -- the timeline ---------------------------------------------------------------------------------


def event(kind: str, task: str, **data: Any) -> dict[str, Any]:
    body = {"task": task, "task_uuid": f"uuid-{task}", "host": "localhost", **data}
    return {"event": kind, "created": "2026-11-26T10:00:00.000000", "event_data": body}


def test_the_timeline_has_each_task_with_its_status_time_and_failure() -> None:
    timeline = Timeline()
    timeline.feed(event("runner_on_start", "make it"))
    assert [(t.name, t.status, t.duration) for t in timeline.tasks] == [
        ("make it", "running", None)
    ]
    timeline.feed(
        event(
            "runner_on_ok",
            "make it",
            res={"changed": True},
            start="2026-11-26T10:00:00.1",
            duration=1.5,
        )
    )
    timeline.feed(event("runner_on_start", "check it"))
    timeline.feed(event("runner_on_failed", "check it", res={"msg": "not there"}, duration=0.25))
    timeline.feed(
        event("runner_on_failed", "hidden", res={"censored": "no_log"}, ignore_errors=True)
    )
    assert [(t.name, t.status, t.changed, t.duration, t.message) for t in timeline.tasks] == [
        ("make it", "changed", True, 1.5, ""),
        ("check it", "failed", False, 0.25, "not there"),
        ("hidden", "ignored", False, None, "unknown playbook failure"),
    ]
    assert timeline.tasks[0].started == "2026-11-26T10:00:00.1"


def test_a_long_run_keeps_the_first_tasks_and_counts_the_rest() -> None:
    timeline = Timeline(max_tasks=2)
    for i in range(5):
        timeline.feed(event("runner_on_start", f"t{i}"))
        timeline.feed(event("runner_on_ok", f"t{i}", res={}))
    assert [t.name for t in timeline.tasks] == ["t0", "t1"]
    assert timeline.dropped == 3


# -- the records ----------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = datetime.datetime(2026, 11, 26, 10, 0, tzinfo=datetime.UTC)

    def __call__(self) -> datetime.datetime:
        self.now += datetime.timedelta(seconds=1)
        return self.now


def history(base: Path, **options: Any) -> RunHistory:
    settings = {"per_resource": 3, "max_bytes": 1 << 20, "replica": "pod-a", **options}
    return RunHistory(base, clock=Clock(), **settings)


def result(tmp_path: Path, *, ok: bool, stdout: str = "") -> RunResult:
    events = [
        event("runner_on_ok", "a", res={"changed": True}),
        *([] if ok else [event("runner_on_failed", "b", res={"msg": "boom"})]),
        {
            "event": "playbook_on_stats",
            "event_data": {
                "ok": {"localhost": 1},
                "changed": {"localhost": 1},
                "failures": {} if ok else {"localhost": 1},
            },
        },
    ]
    stdout_path = tmp_path / "stdout"
    stdout_path.write_text(stdout)
    return RunResult(summarize(events), 0 if ok else 2, False, tmp_path, stdout_path, tmp_path, 1.0)


def run(h: RunHistory, base: Path, ident: str, name: str = "mc", **finish: Any) -> None:
    record = h.begin(
        gvk=MEMCACHED,
        obj=cr(name),
        input_dir=base / "cache.example.com/v1alpha1/Memcached/ns" / name,
        ident=ident,
        trigger=triggers.periodic(60),
        finalizing=False,
        ansible="/roles/memcached",
        timeline=Timeline(),
    )
    h.finish(record, finish.get("result"), outcome=finish.get("outcome", "Succeeded"))


def test_a_record_is_written_as_the_run_starts_and_again_when_it_ends(tmp_path: Path) -> None:
    h = history(tmp_path)
    record = h.begin(
        gvk=MEMCACHED,
        obj=cr(),
        input_dir=tmp_path / "in",
        ident="run-1",
        trigger=triggers.of_event("create", None, cr(), resync=False),
        finalizing=False,
        ansible="/roles/memcached",
        timeline=Timeline(),
    )
    on_disk = json.loads((tmp_path / "in/runs/run-1.json").read_text())
    assert (on_disk["outcome"], on_disk["ended"], on_disk["trigger"]["reason"]) == (
        "Running",
        None,
        "Created",
    )
    record.timeline.feed(event("runner_on_start", "a"))
    assert (
        h.record("cache.example.com", "v1alpha1", "Memcached", "ns", "mc", "run-1")["tasks"][0][
            "status"
        ]
        == "running"
    )  # type: ignore[index]
    h.finish(
        record, result(tmp_path, ok=False, stdout="\x1b[31mfatal: boom\x1b[0m\n"), outcome="Failed"
    )
    done = json.loads((tmp_path / "in/runs/run-1.json").read_text())
    assert done["outcome"] == "Failed"
    assert done["message"] == "boom"
    assert done["counts"] == {"ok": 1, "changed": 1, "failed": 1, "skipped": 0}
    assert done["output"] == "fatal: boom\n"
    assert done["replica"] == "pod-a" and done["duration"] == 1.0


def test_records_are_bounded_per_cr_and_in_total_newest_kept(tmp_path: Path) -> None:
    h = history(tmp_path, per_resource=2)
    for i in range(4):
        run(h, tmp_path, f"run-{i}")
    assert [s["id"] for s in h.runs("cache.example.com", "v1alpha1", "Memcached", "ns", "mc")] == [
        "run-3",
        "run-2",
    ]
    assert sorted(p.name for p in tmp_path.rglob("*.json")) == ["run-2.json", "run-3.json"]
    one = (tmp_path / "cache.example.com/v1alpha1/Memcached/ns/mc/runs/run-3.json").stat().st_size
    small = history(tmp_path / "small", max_bytes=int(one * 2.5))
    for i, name in enumerate(["a", "b", "c"]):
        run(small, tmp_path / "small", f"run-{i}", name)
    assert [s["name"] for s in small.runs("cache.example.com", "v1alpha1", "Memcached")] == [
        "c",
        "b",
    ]


def test_records_are_read_back_after_a_restart_and_a_run_cut_short_says_so(tmp_path: Path) -> None:
    before = history(tmp_path)
    run(before, tmp_path, "run-1")
    before.begin(  # the operator stops during this one
        gvk=MEMCACHED,
        obj=cr(),
        input_dir=tmp_path / "cache.example.com/v1alpha1/Memcached/ns/mc",
        ident="run-2",
        trigger=triggers.periodic(60),
        finalizing=False,
        ansible="/roles/memcached",
        timeline=Timeline(),
    )
    after = history(tmp_path)
    [kind] = after.kinds()
    assert (kind["kind"], [r["name"] for r in kind["resources"]]) == ("Memcached", ["mc"])
    found = after.runs("cache.example.com", "v1alpha1", "Memcached", "ns", "mc")
    assert [(s["id"], s["outcome"]) for s in found] == [
        ("run-2", "Interrupted"),
        ("run-1", "Succeeded"),
    ]
    after.forget(MEMCACHED, "ns", "mc")
    assert after.kinds() == []


def test_only_the_records_of_the_watched_kinds_and_namespaces_are_read_and_bounded(
    tmp_path: Path,
) -> None:
    """Another operator on the machine shares the directory: its records (of another kind, or
    of the same kind in another namespace) are neither listed nor removed to keep the bound."""
    site = GVK("web.example.com", "v1", "Site")
    theirs = history(tmp_path)

    def record(h: RunHistory, gvk: GVK, namespace: str, name: str, ident: str) -> None:
        obj = {**cr(name), "apiVersion": gvk.api_version, "kind": gvk.kind}
        obj["metadata"] = {**obj["metadata"], "namespace": namespace}
        started = h.begin(
            gvk=gvk,
            obj=obj,
            input_dir=tmp_path / gvk.group / gvk.version / gvk.kind / namespace / name,
            ident=ident,
            trigger=triggers.periodic(60),
            finalizing=False,
            ansible="/roles/x",
            timeline=Timeline(),
        )
        h.finish(started, None, outcome="Succeeded")

    record(theirs, site, "ns", "blog", "theirs-1")
    record(theirs, MEMCACHED, "elsewhere", "mc", "theirs-2")
    record(theirs, MEMCACHED, "ns", "mc", "mine-1")
    one = max(p.stat().st_size for p in tmp_path.rglob("*.json"))

    mine = history(tmp_path, kinds=[MEMCACHED], namespaces=["ns"], max_bytes=int(one * 1.5))
    [kind] = mine.kinds()
    assert (kind["kind"], [r["name"] for r in kind["resources"]]) == ("Memcached", ["mc"])
    memcached = ("cache.example.com", "v1alpha1", "Memcached")
    assert [s["id"] for s in mine.runs(*memcached, "ns", "mc")] == ["mine-1"]
    record(mine, MEMCACHED, "ns", "mc", "mine-2")  # past max_bytes: its own oldest goes
    assert sorted(p.stem for p in tmp_path.rglob("*.json")) == ["mine-2", "theirs-1", "theirs-2"]
    everything = history(tmp_path)
    assert sorted(s["id"] for s in everything.runs(*memcached)) == ["mine-2", "theirs-2"]


def test_no_records_when_turned_off(tmp_path: Path) -> None:
    assert not history(tmp_path, per_resource=0).enabled


# -- the API --------------------------------------------------------------------------------------


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[RunHistory, str]]:
    h = history(tmp_path)
    run(h, tmp_path, "run-1")
    run(h, tmp_path, "run-2", outcome="Interrupted")
    loop = asyncio.new_event_loop()
    app = web.Application()
    for path, handler in runs_api.routes(h):
        app.router.add_get(path, handler)
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    asyncio.set_event_loop(loop)
    yield h, f"http://127.0.0.1:{port}"
    loop.run_until_complete(runner.cleanup())
    loop.close()


def get(url: str) -> tuple[int, Any]:
    async def fetch() -> tuple[int, Any]:
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return response.status, await response.json()

    return asyncio.get_event_loop().run_until_complete(fetch())


def test_the_api_lists_kinds_runs_and_one_run(served: tuple[RunHistory, str]) -> None:
    _, url = served
    status, body = get(url + "/runs")
    assert status == 200 and body["replica"] == "pod-a"
    [kind] = body["kinds"]
    assert kind["resources"][0]["last"]["id"] == "run-2"
    base = url + "/runs/cache.example.com/v1alpha1/Memcached"
    assert [r["id"] for r in get(base)[1]["runs"]] == ["run-2", "run-1"]
    assert [r["outcome"] for r in get(base + "/ns/mc")[1]["runs"]] == ["Interrupted", "Succeeded"]
    status, one = get(base + "/ns/mc/run-1")
    assert status == 200 and one["trigger"]["reason"] == "Periodic" and one["tasks"] == []
    status, missing = get(base + "/ns/mc/run-9")
    assert status == 404 and "no such run" in missing["error"]


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_run_s_record_lists_what_it_wrote_and_runs_show_it(tmp_path: Path, dry_run) -> None:
    h = history(tmp_path)
    writes = WriteLog(dry_run=dry_run)
    record = h.begin(
        gvk=MEMCACHED,
        obj=cr(),
        input_dir=tmp_path / "in",
        ident="run-1",
        trigger=triggers.periodic(60),
        finalizing=False,
        ansible="/roles/memcached",
        timeline=Timeline(),
        writes=writes,
    )
    before = {"kind": "Deployment", "spec": {"replicas": 1}}
    writes.add(
        Write("patch", "apps/v1", "Deployment", "ns", "mc", before=before,
              after={**before, "spec": {"replicas": 3}})
    )  # fmt: skip
    writes.add(Write("patch", "v1", "ConfigMap", "ns", "same", before=before, after=before))
    h.finish(record, result(tmp_path, ok=True), outcome="Succeeded")
    done = json.loads((tmp_path / "in/runs/run-1.json").read_text())
    assert done["planned"] is dry_run
    changed, same = done["writes"]["objects"]
    assert (changed["action"], changed["fields"]) == ("update", ["spec.replicas"])
    assert same["action"] == "none"
    assert {k: done["writes"][k] for k in ("forwarded", "refused", "dropped")} == {
        "forwarded": 2, "refused": 0, "dropped": 0,
    }  # fmt: skip
    shown = runs.render_run(done).splitlines()
    title = "planned   nothing written: every write a dry run" if dry_run else "changed"
    at = shown.index(title)
    verb = "would update" if dry_run else "update"
    assert shown[at + 1 :] == [f"  {verb} Deployment ns/mc", "      spec.replicas"]
