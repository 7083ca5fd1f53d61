"""The reconciler against an in-memory API server and a runner with scripted outcomes:
finalizers, deletion mid-run, status conflicts, Events, terminal errors and the run session."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_operator.core import triggers
from ansible_operator.core.extravars import MAX_SPEC_DEPTH, SpecError, UnsafeText
from ansible_operator.core.plan import Write, WriteLog
from ansible_operator.core.watches import GVK, Finalizer, Watch
from ansible_operator.kube.client import ResourceInfo
from ansible_operator.kube.discovery import Discovery
from ansible_operator.runner import FailedTask, RunnerError, RunRequest, RunResult
from ansible_operator.runtime.config.settings import Ansible, RunSettings
from ansible_operator.runtime.control import reconcile
from ansible_operator.runtime.control.reconcile import ReconcileError, Result, TerminalError
from ansible_operator.runtime.control.reconciler import Reconciler
from ansible_operator.runtime.control.session import RunSession
from ansible_operator.runtime.observe.metrics import OperatorMetrics
from ansible_operator.runtime.observe.run_observers import LoggedRuns, Observers
from tests.unit.fake_api import FakeApi, Request
from tests.unit.fake_runner import ScriptedRunner, failed, result, succeeded

THINGS = ResourceInfo("test.example.com", "v1", "Thing", "things", True)
FINALIZER = "test.example.com/cleanup"
WATCH = Watch(gvk=GVK("test.example.com", "v1", "Thing"), role="/roles/thing")
WITH_FINALIZER = Watch(
    gvk=WATCH.gvk, role="/roles/thing", finalizer=Finalizer(FINALIZER, vars={"cleanup": True})
)
T0 = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
PERIOD_ANNOTATION = "ansible.sdk.operatorframework.io/reconcile-period"


class FakeProxy:
    """Hands out a token per run and remembers which are still valid."""

    port = 18888

    def __init__(self) -> None:
        self.valid: dict[str, str] = {}
        self.issued = 0
        self.writes: WriteLog | None = None

    def register(
        self, owner: Mapping[str, Any], watch: Watch, *, writes: WriteLog | None = None
    ) -> str:
        self.writes = writes
        self.issued += 1
        token = f"token-{self.issued}"
        self.valid[token] = owner["metadata"]["name"]
        return token

    def unregister(self, token: str) -> None:
        del self.valid[token]


@dataclass
class World:
    api: FakeApi
    runner: ScriptedRunner
    proxy: FakeProxy
    reconciler: Reconciler
    runner_base: Path

    def reconcile(self, name: str = "a", why: triggers.Trigger = triggers.NONE_KNOWN) -> Result:
        return asyncio.run(self.reconciler(reconcile.Request(("ns", name), why)))

    def obj(self, name: str = "a") -> dict[str, Any]:
        return self.api.get_object(THINGS, "ns", name)

    def condition(self, ctype: str, name: str = "a") -> dict[str, Any]:
        [found] = [c for c in self.obj(name)["status"]["conditions"] if c["type"] == ctype]
        return found

    def events(self) -> list[tuple[str, str, str]]:
        return [(e["type"], e["reason"], e["message"]) for e in self.api.events]

    def input_dir(self, name: str = "a") -> Path:
        return self.runner_base / "test.example.com" / "v1" / "Thing" / "ns" / name


def world(
    tmp_path: Path,
    script: Iterable[RunResult | Exception],
    *,
    watch: Watch = WATCH,
    during: Callable[[RunRequest], None] | None = None,
    settings: RunSettings | None = None,
    annotations: dict[str, str] | None = None,
    finalizers: list[str] | None = None,
    extra_env: Callable[[], Mapping[str, str]] = dict,
    spec: dict[str, Any] | None = None,
    ansible_names: frozenset[str] = frozenset(),
    kstatus_conditions: bool = True,
) -> World:
    api = FakeApi(THINGS)
    meta: dict[str, Any] = {"name": "a", "namespace": "ns"}
    if annotations:
        meta["annotations"] = annotations
    if finalizers:
        meta["finalizers"] = finalizers
    api.create(
        THINGS,
        {
            "apiVersion": "test.example.com/v1",
            "kind": "Thing",
            "metadata": meta,
            "spec": spec or {},
        },
    )
    runner = ScriptedRunner(script, during=during)
    proxy = FakeProxy()
    session = RunSession(
        watch,
        runner=runner,
        proxy=proxy,
        settings=settings or RunSettings(),
        observers=Observers([LoggedRuns((settings or RunSettings()).logging)]),
        runner_base=tmp_path,
        extra_env=extra_env,
    )

    discovery = Discovery(api)

    async def resource() -> ResourceInfo:
        return await discovery.resource("test.example.com/v1", "Thing")

    reconciler = Reconciler(
        watch,
        client=api,
        session=session,
        resource=resource,
        reconcile_period=3600.0,
        metrics=OperatorMetrics(),
        clock=lambda: T0,
        ansible_names=ansible_names,
        kstatus_conditions=kstatus_conditions,
    )
    return World(api, runner, proxy, reconciler, tmp_path)


def make_input_dir(request: RunRequest) -> None:
    """What a real runner does first: write the CR's input dir."""
    Path(request.private_data_dir).mkdir(parents=True)


