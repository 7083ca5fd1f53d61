"""The manager of runnables: groups start in their order and stop in the reverse one, a failure
stops what started and is raised, the elected groups run only under the elector, and the
operator's one list of groups is the order its parts start and stop in."""

from __future__ import annotations

import asyncio
import gc
import os

import pytest

from ansible_operator.core.lease import Timings
from ansible_operator.core.watches import GVK, Watch
from ansible_operator.kube.config import Credentials
from ansible_operator.runner.versions import AnsibleVersions
from ansible_operator.runtime.config.flags import build_run_settings
from ansible_operator.runtime.manager.leader import ElectionConfig
from ansible_operator.runtime.manager.operator import Inputs, Operator
from ansible_operator.runtime.manager.runnables import Act, Closed, Group, Manager, Started
from tests.unit.fake_api import FakeApi
from tests.unit.fake_runner import ScriptedRunner


class Recorder:
    """Runnables that write what happens to them into one journal."""

    def __init__(self) -> None:
        self.journal: list[str] = []

    def part(self, name: str, *, fail: bool = False, one_shot: bool = False) -> Part:
        return Part(name, self.journal, fail=fail, one_shot=one_shot)


class Part:
    def __init__(self, name: str, journal: list[str], *, fail: bool, one_shot: bool) -> None:
        self.name = name
        self.journal = journal
        self.fail = fail
        self.one_shot = one_shot

    async def run(self, stop: asyncio.Event, started: Started) -> None:
        self.journal.append(f"start {self.name}")
        await asyncio.sleep(0)  # the next group must wait for started(), not for the task
        if self.fail:
            raise RuntimeError(f"{self.name} broke")
        if self.one_shot:
            self.journal.append(f"done {self.name}")
            return
        started()
        try:
            await stop.wait()
        finally:
            self.journal.append(f"stop {self.name}")


def test_groups_start_in_order_and_stop_in_reverse() -> None:
    rec = Recorder()
    groups = [
        Group("probe", [rec.part("probe", one_shot=True)]),
        Group("servers", [rec.part("metrics"), rec.part("proxy")]),
        Group("watches", [rec.part("informers")], need_leader_election=True),
        Group("controllers", [rec.part("workers")], need_leader_election=True),
    ]
    manager = Manager(groups)

    async def scenario() -> None:
        stop = asyncio.Event()
        running = asyncio.create_task(manager.run(stop))
        while "start workers" not in rec.journal:
            await asyncio.sleep(0.01)
        stop.set()
        await running

    asyncio.run(scenario())
    assert rec.journal == [
        "start probe",
        "done probe",
        "start metrics",
        "start proxy",
        "start informers",
        "start workers",
        "stop workers",
        "stop informers",
        "stop metrics",
        "stop proxy",
    ]
    assert manager.stop_order == ["controllers", "watches", "servers", "probe"]


def test_a_failure_stops_what_started_newest_first_and_is_raised() -> None:
    rec = Recorder()
    groups = [
        Group("servers", [rec.part("metrics")]),
        Group("api", [rec.part("wait", fail=True)]),
        Group("controllers", [rec.part("workers")], need_leader_election=True),
    ]

    async def scenario() -> None:
        await Manager(groups).run(asyncio.Event())

    with pytest.raises(RuntimeError, match="wait broke"):
        asyncio.run(scenario())
    assert rec.journal == ["start metrics", "start wait", "stop metrics"]


