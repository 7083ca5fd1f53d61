"""The Event recorder: what an Event on a CR says, where it goes, that posting is best effort."""

from __future__ import annotations

import asyncio
import datetime
import logging

import pytest

from ansible_operator.core.limits import EVENT_NOTE_BYTES
from ansible_operator.runtime.observe.recorder import EventRecorder, build_event
from tests.unit.fake_api import FakeApi

T0 = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
THING = {
    "apiVersion": "test.example.com/v1",
    "kind": "Thing",
    "metadata": {"name": "a", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"},
}


def test_an_event_names_its_object_and_the_operator() -> None:
    event = build_event(THING, type_="Warning", reason="ReconcileFailed", message="m", now=T0)
    assert event["involvedObject"] == {
        "apiVersion": "test.example.com/v1",
        "kind": "Thing",
        "name": "a",
        "namespace": "ns",
        "uid": "u-1",
        "resourceVersion": "7",
    }
    assert event["metadata"]["namespace"] == "ns"
    assert event["metadata"]["name"].startswith("a.")
    assert (event["type"], event["reason"], event["message"]) == ("Warning", "ReconcileFailed", "m")
    assert event["source"] == {"component": "ansible-operator"}
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-01-02T03:04:05Z"


def test_two_events_on_one_object_have_different_names() -> None:
    first, second = (
        build_event(THING, type_="Normal", reason="r", message="m", now=T0) for _ in range(2)
    )
    assert first["metadata"]["name"] != second["metadata"]["name"]


def test_a_long_message_is_cut_to_a_notes_limit_saying_so() -> None:
    event = build_event(THING, type_="Warning", reason="r", message="é" * 2000, now=T0)
    message = event["message"]
    assert len(message.encode()) <= EVENT_NOTE_BYTES
    kept = message.split(" ... ")[0]
    assert kept == "é" * len(kept)
    assert message.endswith(f" ... [cut: {4000 - len(kept.encode())} more bytes]")


def test_a_cluster_scoped_objects_events_go_to_default() -> None:
    cluster_scoped = {**THING, "metadata": {"name": "c", "uid": "u-2"}}
    event = build_event(cluster_scoped, type_="Normal", reason="r", message="m", now=T0)
    assert event["metadata"]["namespace"] == "default"
    assert event["involvedObject"]["namespace"] == ""


def test_the_recorder_posts_failures_and_recoveries() -> None:
    api = FakeApi()
    recorder = EventRecorder(api, clock=lambda: T0)
    asyncio.run(recorder.failed(THING, "task 'x' failed: no"))
    asyncio.run(recorder.recovered(THING))
    assert [r.path for r in api.requests] == ["/api/v1/namespaces/ns/events"] * 2
    assert [(e["type"], e["reason"], e["message"]) for e in api.events] == [
        ("Warning", "ReconcileFailed", "task 'x' failed: no"),
        ("Normal", "ReconcileSucceeded", "Reconciliation succeeded again after failing"),
    ]


def test_an_event_that_cannot_be_posted_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    api = FakeApi()
    api.unreachable = True
    with caplog.at_level(logging.ERROR, logger="events"):
        asyncio.run(EventRecorder(api, clock=lambda: T0).failed(THING, "m"))
    [record] = caplog.records
    assert record.getMessage() == "could not post Event"
    assert "connection refused" in record.__dict__["error"]