# --- finalizers --------------------------------------------------------------------------------


def test_a_first_reconcile_adds_the_finalizer_runs_the_role_and_writes_successful(tmp_path):
    w = world(tmp_path, [succeeded()], watch=WITH_FINALIZER)

    assert w.reconcile() == Result(requeue_after=3600.0)

    obj = w.obj()
    assert obj["metadata"]["finalizers"] == [FINALIZER]
    [request] = w.runner.requests
    assert request.role == "/roles/thing" and request.playbook is None
    assert request.extravars["ansible_operator_meta"] == {"name": "a", "namespace": "ns"}
    assert "cleanup" not in request.extravars  # finalizer vars only when finalizing
    running, successful, failure, reconciling, stalled, ready = obj["status"]["conditions"]
    assert (running["type"], running["status"], running["reason"]) == (
        "Running",
        "True",
        "Successful",
    )
    kstatus = [(c["type"], c["status"], c["reason"]) for c in (reconciling, stalled, ready)]
    assert kstatus == [
        ("Reconciling", "False", "Succeeded"),
        ("Stalled", "False", "Succeeded"),
        ("Ready", "True", "Succeeded"),
    ]
    assert obj["status"]["observedGeneration"] == 1
    assert running["ansibleResult"] == {
        "ok": 2,
        "changed": 1,
        "skipped": 0,
        "failures": 0,
        "completion": "2026-01-02T03:04:05.5+00:00",
    }
    assert (successful["type"], successful["status"]) == ("Successful", "True")
    assert (failure["type"], failure["status"]) == ("Failure", "False")
    assert all(c["observedGeneration"] == 1 for c in obj["status"]["conditions"])
    assert len(w.api.writes("PUT", "/status")) == 2  # Running, then the outcome
    assert w.events() == []


def test_a_reconcile_reads_the_object_before_and_after_the_run_and_writes_from_those_reads(
    tmp_path,
):
    w = world(tmp_path, [succeeded()], finalizers=[FINALIZER], watch=WITH_FINALIZER)
    w.reconcile()
    calls = [(r.method, r.path.rsplit("/", 1)[-1]) for r in w.api.requests if "/things/" in r.path]
    assert calls == [("GET", "a"), ("PUT", "status"), ("GET", "a"), ("PUT", "status")]


def test_a_finalizer_already_there_is_not_added_again(tmp_path):
    w = world(tmp_path, [succeeded()], watch=WITH_FINALIZER, finalizers=["other", FINALIZER])
    w.reconcile()
    assert w.obj()["metadata"]["finalizers"] == ["other", FINALIZER]
    assert w.api.writes("PATCH") == []


def test_deletion_runs_the_finalizer_then_removes_it_and_the_cr_is_gone(tmp_path):
    w = world(
        tmp_path,
        [succeeded()],
        watch=WITH_FINALIZER,
        finalizers=[FINALIZER],
        during=make_input_dir,
    )
    w.api.delete(THINGS, "ns", "a")

    assert w.reconcile() == Result()

    [request] = w.runner.requests
    assert request.extravars["cleanup"] is True  # the finalizer's vars
    assert not w.api.exists(THINGS, "ns", "a")  # the last finalizer gone, so is the CR
    assert w.input_dir().is_dir()
    # The delete event's reconcile finds nothing and removes the CR's input dir.
    assert w.reconcile() == Result()
    assert not w.input_dir().exists()
    assert len(w.runner.requests) == 1