def test_the_elected_groups_run_only_while_the_elector_lets_them() -> None:
    rec = Recorder()
    elected: list[str] = []
    groups = [
        Group("servers", [rec.part("metrics")]),
        Group("controllers", [rec.part("workers")], need_leader_election=True),
    ]

    async def scenario() -> None:
        stop = asyncio.Event()
        lease = asyncio.Event()

        async def elector(stop: asyncio.Event, act: Act) -> None:
            rec.journal.append("campaign")
            await lease.wait()
            rec.journal.append("leading")
            await act()
            rec.journal.append("released")

        manager = Manager(groups, elector=elector, on_elected=lambda: elected.append("yes"))
        running = asyncio.create_task(manager.run(stop))
        while "campaign" not in rec.journal:
            await asyncio.sleep(0.01)
        assert "start workers" not in rec.journal and not elected
        lease.set()
        while "start workers" not in rec.journal:
            await asyncio.sleep(0.01)
        stop.set()
        await running

    asyncio.run(scenario())
    assert elected == ["yes"]
    assert rec.journal == [
        "start metrics",
        "campaign",
        "leading",
        "start workers",
        "stop workers",
        "released",
        "stop metrics",
    ]


def test_a_lost_election_cancels_the_elected_groups_at_once() -> None:
    # The leader cancels act when its Lease cannot be renewed: the controllers do not get a
    # graceful stop they would wait out while another replica may already lead.
    rec = Recorder()
    groups = [
        Group("servers", [rec.part("metrics")]),
        Group("controllers", [rec.part("workers")], need_leader_election=True),
    ]

    async def scenario() -> None:
        stop = asyncio.Event()

        async def elector(stop: asyncio.Event, act: Act) -> None:
            acting = asyncio.create_task(act())
            while "start workers" not in rec.journal:
                await asyncio.sleep(0.01)
            stop.set()
            acting.cancel()
            await asyncio.wait({acting})
            raise RuntimeError("lost the Lease")

        await Manager(groups, elector=elector).run(stop)

    with pytest.raises(RuntimeError, match="lost the Lease"):
        asyncio.run(scenario())
    assert rec.journal == ["start metrics", "start workers", "stop workers", "stop metrics"]


@pytest.mark.parametrize("waiting_in", [0, 1, 2])
def test_a_stop_during_start_up_starts_nothing_more_and_is_quiet(waiting_in: int) -> None:
    """A stop while any group is starting (one of its runnables not up yet: the API server not
    reached, say) stops what started, starts nothing more, and leaves asyncio nothing to report
    (once: `_GatheringFuture exception was never retrieved`)."""
    rec = Recorder()
    stop = asyncio.Event()

    class Waiting:
        name = "waiting"

        async def run(self, stop: asyncio.Event, started: Started) -> None:
            rec.journal.append("waiting")
            await stop.wait()
            rec.journal.append("gave up waiting")

    groups = [
        Group("servers", [rec.part("metrics")]),
        Group("api-server", [rec.part("api")]),
        Group("controllers", [rec.part("workers")], need_leader_election=True),
    ]
    groups[waiting_in].runnables.append(Waiting())
    reported: list[str] = []

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(
            lambda loop, context: reported.append(context["message"])
        )
        running = asyncio.create_task(Manager(groups).run(stop))
        while "waiting" not in rec.journal:
            await asyncio.sleep(0.01)
        stop.set()
        await running
        gc.collect()  # what asyncio reports of a future nobody retrieved, it reports here
        await asyncio.sleep(0)

    asyncio.run(scenario())
    started = [name for name in ("metrics", "api", "workers")[: waiting_in + 1]]
    assert rec.journal[-1 - len(started) :] == [
        "gave up waiting",
        *(f"stop {name}" for name in reversed(started)),
    ]
    assert not any(
        line.startswith("start ") for line in rec.journal[rec.journal.index("waiting") + 1 :]
    )
    assert reported == []


def test_what_is_closed_at_the_stop_is_closed_after_every_group_started_after_it() -> None:
    """The API client's connections: closed once every part that uses it has stopped."""
    order: list[str] = []
    signal = asyncio.Event()

    async def close() -> None:
        order.append("api-connections closed")

    class Part:
        name = "part"

        async def run(self, stop: asyncio.Event, started: Started) -> None:
            started()
            signal.set()  # as SIGTERM would, once everything has started
            await stop.wait()
            order.append("part stopping")
            await asyncio.sleep(0)  # a part stops over more than one turn of the loop
            order.append("part stopped")

    groups = [
        Group("api-connections", [Closed("api-connections", close)]),
        Group("parts", [Part()]),
    ]
    asyncio.run(Manager(groups).run(signal))
    assert order == ["part stopping", "part stopped", "api-connections closed"]


