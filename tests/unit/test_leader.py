"""LeaderElector (runtime/manager/leader.py) on an in-memory Lease with optimistic concurrency.

Short timings keep these quick; assertions are on what happened and in which order, never on
how long it took. The same behaviour against the real API server: tests/e2e/test_leader.py.
"""

from __future__ import annotations

import asyncio
import functools
import os
import subprocess
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from ansible_operator.core.lease import LeaseRecord, Timings
from ansible_operator.kube.client import ApiError, Unreachable
from ansible_operator.runtime.config.flags import build_run_settings
from ansible_operator.runtime.manager.leader import (
    ElectionConfig,
    LeaderElectionError,
    LeaderElector,
    LeadershipLost,
    election_config,
)

TIMINGS = Timings(lease_duration=2, renew_deadline=0.5, retry_period=0.1)
WAIT = 30  # generous bound for anything that should happen


class Store:
    """One Lease: its record, a version bumped by every write, and every record written."""

    def __init__(self) -> None:
        self.record: LeaseRecord | None = None
        self.version = 0
        self.history: list[LeaseRecord] = []
        self._subscribers: list[asyncio.Event] = []

    def write(self, record: LeaseRecord) -> None:
        self.record, self.version = record, self.version + 1
        self.history.append(record)
        for event in self._subscribers:
            event.set()

    def subscribe(self) -> asyncio.Event:
        event = asyncio.Event()
        self._subscribers.append(event)
        return event