def test_a_failed_finalizer_run_keeps_the_finalizer_and_is_retried(tmp_path):
    w = world(tmp_path, [failed()], watch=WITH_FINALIZER, finalizers=[FINALIZER])
    w.api.delete(THINGS, "ns", "a")

    with pytest.raises(ReconcileError, match="quota exceeded"):
        w.reconcile()

    assert w.obj()["metadata"]["finalizers"] == [FINALIZER]
    assert w.condition("Failure")["status"] == "True"


def test_a_deleted_cr_without_our_finalizer_is_not_run(tmp_path):
    w = world(tmp_path, [], watch=WITH_FINALIZER, finalizers=["someone-else"])
    w.api.delete(THINGS, "ns", "a")
    assert w.reconcile() == Result()
    assert w.runner.requests == []


def test_a_finalizer_patch_on_a_stale_object_fails_and_nothing_runs(tmp_path):
    w = world(tmp_path, [], watch=WITH_FINALIZER)

    def another_writer(request: Request) -> None:
        if request.method == "PATCH":
            w.api.edit(THINGS, "ns", "a", lambda o: o["metadata"].update(labels={"x": "y"}))

    w.api.before.append(another_writer)
    with pytest.raises(ReconcileError, match="adding the finalizer: 422"):
        w.reconcile()
    assert w.runner.requests == []
    assert "finalizers" not in w.obj()["metadata"]


# --- deletion during a run ---------------------------------------------------------------------


def test_a_cr_deleted_during_its_run_gets_no_outcome_and_its_input_dir_goes(tmp_path):
    def delete_it(request: RunRequest) -> None:
        make_input_dir(request)
        w.api.delete(THINGS, "ns", "a")

    w = world(tmp_path, [succeeded()], during=delete_it)

    assert w.reconcile() == Result()

    assert len(w.api.writes("PUT", "/status")) == 1  # Running only; nothing to write after
    assert not w.input_dir().exists()


def test_a_cr_deleted_during_its_run_gets_its_finalizer_run_at_once(tmp_path):
    runs = iter([lambda: w.api.delete(THINGS, "ns", "a"), lambda: None])
    w = world(
        tmp_path,
        [succeeded(), succeeded()],
        watch=WITH_FINALIZER,
        during=lambda request: next(runs)(),
    )

    assert w.reconcile() == Result(requeue_after=0.0)  # not upstream's 5 s
    assert w.reconcile() == Result()

    first, second = w.runner.requests
    assert "cleanup" not in first.extravars and second.extravars["cleanup"] is True
    assert not w.api.exists(THINGS, "ns", "a")


def test_a_cr_that_is_gone_is_not_run(tmp_path):
    w = world(tmp_path, [])
    assert w.reconcile("never-was") == Result()
    assert w.runner.requests == []


# --- status -------------------------------------------------------------------------------------


def test_a_status_conflict_is_retried_as_a_write_without_re_running_the_role(tmp_path):
    w = world(tmp_path, [succeeded()])
    done = []

    def role_writes_status_first(request: Request) -> None:
        # The outcome's PUT (the second) finds the object changed by a k8s_status task.
        second_put = request.path.endswith("/status") and len(w.api.writes("PUT", "/status")) == 2
        if second_put and not done:
            done.append(True)
            w.api.edit(THINGS, "ns", "a", lambda o: o["status"].update(phase="Ready"))

    w.api.before.append(role_writes_status_first)

    assert w.reconcile() == Result(requeue_after=3600.0)

    assert len(w.runner.requests) == 1
    assert len(w.api.writes("PUT", "/status")) == 3  # Running, the 409, the retry
    assert w.obj()["status"]["phase"] == "Ready"  # the other writer's change is kept
    assert w.condition("Successful")["status"] == "True"