THING = Watch(gvk=GVK("test.example.com", "v1", "Thing"), role="/roles/thing")
CREDS = Credentials(server="https://127.0.0.1:1", insecure=True)


def operator(*argv: str, election: ElectionConfig | None = None, probed: bool = False) -> Operator:
    settings = build_run_settings(
        ["--metrics-bind-address=0", "--health-probe-bind-address=0", *argv],
        {"PATH": os.environ.get("PATH", "")},
    )
    inputs = Inputs(settings, [THING], CREDS, election=election)
    if probed:
        return Operator(inputs, client=FakeApi())  # type: ignore[arg-type]
    ansible = AnsibleVersions(core="2.18.6", runner="2.4.1", playbook="/x")
    return Operator(
        inputs,
        client=FakeApi(),  # type: ignore[arg-type]
        runner=ScriptedRunner([]),
        ansible=ansible,
    )


def names(op: Operator) -> list[tuple[str, list[str], bool]]:
    return [(g.name, [r.name for r in g.runnables], g.need_leader_election) for g in op.groups]


def test_the_operator_starts_its_parts_in_one_order_and_stops_them_backwards() -> None:
    # Constructing starts nothing: no fork server, no probe (the Ansible probe is the first
    # group), no server listening.
    op = operator("--runner=warm", probed=True)
    assert names(op) == [
        ("api-connections", ["api-connections"], False),
        ("ansible", ["ansible"], False),
        ("servers", ["user-metrics", "endpoints", "proxy"], False),
        ("api-server", ["api-server"], False),
        ("api-clients", ["api-server-check"], False),
        ("watches", ["dependents", "informers"], True),
        ("controllers", ["controllers"], True),
    ]
    assert op.runner.server.process is None  # type: ignore[attr-defined]
    assert op.user_metrics_server.run_env() == {}  # not listening


def test_traces_are_exported_from_the_first_group_on_not_from_the_constructor() -> None:
    settings = build_run_settings(
        ["--metrics-bind-address=0", "--health-probe-bind-address=0"],
        {"PATH": os.environ.get("PATH", ""), "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
    )
    ansible = AnsibleVersions(core="2.18.6", runner="2.4.1", playbook="/x")
    op = Operator(
        Inputs(settings, [THING], CREDS, traced=True),
        client=FakeApi(),  # type: ignore[arg-type]
        runner=ScriptedRunner([]),
        ansible=ansible,
    )
    assert op.groups[0].name == "tracing"
    assert op.tracing is not None
    # No span processor, so no exporter thread, until the group starts.
    assert op.tracing.provider._active_span_processor._span_processors == ()


def test_without_owner_references_no_dependents_are_watched() -> None:
    op = operator("--inject-owner-ref=false")
    assert [g.name for g in op.groups] == [
        "api-connections",
        "ansible",
        "servers",
        "api-server",
        "api-clients",
        "watches",
        "controllers",
    ]
    assert [r.name for r in op.groups[5].runnables] == ["informers"]


def test_leader_election_and_shards_decide_who_acts_not_the_order() -> None:
    config = ElectionConfig("ns", "lease", "me", Timings(15, 10, 2))
    plain = operator()
    leader = operator("--leader-elect", "--leader-election-id=lease", election=config)
    sharded = operator("--shards=4", "--leader-election-id=lease", election=config)
    assert names(plain) == names(leader) == names(sharded)
    assert leader.leader is not None and sharded.shards is not None
    # Only a replica that acts waits for its watches to be ready.
    assert plain.readiness._needs_watches
    assert not leader.readiness._needs_watches
