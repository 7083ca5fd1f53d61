"""Leader election decisions (core/lease.py) against a fake clock: client-go's rules."""

from __future__ import annotations

import datetime

import pytest

from ansible_operator.core.lease import Candidate, LeaseRecord, Timings, microtime

WALL = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.UTC)
TIMINGS = Timings()  # 15 s lease, 10 s renew deadline, 2 s retry


def held_by(holder: str, *, transitions: int = 3, renew: str = "2020-01-01T00:00:00.000000Z"):
    return LeaseRecord(
        holder=holder,
        lease_duration_seconds=15,
        acquire_time="2020-01-01T00:00:00.000000Z",
        renew_time=renew,
        transitions=transitions,
    )


def test_a_missing_lease_is_created_with_our_record():
    me = Candidate("me", TIMINGS)
    record = me.claim(None, 100.0, WALL)
    assert record == LeaseRecord("me", 15, microtime(WALL), microtime(WALL), 0)
    assert not me.is_leader  # not until the API server accepted it
    me.wrote(record, 100.0)
    assert me.is_leader


def test_another_holders_term_runs_a_lease_duration_from_when_we_saw_it():
    me = Candidate("me", TIMINGS)
    # The times written in the Lease are years old (a skewed clock): they do not matter.
    assert me.claim(held_by("other"), 100.0, WALL) is None
    assert me.claim(held_by("other"), 114.9, WALL) is None
    record = me.claim(held_by("other"), 115.0, WALL)
    assert record is not None
    assert (record.holder, record.transitions) == ("me", 4)
    assert record.acquire_time == record.renew_time == microtime(WALL)


def test_a_renewal_by_the_holder_restarts_its_term():
    me = Candidate("me", TIMINGS)
    assert me.claim(held_by("other", renew="2020-01-01T00:00:01.000000Z"), 100.0, WALL) is None
    renewed = held_by("other", renew="2020-01-01T00:00:03.000000Z")
    assert me.claim(renewed, 110.0, WALL) is None
    assert me.claim(renewed, 124.9, WALL) is None
    assert me.claim(renewed, 125.0, WALL) is not None


def test_a_released_lease_is_taken_at_once():
    me = Candidate("me", TIMINGS)
    assert me.claim(held_by("other"), 100.0, WALL) is None
    released = LeaseRecord("", 1, "x", "x", transitions=3)
    record = me.claim(released, 100.5, WALL)
    assert record is not None and (record.holder, record.transitions) == ("me", 4)


def test_the_leader_keeps_its_acquire_time_and_transitions():
    me = Candidate("me", TIMINGS)
    mine = LeaseRecord("me", 15, "2026-01-01T00:00:00.000000Z", "old", transitions=7)
    me.wrote(mine, 100.0)
    for record in (me.renewal(102.0, WALL), me.claim(mine, 102.0, WALL)):
        assert record == LeaseRecord("me", 15, mine.acquire_time, microtime(WALL), 7)


def test_the_fast_path_is_only_for_a_leader_within_its_term():
    me = Candidate("me", TIMINGS)
    assert me.renewal(100.0, WALL) is None  # never held it
    me.wrote(LeaseRecord("me", 15, "a", "a"), 100.0)
    assert me.renewal(114.9, WALL) is not None
    assert me.renewal(115.0, WALL) is None  # read the Lease first
    other = Candidate("other", TIMINGS)
    other.claim(held_by("me"), 100.0, WALL)
    assert other.renewal(101.0, WALL) is None


def test_a_leader_that_reads_another_holder_is_no_longer_leader():
    me = Candidate("me", TIMINGS)
    me.wrote(LeaseRecord("me", 15, "a", "a"), 100.0)
    assert me.claim(held_by("other"), 101.0, WALL) is None
    assert not me.is_leader and me.holder == "other"


@pytest.mark.parametrize(
    "timings",
    [Timings(), Timings(60, 30, 2), Timings(13, 10, 2), Timings(4, 2.5, 1)],
)
@pytest.mark.parametrize("seen_after", [0.0, 0.3, 5.0])
def test_the_leader_stops_acting_before_anyone_may_take_over(timings, seen_after):
    """The leader's last accepted write was sent at 100; a follower saw it `seen_after` later
    and heard nothing since. The leader's deadline comes first, whatever the follower's delay."""
    assert timings.problem() is None
    leader = Candidate("leader", timings)
    record = LeaseRecord("leader", int(timings.lease_duration), "a", "a")
    leader.wrote(record, 100.0)
    follower = Candidate("follower", timings)
    assert follower.claim(record, 100.0 + seen_after, WALL) is None
    takeover = 100.0 + seen_after
    while follower.claim(record, takeover, WALL) is None:
        takeover += 0.01
    assert leader.acting_deadline() < takeover
    assert leader.acting_deadline() == 100.0 + timings.retry_period + timings.renew_deadline


def test_release_clears_the_holder_for_one_second_and_keeps_the_count():
    me = Candidate("me", TIMINGS)
    mine = LeaseRecord("me", 15, "a", "a", transitions=2)
    released = me.release(mine, WALL)
    assert released == LeaseRecord("", 1, microtime(WALL), microtime(WALL), 2)
    assert "holderIdentity" not in released.to_spec()
    # Not ours (any more): nothing to give up.
    assert me.release(held_by("other"), WALL) is None
    assert me.release(None, WALL) is None
    me.wrote(released, 101.0)
    assert not me.is_leader


@pytest.mark.parametrize(
    ("timings", "problem"),
    [
        (Timings(15, 10, 2), None),
        (Timings(10, 10, 2), "leaseDuration must be greater than renewDeadline"),
        (Timings(11, 10, 2), "leaseDuration must be greater than renewDeadline + retryPeriod"),
        (Timings(15, 2.4, 2), "renewDeadline must be greater than retryPeriod*JitterFactor"),
    ],
)
def test_timings_are_checked(timings, problem):
    found = timings.problem()
    assert found == problem if problem is None else found.startswith(problem)


def test_spec_round_trip_and_microtime():
    record = held_by("x", transitions=5)
    spec = record.to_spec()
    assert spec == {
        "holderIdentity": "x",
        "leaseDurationSeconds": 15,
        "acquireTime": "2020-01-01T00:00:00.000000Z",
        "renewTime": "2020-01-01T00:00:00.000000Z",
        "leaseTransitions": 5,
    }
    assert LeaseRecord.from_spec(spec) == record
    assert LeaseRecord.from_spec(None) == LeaseRecord()
    assert microtime(WALL) == "2026-01-02T03:04:05.678901Z"
    east = datetime.timezone(datetime.timedelta(hours=2))
    assert microtime(WALL.astimezone(east)) == "2026-01-02T03:04:05.678901Z"