def test_a_timed_out_run_is_a_failure_that_says_so(tmp_path):
    timed_out = result(failures=[FailedTask("", "run timed out after 5s")], timed_out=True)
    w = world(tmp_path, [timed_out])
    with pytest.raises(ReconcileError, match="timed out"):
        w.reconcile()
    failure = w.condition("Failure")
    assert (failure["status"], failure["reason"]) == ("True", "Timeout")
    assert failure["message"] == "run timed out after 5s. It will be retried"


def test_a_run_without_stats_has_no_ansible_result(tmp_path):
    # What the runner reports when Ansible died before its stats event.
    missing = result(
        failures=[FailedTask("", "did not receive playbook_on_stats event")], stats_received=False
    )
    w = world(tmp_path, [missing])
    with pytest.raises(ReconcileError):
        w.reconcile()
    assert "ansibleResult" not in w.condition("Failure")


def test_without_manage_status_nothing_is_written_but_failures_still_post_events(tmp_path):
    watch = Watch(gvk=WATCH.gvk, role="/roles/thing", manage_status=False)
    w = world(tmp_path, [succeeded(), failed()], watch=watch)
    w.reconcile()
    with pytest.raises(ReconcileError):
        w.reconcile()
    assert w.api.writes("PUT") == []
    assert [e[:2] for e in w.events()] == [("Warning", "ReconcileFailed")]


# --- Events ----------------------------------------------------------------------------------


def test_a_failure_posts_a_warning_and_the_recovery_a_normal_event_once(tmp_path):
    w = world(tmp_path, [failed(), succeeded(), succeeded()])

    with pytest.raises(ReconcileError, match="task 'create thing' failed: quota exceeded"):
        w.reconcile()
    failure = w.condition("Failure")
    assert (failure["status"], failure["reason"], failure["message"]) == (
        "True",
        "Failed",
        "quota exceeded",
    )
    assert w.condition("Successful")["status"] == "False"
    assert w.events() == [
        ("Warning", "ReconcileFailed", "task 'create thing' failed: quota exceeded")
    ]

    w.reconcile()
    w.reconcile()
    assert w.events()[1:] == [
        ("Normal", "ReconcileSucceeded", "Reconciliation succeeded again after failing")
    ]
    event = w.api.events[1]
    assert event["involvedObject"]["name"] == "a" and event["metadata"]["namespace"] == "ns"


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("manage_status", [True, False])
def test_a_bad_period_annotation_is_a_terminal_error_in_status_and_an_event(
    tmp_path, manage_status
):
    watch = Watch(gvk=WATCH.gvk, role="/roles/thing", manage_status=manage_status)
    w = world(tmp_path, [], watch=watch, annotations={PERIOD_ANNOTATION: "soon"})
    message = 'Unable to parse reconcile period annotation: time: invalid duration "soon"'

    with pytest.raises(TerminalError) as raised:
        w.reconcile()

    assert str(raised.value) == message
    assert w.runner.requests == []
    failure = w.condition("Failure")  # upstream's markError, even without manage_status
    assert (failure["status"], failure["message"]) == ("True", message)
    assert w.events() == [("Warning", "ReconcileFailed", message)]


def test_a_runner_that_cannot_start_is_marked_and_retried(tmp_path):
    w = world(tmp_path, [RunnerError("ansible-runner: not found")])
    with pytest.raises(ReconcileError, match="Unable to run reconciliation: ansible-runner"):
        w.reconcile()
    assert (
        w.condition("Failure")["message"]
        == "Unable to run reconciliation: ansible-runner: not found"
    )
    assert w.proxy.valid == {}  # the run's token is revoked however the run ends


def test_a_spec_too_deep_for_variables_is_a_failure_naming_the_field_and_no_run(tmp_path):
    nested: Any = "bottom"
    for _ in range(MAX_SPEC_DEPTH + 5):
        nested = {"level": nested}
    w = world(tmp_path, [], spec={"size": 1, "deepField": nested})
    with pytest.raises(TerminalError, match=r"^spec\.deepField is nested more than"):
        w.reconcile()
    failure = w.condition("Failure")
    assert failure["reason"] == "SpecRefused"
    assert failure["message"].startswith("spec.deepField is nested more than")
    assert w.events() == [("Warning", "SpecRefused", failure["message"])]
    assert w.proxy.valid == {} and w.runner.requests == []


