"""What /readyz answers, as the manager reports the API server and the watches."""

from __future__ import annotations

from ansible_operator.runtime.manager.readiness import Readiness


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_acting_replica_is_ready_once_it_reached_the_api_server_and_watches():
    readiness = Readiness(grace=15, clock=Clock())
    readiness.acting()
    assert readiness.why_not_ready() == "the API server has not answered yet"
    readiness.api_answered()
    assert readiness.why_not_ready() == "the watches are not established yet"
    readiness.watches_established()
    assert readiness.why_not_ready() is None


def test_a_follower_is_ready_once_it_reached_the_api_server():
    readiness = Readiness(grace=15, clock=Clock())
    readiness.api_failed()
    assert readiness.why_not_ready() == "the API server has not answered yet"
    readiness.api_answered()
    assert readiness.why_not_ready() is None
    readiness.acting()  # it became the leader
    assert readiness.why_not_ready() == "the watches are not established yet"


def test_losing_the_api_server_is_unready_only_after_the_grace_period():
    clock = Clock()
    readiness = Readiness(grace=15, clock=clock)
    readiness.api_answered()
    readiness.api_failed()
    clock.now = 10
    readiness.api_failed()  # still counted from the first failure
    clock.now = 15
    assert readiness.why_not_ready() is None
    clock.now = 15.5
    assert readiness.why_not_ready() == "the API server has not answered for over 15s"
    readiness.api_answered()
    assert readiness.why_not_ready() is None
