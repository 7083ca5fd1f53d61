"""kstatus's conditions through a CR's life, written beside upstream's three (core.kstatus)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ansible_operator.core import conditions, kstatus
from ansible_operator.core.kstatus import Phase
from ansible_operator.dev import project

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


class Life:
    """One CR's status as the status writer writes it: upstream's conditions, then kstatus's."""

    def __init__(self) -> None:
        self.status: dict[str, Any] = {}
        self.generation = 1
        self.now = T0

    def step(self, upstream: Any, phase: Phase, **why: str) -> dict[str, tuple[str, str]]:
        self.now += timedelta(seconds=10)
        written = upstream(self.status, now=self.now, generation=self.generation)
        self.status = kstatus.apply(written, phase, now=self.now, generation=self.generation, **why)
        return self.kstatus()

    def running(self) -> dict[str, tuple[str, str]]:
        return self.step(conditions.mark_running, Phase.RUNNING)

    def succeeded(self) -> dict[str, tuple[str, str]]:
        def success(status: Any, **at: Any) -> Any:
            return conditions.mark_success(status, ansible_result=None, **at)

        return self.step(success, Phase.SUCCEEDED)

    def failed(self, message: str = "task 'x' failed: boom") -> dict[str, tuple[str, str]]:
        def failure(status: Any, **at: Any) -> Any:
            return conditions.mark_failure(status, message=message, ansible_result=None, **at)

        return self.step(failure, Phase.RETRYING, reason="Failed", message=message)

    def refused(self, message: str) -> dict[str, tuple[str, str]]:
        def error(status: Any, **at: Any) -> Any:
            return conditions.mark_error(status, message=message, reason="SpecRefused", **at)

        return self.step(error, Phase.STALLED, reason="SpecRefused", message=message)

    def kstatus(self) -> dict[str, tuple[str, str]]:
        return {
            c["type"]: (c["status"], c["reason"])
            for c in self.status["conditions"]
            if c["type"] in ("Reconciling", "Stalled", "Ready")
        }

    def condition(self, ctype: str) -> dict[str, Any]:
        return next(c for c in self.status["conditions"] if c["type"] == ctype)


def test_a_new_cr_reconciles_then_is_ready_for_its_generation() -> None:
    life = Life()
    assert life.running() == {
        "Reconciling": ("True", "Progressing"),
        "Stalled": ("False", "Progressing"),
        "Ready": ("False", "Progressing"),
    }
    assert life.condition("Reconciling")["message"] == "Reconciling generation 1"
    assert life.succeeded() == {
        "Reconciling": ("False", "Succeeded"),
        "Stalled": ("False", "Succeeded"),
        "Ready": ("True", "Succeeded"),
    }
    assert life.status["observedGeneration"] == 1
    assert all(c["observedGeneration"] == 1 for c in life.status["conditions"])
    # Upstream's three first, in upstream's steady-state order; ours last.
    types = [c["type"] for c in life.status["conditions"]]
    assert types == ["Running", "Successful", "Failure", "Reconciling", "Stalled", "Ready"]


def test_a_re_run_of_a_reconciled_generation_is_not_reconciling_and_stays_ready() -> None:
    life = Life()
    life.running()
    life.succeeded()
    ready_since = life.condition("Ready")["lastTransitionTime"]
    assert life.running() == {
        "Reconciling": ("False", "Succeeded"),
        "Stalled": ("False", "Succeeded"),
        "Ready": ("True", "Succeeded"),
    }
    life.succeeded()
    assert life.condition("Ready")["lastTransitionTime"] == ready_since


def test_a_new_generation_is_reconciling_until_its_run_succeeds() -> None:
    life = Life()
    life.running()
    life.succeeded()
    life.generation = 2
    assert life.running()["Reconciling"] == ("True", "Progressing")
    assert life.kstatus()["Ready"] == ("False", "Progressing")
    assert life.status["observedGeneration"] == 2
    assert life.succeeded()["Ready"] == ("True", "Succeeded")


def test_a_failing_run_is_retried_not_stalled_and_a_later_success_is_ready() -> None:
    life = Life()
    life.running()
    assert life.failed() == {
        "Reconciling": ("True", "RetryingAfterFailure"),
        "Stalled": ("False", "RetryingAfterFailure"),
        "Ready": ("False", "Failed"),
    }
    assert life.condition("Reconciling")["message"] == (
        "task 'x' failed: boom; retried with backoff"
    )
    assert life.running()["Reconciling"] == ("True", "Progressing")
    assert life.succeeded()["Ready"] == ("True", "Succeeded")