def test_a_refused_spec_is_stalled_and_a_run_that_cannot_start_is_retrying(tmp_path):
    nested: Any = "bottom"
    for _ in range(MAX_SPEC_DEPTH + 5):
        nested = {"level": nested}
    w = world(tmp_path, [], spec={"deepField": nested})
    with pytest.raises(TerminalError):
        w.reconcile()
    stalled = w.condition("Stalled")
    assert (stalled["status"], stalled["reason"]) == ("True", "SpecRefused")
    assert w.condition("Reconciling")["status"] == "False"

    w = world(tmp_path / "b", [RunnerError("no runner")])
    with pytest.raises(ReconcileError):
        w.reconcile()
    reconciling = w.condition("Reconciling")
    assert (reconciling["status"], reconciling["reason"]) == ("True", "RetryingAfterFailure")
    assert w.condition("Stalled")["status"] == "False"


def test_a_watch_s_bound_on_failures_stalls_the_cr_until_it_changes(tmp_path):
    boom = failed("check", "boom")
    watch = Watch(gvk=WATCH.gvk, role=WATCH.role, stall_after_failures=2)
    w = world(tmp_path, [boom, boom, boom, succeeded()], watch=watch)
    with pytest.raises(ReconcileError):
        w.reconcile()
    assert w.condition("Reconciling")["reason"] == "RetryingAfterFailure"
    with pytest.raises(TerminalError, match=r"2 failed runs in a row of generation 1"):
        w.reconcile()
    stalled = w.condition("Stalled")
    assert (stalled["status"], stalled["reason"]) == ("True", "Failed")
    assert stalled["message"] == (
        "boom (2 failed runs in a row of generation 1: stallAfterFailures); not retried until "
        "the resource changes"
    )
    assert w.condition("Failure")["message"] == "boom"  # upstream's, as it was
    # A new generation starts the count again; its success clears it.
    w.api.edit(THINGS, "ns", "a", lambda o: o.update(spec={"size": 2}))
    with pytest.raises(ReconcileError):
        w.reconcile()
    assert w.condition("Stalled")["status"] == "False"
    w.reconcile()
    assert w.condition("Ready")["status"] == "True"


@pytest.mark.parametrize(
    ("flag", "watch_says", "manage_status", "written"),
    [
        (True, None, True, True),
        (False, None, True, False),
        (False, True, True, True),  # the watch's kstatusConditions wins
        (True, False, True, False),
        (True, True, False, False),  # the role manages the status: none of ours
    ],
)
def test_kstatus_conditions_are_written_as_the_flag_and_the_watch_say(
    tmp_path, flag, watch_says, manage_status, written
):
    watch = Watch(
        gvk=WATCH.gvk,
        role=WATCH.role,
        kstatus_conditions=watch_says,
        manage_status=manage_status,
    )
    w = world(tmp_path, [succeeded()], watch=watch, kstatus_conditions=flag)
    w.reconcile()
    status = w.obj().get("status") or {}
    types = {c["type"] for c in status.get("conditions", [])}
    kstatus_types = {"Reconciling", "Stalled", "Ready"}
    assert types & kstatus_types == (kstatus_types if written else set())
    assert ("observedGeneration" in status) is written


