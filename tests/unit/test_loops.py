"""Runs that trigger themselves: which fields of a dependent changed (core.changes), the trigger
that carries them, and the loop detector (core.loops): its threshold, window, resets and one
report per episode."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from prometheus_client import generate_latest

from ansible_operator.core import changes, loops, triggers
from ansible_operator.core.triggers import ObjectRef
from ansible_operator.runtime.observe.metrics import OperatorMetrics
from tests.unit.fake_runner import succeeded
from tests.unit.test_reconciler import world


def configmap(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "resourceVersion": "1",
            "annotations": {"example.com/last-run": "1"},
            "managedFields": [{"manager": "ansible", "time": "2026-11-26T10:00:00Z"}],
        },
        "data": data,
        "status": {"phase": "a"},
    }


# -- the fields that changed ----------------------------------------------------------------------


def test_a_changed_data_key_and_annotation_are_named_by_path() -> None:
    old = configmap(timestamp="1", keep="x")
    new = copy.deepcopy(old)
    new["data"]["timestamp"] = "2"
    new["metadata"]["annotations"]["example.com/last-run"] = "2"
    assert changes.changed(changes.fields_of(old), changes.fields_of(new)) == (
        "data.timestamp",
        "metadata.annotations.example.com/last-run",
    )


def test_what_the_dependent_predicate_ignores_is_no_change() -> None:
    old = configmap(timestamp="1")
    new = copy.deepcopy(old)
    new["metadata"]["resourceVersion"] = "2"
    new["status"] = {"phase": "b"}
    new["metadata"]["managedFields"][0]["time"] = "2026-11-26T11:00:00Z"
    assert changes.fields_of(old) == changes.fields_of(new)
    assert changes.changed(changes.fields_of(old), changes.fields_of(new)) == ()


def test_added_and_removed_fields_count_and_deeper_values_are_named_at_depth_three() -> None:
    deployment: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"image": "a"}]}}},
    }
    scaled = copy.deepcopy(deployment)
    scaled["spec"]["replicas"] = 2
    scaled["spec"]["template"]["spec"]["containers"][0]["image"] = "b"
    scaled["metadata"]["labels"] = {"tier": "web"}
    assert changes.changed(changes.fields_of(deployment), changes.fields_of(scaled)) == (
        "metadata.labels.tier",
        "spec.replicas",
        "spec.template.spec",
    )


def test_a_listed_item_without_api_version_and_kind_is_the_watched_object() -> None:
    watched = configmap(timestamp="1")
    listed = {k: v for k, v in watched.items() if k not in ("apiVersion", "kind")}
    assert changes.fields_of(listed) == changes.fields_of(watched)


def test_past_the_cap_the_rest_is_one_entry_that_still_tells_a_change() -> None:
    many = {f"k{i:03}": "v" for i in range(200)}
    old = configmap(**many)
    fields = changes.fields_of(old)
    assert len(fields.paths) == changes.MAX_PATHS == len(fields.hashes) // changes.HASH_BYTES
    assert fields.paths[-1] == changes.REST
    new = copy.deepcopy(old)
    new["data"]["k199"] = "changed"
    assert changes.changed(fields, changes.fields_of(new)) == (changes.REST,)


def test_a_description_names_a_few_fields_and_counts_the_rest() -> None:
    assert changes.describe(("a", "b")) == "a, b"
    assert changes.describe(("a", "b", "c", "d", "e")) == "a, b, c and 2 more"


def test_the_dependent_trigger_carries_the_fields_into_its_message_and_record() -> None:
    trigger = triggers.dependent(
        "MODIFIED", configmap(), "v1", "ConfigMap", ("data.timestamp", "data.x")
    )
    assert trigger.message == "ConfigMap shop/web (owned): modified data.timestamp, data.x"
    assert trigger.to_json() == {
        "reason": "DependentChanged",
        "message": trigger.message,
        "object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": "web"},
        "fields": ["data.timestamp", "data.x"],
    }
    assert triggers.dependent("DELETED", configmap(), "v1", "ConfigMap").to_json()["fields"] == []


# -- the loop detector ----------------------------------------------------------------------------

KEY = ("shop", "app")
CM = ObjectRef("v1", "ConfigMap", "shop", "app-state")
DEPLOY = ObjectRef("apps/v1", "Deployment", "shop", "app")


def woken_by(
    ref: ObjectRef = CM, fields: tuple[str, ...] = ("data.timestamp",)
) -> triggers.Trigger:
    return triggers.Trigger(triggers.DEPENDENT_CHANGED, "changed", ref, fields)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def runs(
    detector: loops.LoopDetector,
    clock: Clock,
    count: int,
    trigger: triggers.Trigger | None = None,
    *,
    every: float = 2.0,
    generation: object = 1,
) -> list[loops.Loop | None]:
    found = []
    for _ in range(count):
        clock.now += every
        found.append(detector.observe(KEY, trigger or woken_by(), generation))
    return found


def test_the_threshold_th_dependent_run_in_the_window_is_reported_once(clock) -> None:
    detector = loops.LoopDetector(clock=clock)
    found = runs(detector, clock, loops.THRESHOLD * 3)
    reported = [loop for loop in found if loop is not None]
    assert found.index(reported[0]) == loops.THRESHOLD - 1
    [loop] = reported
    assert (loop.runs, loop.seconds) == (loops.THRESHOLD, 2.0 * (loops.THRESHOLD - 1))
    assert loop.dependents == ((CM, ("data.timestamp",)),)
    message = loop.message()
    assert "ConfigMap shop/app-state (data.timestamp)" in message
    assert f"The last {loops.THRESHOLD} runs in 8s" in message
    assert 'blacklist: [{group: "", version: v1, kind: ConfigMap}]' in message
    assert "watchDependentResources: false" in message


def test_runs_slower_than_the_window_are_no_loop(clock) -> None:
    detector = loops.LoopDetector(clock=clock)
    every = loops.WINDOW / (loops.THRESHOLD - 1) + 1
    assert runs(detector, clock, loops.THRESHOLD * 2, every=every) == [None] * loops.THRESHOLD * 2


@pytest.mark.parametrize(
    ("interruption", "generation"),
    [
        pytest.param(lambda d, c: d.observe(KEY, triggers.periodic(10), 1), 1, id="other trigger"),
        pytest.param(lambda d, c: None, 2, id="new generation"),
        pytest.param(lambda d, c: setattr(c, "now", c.now + loops.WINDOW + 1), 1, id="quiet"),
        pytest.param(lambda d, c: d.forget(KEY), 1, id="CR gone"),
    ],
)
def test_an_episode_ends_and_a_new_one_is_reported_again(clock, interruption, generation) -> None:
    detector = loops.LoopDetector(clock=clock)
    assert any(runs(detector, clock, loops.THRESHOLD))
    interruption(detector, clock)
    after = runs(detector, clock, loops.THRESHOLD, generation=generation)
    assert after[:-1] == [None] * (loops.THRESHOLD - 1) and after[-1] is not None


def test_a_new_generation_restarts_the_count(clock) -> None:
    detector = loops.LoopDetector(clock=clock)
    runs(detector, clock, loops.THRESHOLD - 1, generation=1)
    assert runs(detector, clock, loops.THRESHOLD - 1, generation=2) == [None] * (
        loops.THRESHOLD - 1
    )


def test_a_run_of_another_trigger_in_between_restarts_the_count(clock) -> None:
    detector = loops.LoopDetector(clock=clock)
    runs(detector, clock, loops.THRESHOLD - 1)
    runs(detector, clock, 1, triggers.Trigger(triggers.SPEC_CHANGED, "generation 1 → 1"))
    assert runs(detector, clock, loops.THRESHOLD - 1) == [None] * (loops.THRESHOLD - 1)


def test_the_report_names_each_dependent_newest_first_and_every_kind_to_blacklist(clock) -> None:
    detector = loops.LoopDetector(clock=clock)
    runs(detector, clock, loops.THRESHOLD - 1, woken_by(DEPLOY, ("spec.replicas",)))
    [loop] = runs(detector, clock, 1)
    assert loop is not None
    assert loop.dependents == ((CM, ("data.timestamp",)), (DEPLOY, ("spec.replicas",)))
    assert (
        'blacklist: [{group: "", version: v1, kind: ConfigMap}, '
        '{group: "apps", version: v1, kind: Deployment}]'
    ) in loop.message()


def test_keys_are_counted_apart(clock) -> None:
    detector = loops.LoopDetector(clock=clock)
    for _ in range(loops.THRESHOLD - 1):
        clock.now += 1
        assert detector.observe(("shop", "a"), woken_by(), 1) is None
        assert detector.observe(("shop", "b"), woken_by(), 1) is None
    assert detector.observe(("shop", "a"), woken_by(), 1) is not None


# -- the report, through the reconciler -----------------------------------------------------------


def test_the_reconciler_reports_a_loop_once_as_a_warning_event_a_log_line_and_the_metric(
    tmp_path, caplog
) -> None:
    w = world(tmp_path, [succeeded()] * (loops.THRESHOLD + 2))
    metrics = OperatorMetrics()
    w.reconciler.metrics = metrics
    for _ in range(loops.THRESHOLD + 2):
        w.reconcile(why=woken_by())

    [(type_, reason, message)] = w.events()
    assert (type_, reason) == ("Warning", "DependentLoop")
    assert "ConfigMap shop/app-state (data.timestamp)" in message and "blacklist" in message
    [line] = [r for r in caplog.records if r.getMessage().startswith("Dependent loop:")]
    assert line.levelname == "WARNING" and line.fields == ["data.timestamp"]  # type: ignore[attr-defined]
    assert line.dependents == ["ConfigMap shop/app-state"]  # type: ignore[attr-defined]
    assert (
        'ansible_operator_dependent_loops_total{GVK="test.example.com/v1, Kind=Thing"} 1.0'
        in generate_latest(metrics.registry).decode()
    )