class FakeLock:
    """LeaseLock's interface on a Store; `failure` makes every request fail that way."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.seen_version: int | None = None
        self.failure: str | None = None  # None, "refused" or "hangs"

    def __str__(self) -> str:
        return "ns/operator"

    async def _request(self) -> None:
        if self.failure == "refused":
            raise Unreachable("connection refused")
        if self.failure == "hangs":
            await asyncio.Event().wait()

    async def get(self) -> LeaseRecord | None:
        await self._request()
        self.seen_version = self.store.version
        return self.store.record

    async def create(self, record: LeaseRecord) -> None:
        await self._request()
        if self.store.record is not None:
            raise ApiError(409, "AlreadyExists", "exists")
        self._write(record)

    async def update(self, record: LeaseRecord) -> None:
        await self._request()
        if self.seen_version != self.store.version:
            raise ApiError(409, "Conflict", "the object has been modified")
        self._write(record)

    def _write(self, record: LeaseRecord) -> None:
        self.store.write(record)
        self.seen_version = self.store.version

    async def wait_for_change(self, changed: asyncio.Event) -> None:
        mine = self.store.subscribe()
        while True:
            await mine.wait()
            mine.clear()
            changed.set()


class Replica:
    """An elector plus a record of what it did, in one shared journal."""

    def __init__(self, name: str, store: Store, journal: list[str]) -> None:
        self.name = name
        self.lock = FakeLock(store)
        self.journal = journal
        self.stop = asyncio.Event()
        self.acting = asyncio.Event()
        config = ElectionConfig("ns", "operator", f"{name}-id", TIMINGS)
        self.elector = LeaderElector(
            config, self.lock, abandon=lambda: journal.append(f"{name} abandons")
        )
        self.task: asyncio.Task[None] | None = None

    async def _act(self) -> None:
        self.journal.append(f"{self.name} acts")
        self.acting.set()
        try:
            await self.stop.wait()
            self.journal.append(f"{self.name} finishes")
        except asyncio.CancelledError:
            self.journal.append(f"{self.name} is cancelled")
            raise

    def start(self) -> None:
        self.task = asyncio.create_task(self.elector.lead(self.stop, self._act))


def in_loop(scenario: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """The test runs ``scenario`` in a fresh event loop (no async test plugin here)."""

    @functools.wraps(scenario)
    def test(*args: Any, **kwargs: Any) -> None:
        asyncio.run(scenario(*args, **kwargs))

    return test


async def until(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(WAIT):
        while not condition():
            await asyncio.sleep(0.01)


async def a_leads_b_follows(store: Store, journal: list[str]) -> tuple[Replica, Replica]:
    """Replica a started and acting, then b started and seeing a hold the Lease."""
    a, b = Replica("a", store, journal), Replica("b", store, journal)
    a.start()
    await asyncio.wait_for(a.acting.wait(), WAIT)
    b.start()
    await until(lambda: b.elector.candidate.holder == "a-id")
    return a, b


@in_loop
async def test_only_one_acts_and_a_stopped_leader_hands_over_at_once():
    store, journal = Store(), []
    a, b = await a_leads_b_follows(store, journal)
    renewals = len(store.history)
    await until(lambda: len(store.history) > renewals + 2)  # a renews; b keeps waiting
    assert journal == ["a acts"]

    a.stop.set()
    await asyncio.wait_for(a.task, WAIT)
    await asyncio.wait_for(b.acting.wait(), WAIT)
    assert journal == ["a acts", "a finishes", "b acts"]
    released = store.history[-2]
    assert (released.holder, released.lease_duration_seconds) == ("", 1)
    assert store.record.holder == "b-id" and store.record.transitions == 1

    b.stop.set()
    await asyncio.wait_for(b.task, WAIT)
    assert store.record.holder == ""


@pytest.mark.parametrize("failure", ["refused", "hangs"])
@in_loop
async def test_a_leader_that_cannot_renew_stops_before_another_takes_over(failure):
    store, journal = Store(), []
    a, b = await a_leads_b_follows(store, journal)
    a.lock.failure = failure  # a's API server connection breaks; b's does not

    with pytest.raises(LeadershipLost, match=r"not renewed within 0\.6s"):
        await asyncio.wait_for(a.task, WAIT)
    assert a.stop.is_set()
    await asyncio.wait_for(b.acting.wait(), WAIT)
    assert journal == ["a acts", "a abandons", "a is cancelled", "b acts"]
    assert store.record.holder == "b-id"
    b.stop.set()
    await asyncio.wait_for(b.task, WAIT)


@in_loop
async def test_a_leader_that_finds_another_holder_stops_at_once():
    store, journal = Store(), []
    a = Replica("a", store, journal)
    a.start()
    await asyncio.wait_for(a.acting.wait(), WAIT)
    store.write(LeaseRecord("intruder", 15, "t", "t", 9))  # a's next renewal conflicts

    with pytest.raises(LeadershipLost, match="held by intruder"):
        await asyncio.wait_for(a.task, WAIT)
    assert journal == ["a acts", "a abandons", "a is cancelled"]
    assert store.record.holder == "intruder"  # not released: it is not a's


@in_loop
async def test_a_follower_told_to_stop_returns_without_acting_or_writing():
    store, journal = Store(), []
    a, b = await a_leads_b_follows(store, journal)
    b.stop.set()
    await asyncio.wait_for(b.task, WAIT)
    assert journal == ["a acts"]
    assert all(record.holder in ("a-id", "") for record in store.history)
    a.stop.set()
    await asyncio.wait_for(a.task, WAIT)


@in_loop
async def test_a_crash_while_leading_releases_the_lease_and_is_raised():
    store = Store()

    async def crash() -> None:
        raise RuntimeError("boom")

    elector = LeaderElector(
        ElectionConfig("ns", "operator", "a-id", TIMINGS), FakeLock(store), abandon=lambda: None
    )
    with pytest.raises(RuntimeError, match="boom"):
        await asyncio.wait_for(elector.lead(asyncio.Event(), crash), WAIT)
    assert store.record is not None and store.record.holder == ""


def settings(*argv: str):
    return build_run_settings(argv, environ={})


def test_config_from_flags_and_the_pods_namespace(tmp_path: Path):
    namespace_file = tmp_path / "namespace"
    namespace_file.write_text("operators\n")
    config = election_config(
        settings("--leader-elect", "--leader-election-id=memcached"),
        namespace_file=namespace_file,
    )
    assert (config.namespace, config.name) == ("operators", "memcached")
    assert config.timings == Timings(15, 10, 2)
    host, _, suffix = config.identity.rpartition("_")
    assert host and len(suffix) == 36  # the host name, then a UUID
    other = election_config(
        settings(
            "--leader-elect",
            "--leader-election-id=memcached",
            "--leader-election-namespace=ops",
            "--leader-elect-lease-duration=30s",
            "--leader-elect-renew-deadline=20s",
        ),
        namespace_file=namespace_file,
    )
    assert (other.namespace, other.timings) == ("ops", Timings(30, 20, 2))
    assert other.identity != config.identity


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--leader-elect"], "--leader-elect needs --leader-election-id (the name of the Lease)"),
        (
            ["--leader-elect", "--leader-election-id=x"],
            "--leader-elect outside a cluster needs --leader-election-namespace",
        ),
        (
            [
                "--leader-elect",
                "--leader-election-id=x",
                "--leader-election-namespace=ops",
                "--leader-elect-renew-deadline=15s",
            ],
            "--leader-elect-lease-duration=15s, --leader-elect-renew-deadline=15s: "
            "leaseDuration must be greater than renewDeadline",
        ),
    ],
)
def test_config_errors_are_one_line(tmp_path: Path, argv: list[str], message: str):
    with pytest.raises(LeaderElectionError) as excinfo:
        election_config(settings(*argv), namespace_file=tmp_path / "absent")
    assert str(excinfo.value).startswith(message)
    assert "\n" not in str(excinfo.value)


def test_run_refuses_an_incomplete_election_in_one_line(tmp_path: Path):
    """The command's path for an election error (each message: test_config_errors_are_one_line,
    where the Pod's namespace file is a path of the test's, so no machine can change the answer).
    """
    flags, message = ["--leader-elect"], "--leader-elect needs --leader-election-id"
    (tmp_path / "roles" / "r" / "tasks").mkdir(parents=True)
    (tmp_path / "watches.yaml").write_text(
        "- {version: v1, group: x.example.com, kind: F, role: r}\n"
    )
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "ansible_operator.cli", "run", *flags],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ansible-operator run: {message}")