def test_extra_vars_past_their_limit_are_a_failure_saying_so_and_no_retry(tmp_path):
    too_large = SpecError(
        "the run's extra vars would be 9.0 MiB, more than the 8 MiB one run takes"
    )
    w = world(tmp_path, [too_large])
    with pytest.raises(TerminalError, match=r"^the run's extra vars would be 9\.0 MiB"):
        w.reconcile()
    failure = w.condition("Failure")
    assert (failure["reason"], failure["message"]) == ("SpecRefused", str(too_large))
    assert w.events() == [("Warning", "SpecRefused", str(too_large))]
    assert w.proxy.valid == {}


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (
            {"__ansible_unsafe": {"ansible_operator_meta": {"namespace": "other"}}},
            "spec.__ansible_unsafe",
        ),
        (
            {"a": [{"b": {"__ansible_vault": "$ANSIBLE_VAULT;1.1;AES256"}}]},
            "spec.a[0].b.__ansible_vault",
        ),
        ({"x": {"__ansible_type": "x"}}, "spec.x.__ansible_type"),
    ],
)
def test_a_serialization_marker_key_anywhere_is_refused_naming_the_field(tmp_path, spec, field):
    w = world(tmp_path, [], watch=WITH_FINALIZER, spec=spec)
    with pytest.raises(
        TerminalError, match=rf"^{re.escape(field)}: a key starting with __ansible_"
    ):
        w.reconcile()
    failure = w.condition("Failure")
    assert (failure["reason"], w.events()) == (
        "SpecRefused",
        [("Warning", "SpecRefused", failure["message"])],
    )
    assert w.runner.requests == [] and "finalizers" not in w.obj()["metadata"]


# --- reserved variables ---------------------------------------------------------------------------

INJECTION = {
    "ansibleConnection": "ssh",
    "ansibleHost": "127.0.0.1",
    "ansibleSshCommonArgs": "-o ProxyCommand='touch marker'",
}


def test_a_spec_that_sets_ansible_variables_is_refused_without_a_run_or_a_finalizer(tmp_path):
    w = world(tmp_path, [], watch=WITH_FINALIZER, spec={"size": 1, **INJECTION})
    with pytest.raises(TerminalError) as raised:
        w.reconcile()

    message = (
        "spec.ansibleConnection would set the Ansible variable ansible_connection; "
        "spec.ansibleHost would set the Ansible variable ansible_host; "
        "spec.ansibleSshCommonArgs would set the Ansible variable ansible_ssh_common_args: "
        "Ansible's own variables are not the CR's to set (remove the field, or allow the "
        "variable by name with allowReservedVars in watches.yaml)"
    )
    assert str(raised.value) == message
    assert w.runner.requests == [] and w.proxy.issued == 0
    failure = w.condition("Failure")
    assert (failure["status"], failure["reason"], failure["message"]) == (
        "True",
        "ReservedVariable",
        message,
    )
    assert w.events() == [("Warning", "ReservedVariable", message)]
    assert "finalizers" not in w.obj()["metadata"]  # nothing to clean up: nothing ran


def test_without_snake_case_the_keys_as_written_are_refused(tmp_path):
    watch = Watch(gvk=WATCH.gvk, role="/roles/thing", snake_case_parameters=False)
    w = world(tmp_path, [], watch=watch, spec={"ansible_become_password": "x", "ansibleHost": 1})
    with pytest.raises(
        TerminalError,
        match=r"^spec\.ansible_become_password would set the "
        r"Ansible variable ansible_become_password: ",
    ):
        w.reconcile()
    assert w.runner.requests == []


def test_a_variable_the_watch_allows_by_name_reaches_the_role(tmp_path):
    watch = Watch(gvk=WATCH.gvk, role="/roles/thing", allow_reserved_vars=("ansible_host",))
    w = world(tmp_path, [succeeded()], watch=watch, spec={"ansibleHost": "db"})
    w.reconcile()
    [request] = w.runner.requests
    assert request.extravars["ansible_host"] == "db"
    assert isinstance(request.extravars["ansible_host"], UnsafeText)

    w = world(tmp_path / "2", [], watch=watch, spec={"ansibleHost": "db", "ansibleUser": "x"})
    with pytest.raises(TerminalError, match="ansibleUser would set the Ansible variable"):
        w.reconcile()


def test_a_finalizer_run_is_refused_too_and_the_finalizer_stays(tmp_path):
    w = world(tmp_path, [], watch=WITH_FINALIZER, finalizers=[FINALIZER], spec=INJECTION)
    w.api.delete(THINGS, "ns", "a")
    with pytest.raises(TerminalError, match="ansible_connection"):
        w.reconcile()
    assert w.runner.requests == []
    assert w.obj()["metadata"]["finalizers"] == [FINALIZER]


