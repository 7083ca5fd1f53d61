"""A run's observers: what the session tells them, in which order, how each run ends for them."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ansible_operator.core import triggers
from ansible_operator.core.watches import GVK, Watch
from ansible_operator.runner import EventCallback, RunnerError, RunRequest, RunResult
from ansible_operator.runs.history import RunHistory
from ansible_operator.runtime.config.settings import RunSettings
from ansible_operator.runtime.control.session import RunSession
from ansible_operator.runtime.observe.metrics import OperatorMetrics
from ansible_operator.runtime.observe.run_observers import (
    CountedRuns,
    Observers,
    RecordedRuns,
    Run,
    RunEnd,
    RunListener,
)
from tests.unit.fake_runner import failed, succeeded
from tests.unit.test_reconciler import FakeProxy

GVK_ = GVK("test.example.com", "v1", "Thing")
WATCH = Watch(gvk=GVK_, role="/roles/thing")
CR = {
    "apiVersion": "test.example.com/v1",
    "kind": "Thing",
    "metadata": {"name": "a", "namespace": "ns"},
}
TASK = {
    "event": "runner_on_ok",
    "created": "2026-11-29T10:00:00.000000",
    "event_data": {"task": "make it", "task_uuid": "u1", "host": "localhost", "res": {}},
}


class Told:
    """An observer that writes down what it is told, under its name, in one shared list."""

    def __init__(self, name: str, told: list[tuple[str, ...]]) -> None:
        self.name, self.told = name, told

    def started(self, run: Run) -> RunListener:
        self.told.append((self.name, "started", run.ident))
        return _ToldRun(self.name, self.told)

    def forget(self, gvk: GVK, namespace: str, name: str) -> None:
        self.told.append((self.name, "forget", f"{namespace}/{name}"))


class _ToldRun:
    def __init__(self, name: str, told: list[tuple[str, ...]]) -> None:
        self.name, self.told = name, told

    def event(self, event: Mapping[str, Any]) -> None:
        self.told.append((self.name, "event", event["event"]))

    def finished(self, end: RunEnd) -> None:
        self.told.append((self.name, "finished", end.outcome, end.error))


class Runner:
    """Sends its events, then returns its result or raises."""

    def __init__(self, outcome: RunResult | BaseException, events: list[dict[str, Any]]) -> None:
        self.outcome, self.events = outcome, events

    async def run(
        self, request: RunRequest, on_event: EventCallback | None = None, *, logger: object = None
    ) -> RunResult:
        for event in self.events:
            assert on_event is not None
            on_event(event)
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


def session(tmp_path: Path, outcome: RunResult | BaseException, observers: list[Any]) -> RunSession:
    return RunSession(
        WATCH,
        runner=Runner(outcome, [TASK]),
        proxy=FakeProxy(),
        settings=RunSettings(),
        observers=Observers(observers),
        runner_base=tmp_path,
    )


def run(session: RunSession) -> RunResult:
    async def go() -> RunResult:
        return await session.run(CR, triggers.periodic(60), finalizing=False)

    return asyncio.run(go())


def test_observers_are_told_in_order_and_finish_in_reverse(tmp_path: Path) -> None:
    told: list[tuple[str, ...]] = []
    result = run(session(tmp_path, succeeded(), [Told("span", told), Told("record", told)]))
    assert result.ok
    ident = told[0][2]
    assert told == [
        ("span", "started", ident),
        ("record", "started", ident),
        ("span", "event", "runner_on_ok"),
        ("record", "event", "runner_on_ok"),
        ("record", "finished", "Succeeded", ""),
        ("span", "finished", "Succeeded", ""),
    ]


@pytest.mark.parametrize(
    ("outcome", "said"),
    [
        (failed("check it", "not there"), ("Failed", "")),
        (
            RunnerError("ansible-runner could not start"),
            ("Failed", "ansible-runner could not start"),
        ),
        (asyncio.CancelledError(), ("Interrupted", "")),
    ],
    ids=["failed", "could-not-start", "stopped"],
)
def test_every_way_a_run_ends_reaches_its_observers(
    tmp_path: Path, outcome: RunResult | BaseException, said: tuple[str, str]
) -> None:
    told: list[tuple[str, ...]] = []
    if isinstance(outcome, BaseException):
        with pytest.raises(type(outcome)):
            run(session(tmp_path, outcome, [Told("one", told)]))
    else:
        run(session(tmp_path, outcome, [Told("one", told)]))
    assert told[-1] == ("one", "finished", *said)


def test_a_run_s_timeline_has_its_tasks_and_its_record_keeps_them(tmp_path: Path) -> None:
    history = RunHistory(tmp_path / "runs", per_resource=5, max_bytes=1 << 20)
    run(session(tmp_path, succeeded(), [RecordedRuns(history)]))
    [summary] = history.runs("test.example.com", "v1", "Thing", "ns", "a")
    record = history.record("test.example.com", "v1", "Thing", "ns", "a", summary["id"])
    assert record is not None
    assert (summary["outcome"], summary["trigger"]["reason"]) == ("Succeeded", "Periodic")
    assert [task["name"] for task in record["tasks"]] == ["make it"]


def test_runs_are_counted_only_when_they_have_a_result(tmp_path: Path) -> None:
    metrics = OperatorMetrics()
    run(session(tmp_path, succeeded(), [CountedRuns(metrics)]))
    run(session(tmp_path, failed("check it", "not there"), [CountedRuns(metrics)]))
    with pytest.raises(RunnerError):
        run(session(tmp_path, RunnerError("no runner"), [CountedRuns(metrics)]))
    sample = metrics.registry.get_sample_value
    labels = {"GVK": str(GVK_)}
    assert sample("ansible_operator_reconcile_result", {**labels, "result": "succeeded"}) == 1
    assert sample("ansible_operator_reconcile_result", {**labels, "result": "failed"}) == 1


def test_a_gone_resource_is_forgotten_by_every_observer(tmp_path: Path) -> None:
    told: list[tuple[str, ...]] = []
    session(tmp_path, succeeded(), [Told("span", told), Told("record", told)]).forget("ns", "a")
    assert told == [("span", "forget", "ns/a"), ("record", "forget", "ns/a")]
