"""The status writer against an in-memory API server: computed from the fresh object, conflicts
retried as writes, nothing written when nothing changes, a gone object is no error."""

from __future__ import annotations

import asyncio
import datetime

import pytest

from ansible_operator.kube.client import ApiError, ResourceInfo
from ansible_operator.runtime.control import status
from ansible_operator.runtime.control.reconcile import ReconcileError
from ansible_operator.runtime.control.status import StatusWriter, write_status
from tests.unit.fake_api import FakeApi, Request
from tests.unit.fake_runner import failed, succeeded

THINGS = ResourceInfo("test.example.com", "v1", "Thing", "things", True)
T0 = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


def api_with_thing() -> FakeApi:
    api = FakeApi(THINGS)
    api.create(
        THINGS,
        {
            "apiVersion": "test.example.com/v1",
            "kind": "Thing",
            "metadata": {"name": "a", "namespace": "ns"},
            "status": {"phase": "New"},
        },
    )
    return api


def bump(count: int):
    def update(current: dict) -> dict:
        return {**current, "count": current.get("count", 0) + count}

    return update


def test_a_write_is_computed_from_the_status_it_replaces() -> None:
    api = api_with_thing()
    written = asyncio.run(write_status(api, THINGS, "ns", "a", bump(1)))
    assert written["status"] == {"phase": "New", "count": 1}
    assert api.get_object(THINGS, "ns", "a")["status"] == {"phase": "New", "count": 1}


def test_an_unchanged_status_is_not_written() -> None:
    api = api_with_thing()
    asyncio.run(write_status(api, THINGS, "ns", "a", lambda current: current))
    assert api.writes("PUT") == []


def test_a_conflict_is_recomputed_from_the_fresh_object() -> None:
    api = api_with_thing()
    conflicts = []

    def someone_else_writes_first(request: Request) -> None:
        if request.method == "PUT" and not conflicts:
            conflicts.append(request)
            api.edit(THINGS, "ns", "a", lambda o: o["status"].update(count=10))

    api.before.append(someone_else_writes_first)
    asyncio.run(write_status(api, THINGS, "ns", "a", bump(1)))
    assert api.get_object(THINGS, "ns", "a")["status"]["count"] == 11  # not 1: nothing lost
    assert len(api.writes("PUT")) == 2


def test_a_write_from_the_object_just_read_needs_no_get() -> None:
    api = api_with_thing()
    read = api.get_object(THINGS, "ns", "a")
    api.requests.clear()
    asyncio.run(write_status(api, THINGS, "ns", "a", bump(1), read=read))
    assert [r.method for r in api.requests] == ["PUT"]
    assert api.get_object(THINGS, "ns", "a")["status"] == {"phase": "New", "count": 1}
    assert read["status"] == {"phase": "New"}  # the caller's copy is left as it was


def test_a_stale_read_is_a_conflict_recomputed_from_a_fresh_get() -> None:
    api = api_with_thing()
    read = api.get_object(THINGS, "ns", "a")
    api.edit(THINGS, "ns", "a", lambda o: o["status"].update(count=10))  # after the read
    api.requests.clear()
    asyncio.run(write_status(api, THINGS, "ns", "a", bump(1), read=read))
    assert [r.method for r in api.requests] == ["PUT", "GET", "PUT"]
    assert api.get_object(THINGS, "ns", "a")["status"]["count"] == 11


def test_endless_conflicts_give_up_with_a_409(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(status, "CONFLICT_RETRIES", 3)
    api = api_with_thing()

    def always_first(request: Request) -> None:
        if request.method == "PUT":
            api.edit(THINGS, "ns", "a", lambda o: o["status"].update(other=request.path))

    api.before.append(always_first)
    with pytest.raises(ApiError) as raised:
        asyncio.run(write_status(api, THINGS, "ns", "a", bump(1)))
    assert raised.value.status == 409
    assert len(api.writes("PUT")) == 3


@pytest.mark.parametrize("gone_at", ["GET", "PUT"])
def test_an_object_deleted_before_or_during_the_write_is_none(gone_at: str) -> None:
    api = api_with_thing()

    def delete_it(request: Request) -> None:
        if request.method == gone_at and api.exists(THINGS, "ns", "a"):
            api.delete(THINGS, "ns", "a")

    api.before.append(delete_it)
    assert asyncio.run(write_status(api, THINGS, "ns", "a", bump(1))) is None


def writer(api: FakeApi, *, kstatus: bool = True) -> StatusWriter:
    obj = api.get_object(THINGS, "ns", "a")
    return StatusWriter(api, THINGS, obj, clock=lambda: T0, kstatus=kstatus)


def conditions(api: FakeApi) -> dict[str, dict]:
    found = api.get_object(THINGS, "ns", "a")["status"]["conditions"]
    return {c["type"]: c for c in found}


def test_the_writer_marks_running_then_the_outcome_for_the_generation_it_read() -> None:
    api = api_with_thing()
    read = api.get_object(THINGS, "ns", "a")
    status_writer = writer(api)
    api.edit(THINGS, "ns", "a", lambda o: o.update(spec={"size": 2}))  # generation 2 meanwhile
    asyncio.run(status_writer.running(read))
    assert conditions(api)["Running"]["reason"] == "Running"
    asyncio.run(status_writer.done(succeeded(), api.get_object(THINGS, "ns", "a")))
    found = conditions(api)
    assert found["Successful"]["status"] == "True"
    assert found["Running"]["ansibleResult"]["ok"] == 2
    assert {c["observedGeneration"] for c in found.values()} == {1}  # what the run saw
    assert api.get_object(THINGS, "ns", "a")["status"]["phase"] == "New"  # user keys kept


def test_the_writer_reports_failures_and_errors() -> None:
    api = api_with_thing()
    asyncio.run(writer(api).done(failed(message="boom"), api.get_object(THINGS, "ns", "a")))
    assert conditions(api)["Failure"]["message"] == "boom"
    asyncio.run(writer(api).error("Unable to run reconciliation: no runner", terminal=False))
    failure = conditions(api)["Failure"]
    assert failure["message"] == "Unable to run reconciliation: no runner"
    assert "ansibleResult" not in failure


def test_a_failed_write_is_a_reconcile_error() -> None:
    api = api_with_thing()
    status_writer = writer(api)
    api.unreachable = True
    with pytest.raises(ReconcileError, match="writing status: PUT"):
        asyncio.run(status_writer.running(api.get_object(THINGS, "ns", "a")))