def test_a_key_that_shadows_a_magic_name_runs_with_one_warning_per_name(tmp_path, caplog):
    names = frozenset({"port", "environment", "hostvars"})
    spec = {"port": 80, "environment": "prod", "size": 1}
    w = world(tmp_path, [succeeded(), succeeded()], spec=spec, ansible_names=names)
    with caplog.at_level(logging.WARNING, logger="reconciler"):
        w.reconcile()
        w.reconcile()
    assert len(w.runner.requests) == 2
    shadows = [r.getMessage() for r in caplog.records if "a name ansible-core" in r.getMessage()]
    assert sorted(m.split()[0] for m in shadows) == ["spec.environment", "spec.port"]
    assert "the CR's spec is also _test_example_com_thing_spec" in shadows[0]


def test_an_unreachable_api_server_is_retried(tmp_path):
    w = world(tmp_path, [])
    w.api.unreachable = True
    with pytest.raises(ReconcileError, match="connection refused"):
        w.reconcile()


def test_a_kind_the_api_server_does_not_serve_is_retried(tmp_path):
    w = world(tmp_path, [])
    w.api.resources.clear()
    with pytest.raises(ReconcileError, match="discovery of Thing: 404"):
        w.reconcile()


# --- requeue -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "outcome", "expected"),
    [
        (None, succeeded(), 3600.0),  # --reconcile-period
        ({PERIOD_ANNOTATION: "5m"}, succeeded(), 300.0),
        ({PERIOD_ANNOTATION: "0s"}, succeeded(), None),
        ({PERIOD_ANNOTATION: "5m"}, succeeded(requeue_after=30.0), 30.0),  # the role's wins
    ],
)
def test_the_next_run(tmp_path, annotations, outcome, expected):
    w = world(tmp_path, [outcome], annotations=annotations)
    assert w.reconcile() == Result(requeue_after=expected)


def test_the_runs_warnings_reach_the_log(tmp_path, caplog):
    warning = "requeue_after task 'wait': time: invalid duration \"soon\""
    w = world(tmp_path, [succeeded(warnings=[warning])])
    with caplog.at_level(logging.WARNING, logger="runner"):
        w.reconcile()
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("runner", logging.WARNING, warning)
    ]


# --- the run session ---------------------------------------------------------------------------


def test_a_run_gets_its_own_token_and_kubeconfig_and_both_go_with_it(tmp_path):
    seen: dict[str, Any] = {}

    def look(request: RunRequest) -> None:
        seen["kubeconfig"] = yaml.safe_load(Path(request.kubeconfig).read_text())
        seen["valid"] = dict(w.proxy.valid)

    w = world(tmp_path, [succeeded()], during=look)
    w.reconcile()

    [request] = w.runner.requests
    kubeconfig = seen["kubeconfig"]
    assert kubeconfig["clusters"][0]["cluster"]["server"] == "http://127.0.0.1:18888"
    assert kubeconfig["users"][0]["user"]["token"] == "token-1"
    assert kubeconfig["current-context"] == "ns/proxy-server"
    assert seen["valid"] == {"token-1": "a"}
    assert w.proxy.valid == {}
    assert not Path(request.kubeconfig).exists()


@pytest.mark.parametrize(
    ("max_verbosity", "asked", "runs_at"),
    [(None, "5", 2), (None, "1", 1), (3, "5", 3), (3, "3", 3), (0, "2", 0)],
)
def test_a_crs_verbosity_is_at_most_the_watchs_said_once(
    tmp_path, caplog, max_verbosity, asked, runs_at
):
    settings = RunSettings(ansible=Ansible(ansible_verbosity=2))
    watch = Watch(gvk=WATCH.gvk, role="/roles/thing", max_verbosity=max_verbosity)
    annotations = {"ansible.sdk.operatorframework.io/verbosity": asked}
    w = world(tmp_path, [succeeded(), succeeded()], watch=watch, settings=settings,
              annotations=annotations)  # fmt: skip
    w.reconcile()
    w.reconcile()
    assert [r.verbosity for r in w.runner.requests] == [runs_at, runs_at]
    said = [r.message for r in caplog.records if "verbosity annotation of ns/a" in r.message]
    if runs_at < int(asked):
        assert said == [
            f"The verbosity annotation of ns/a asks for {asked}, more than Thing's maximum "
            f"{runs_at}: its runs use {runs_at} (maxVerbosity in watches.yaml allows more); said "
            "once for this kind"
        ]
    else:
        assert said == []