def test_a_periodic_run_that_fails_makes_a_ready_cr_not_ready() -> None:
    life = Life()
    life.running()
    life.succeeded()
    life.running()
    assert life.failed()["Ready"] == ("False", "Failed")
    assert life.kstatus()["Reconciling"] == ("True", "RetryingAfterFailure")


def test_a_refused_spec_is_stalled_until_the_spec_changes() -> None:
    life = Life()
    assert life.refused("spec.x: a marker key") == {
        "Reconciling": ("False", "Stalled"),
        "Stalled": ("True", "SpecRefused"),
        "Ready": ("False", "SpecRefused"),
    }
    assert life.condition("Stalled")["message"] == (
        "spec.x: a marker key; not retried until the resource changes"
    )
    life.generation = 2
    assert life.running() == {
        "Reconciling": ("True", "Progressing"),
        "Stalled": ("False", "Progressing"),
        "Ready": ("False", "Progressing"),
    }


def test_an_interrupted_run_is_reconciling_only_for_a_generation_not_yet_reconciled() -> None:
    life = Life()
    life.running()
    message = conditions.interrupted_message("the operator is stopping")

    def interrupted(status: Any, **at: Any) -> Any:
        return conditions.mark_interrupted(status, cause="the operator is stopping", **at)

    assert life.step(interrupted, Phase.INTERRUPTED, message=message)["Reconciling"] == (
        "True",
        "Interrupted",
    )
    life.running()
    life.succeeded()
    after = life.step(interrupted, Phase.INTERRUPTED, message=message)
    assert after["Reconciling"] == ("False", "Succeeded")
    assert after["Ready"] == ("True", "Succeeded")


def role_writes_ready(life: Life, status: str, reason: str) -> None:
    """What a role's k8s_status does during its run: its own Ready, no observedGeneration."""
    others = [c for c in life.status["conditions"] if c["type"] != "Ready"]
    ready = {"type": "Ready", "status": status, "reason": reason, "message": "2 of 3 available"}
    life.status = {**life.status, "conditions": [*others, ready]}


def test_a_role_that_writes_ready_owns_it_when_its_run_succeeds() -> None:
    life = Life()
    life.running()
    role_writes_ready(life, "False", "DeploymentNotAvailable")
    assert life.succeeded() == {
        "Reconciling": ("False", "Succeeded"),
        "Stalled": ("False", "Succeeded"),
        "Ready": ("False", "DeploymentNotAvailable"),
    }
    life.running()  # the requeue: the same generation, nothing reconciling
    role_writes_ready(life, "True", "DeploymentAvailable")
    assert life.succeeded()["Ready"] == ("True", "DeploymentAvailable")
    # A failed run says so in Ready whoever wrote it; the role's next success writes its own.
    life.running()
    assert life.failed()["Ready"] == ("False", "Failed")
    life.running()
    role_writes_ready(life, "True", "DeploymentAvailable")
    assert life.succeeded()["Ready"] == ("True", "DeploymentAvailable")


def test_other_conditions_and_status_keys_are_kept() -> None:
    status = {"phase": "New", "conditions": [{"type": "Degraded", "status": "False"}]}
    written = kstatus.apply(status, Phase.RUNNING, now=T0, generation=3)
    assert written["phase"] == "New"
    assert written["conditions"][0] == {"type": "Degraded", "status": "False"}
    assert written["observedGeneration"] == 3
    assert status == {"phase": "New", "conditions": [{"type": "Degraded", "status": "False"}]}


def test_make_run_s_banner_waits_for_ready_or_successful_where_kstatus_is_off() -> None:
    life = Life()
    life.running()
    role_writes_ready(life, "False", "DeploymentNotAvailable")
    life.succeeded()
    assert not project.ready({"status": life.status})  # the role's own Ready is not yet true
    role_writes_ready(life, "True", "DeploymentAvailable")
    assert project.ready({"status": life.status})
    upstream_only = conditions.mark_success({}, ansible_result=None, now=T0, generation=1)
    assert project.ready({"status": upstream_only})  # kstatusConditions: false
    assert not project.ready({"status": {}})