def test_the_run_request_takes_the_flags_the_watch_and_the_annotations(tmp_path):
    settings = RunSettings(
        ansible=Ansible(ansible_args="'--check'", ansible_verbosity=2, ansible_run_timeout=60.0)
    )
    watch = Watch(
        gvk=WATCH.gvk,
        role="/roles/thing",
        run_timeout=5.0,
        max_runner_artifacts=20,
        max_verbosity=4,
    )
    annotations = {
        "ansible.sdk.operatorframework.io/verbosity": "4",
        "ansible.sdk.operatorframework.io/max-runner-artifacts": "3",
    }
    w = world(
        tmp_path,
        [succeeded(), succeeded()],
        watch=watch,
        settings=settings,
        annotations=annotations,
        extra_env=lambda: {"ANSIBLE_OPERATOR_USER_METRICS_URL": "http://127.0.0.1:5050/metrics"},
    )
    w.reconcile()
    w.api.edit(THINGS, "ns", "a", lambda o: o["metadata"].pop("annotations"))
    w.reconcile()

    annotated, plain = w.runner.requests
    assert annotated.ansible_args == "'--check'"  # as given; the input dir strips the quotes
    assert (annotated.verbosity, annotated.rotate_artifacts) == (4, 3)
    assert (plain.verbosity, plain.rotate_artifacts) == (2, 20)
    assert annotated.timeout == 5.0  # the watch's runTimeout beats --ansible-run-timeout
    assert annotated.extra_env == {
        "ANSIBLE_OPERATOR_USER_METRICS_URL": "http://127.0.0.1:5050/metrics"
    }
    assert annotated.private_data_dir == w.input_dir()


# --- held for review -----------------------------------------------------------------------------

HOLD = "ansible.sdk.operatorframework.io/hold"


def test_a_held_cr_is_planned_with_dry_run_writes_and_its_condition_counts_the_changes(
    tmp_path, caplog
):
    caplog.set_level(logging.INFO, logger="reconciler")

    def dry_run_create(request: RunRequest) -> None:
        assert w.proxy.writes is not None
        assert w.proxy.writes.dry_run, "a held CR's token makes its writes dry runs"
        created = {"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}
        w.proxy.writes.add(Write("create", "v1", "ConfigMap", "ns", "c", after=created))

    w = world(tmp_path, [succeeded()], annotations={HOLD: "true"}, during=dry_run_create)
    assert w.reconcile() == Result(requeue_after=3600.0)

    [request] = w.runner.requests
    assert request.ansible_args == "--check --diff"
    running = w.condition("Running")
    assert (running["status"], running["reason"]) == ("False", "Held")
    assert running["message"] == (
        f"Held for review ({HOLD}): 1 change(s) pending: ConfigMap ns/c (create); "
        "remove the hold to apply"
    )
    assert w.condition("Stalled")["reason"] == "Held"
    assert "Successful" not in [c["type"] for c in w.obj()["status"]["conditions"]]
    assert len(w.api.writes("PUT", "/status")) == 1, "no Running=True: nothing runs for real"
    [said] = [r for r in caplog.records if r.getMessage() == "Held for review"]
    assert (said.outcome, said.pending, said.condition) == ("Changes", 1, running["message"])


def test_a_kind_held_by_its_watch_is_released_per_cr_and_a_bad_value_holds(tmp_path):
    held_kind = dataclasses.replace(WATCH, hold=True)
    w = world(tmp_path, [succeeded()], watch=held_kind, annotations={HOLD: "false"})
    w.reconcile()
    assert w.proxy.writes is not None and not w.proxy.writes.dry_run
    assert w.runner.requests[0].ansible_args == ""
    assert w.condition("Successful")["status"] == "True"

    w = world(tmp_path / "typo", [succeeded()], annotations={HOLD: "yes please"})
    w.reconcile()
    assert w.proxy.writes is not None and w.proxy.writes.dry_run
    assert w.condition("Running")["message"].startswith(f"Held for review ({HOLD}): nothing")
