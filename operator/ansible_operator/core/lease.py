"""Leader election on a Lease: what one candidate decides from what it read, without any I/O.

The rules are client-go's (``tools/leaderelection``), so this operator and Go controllers read a
Lease alike. A candidate never trusts the times written in the Lease, since another replica's
clock may be off: it notes on its own monotonic clock *when it saw* the record change, and treats
a held lease as taken until ``leaseDurationSeconds`` have passed since then. The leader renews
every retry period and stops acting once it has not renewed for retry period + renew deadline,
counted from when its last successful write was *sent*; since that is less than the lease
duration (checked at start), it has stopped before any other candidate may take over.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass, replace
from typing import Any

# client-go's wait.JitterUntil factor: followers retry every retry period to 2.2 times that.
JITTER_FACTOR = 1.2


@dataclass(frozen=True)
class Timings:
    """controller-runtime's defaults, in seconds."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def problem(self) -> str | None:
        """What is wrong with these timings, in client-go's words; None when they work."""
        if self.lease_duration <= self.renew_deadline:
            return "leaseDuration must be greater than renewDeadline"
        # The Lease holds whole seconds, and followers go by what it holds.
        if self.lease_seconds <= self.renew_deadline + self.retry_period:
            # Beyond client-go: otherwise a leader could still act when others may take over.
            return (
                "leaseDuration must be greater than renewDeadline + retryPeriod "
                f"({self.retry_period:g}s), so that a leader that cannot renew stops in time"
            )
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            return "renewDeadline must be greater than retryPeriod*JitterFactor"
        return None

    @property
    def lease_seconds(self) -> int:
        """The term written into the Lease: whole seconds, as client-go truncates it."""
        return int(self.lease_duration)


def microtime(moment: datetime.datetime) -> str:
    """A Kubernetes MicroTime: RFC 3339 in UTC with microseconds."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaseRecord:
    """The fields of a Lease's spec that leader election reads and writes."""

    holder: str = ""  # "" when nobody holds it (released)
    lease_duration_seconds: int = 0
    acquire_time: str | None = None  # MicroTime strings, kept as written
    renew_time: str | None = None
    transitions: int = 0

    @classmethod
    def from_spec(cls, spec: dict[str, Any] | None) -> LeaseRecord:
        spec = spec or {}
        return cls(
            holder=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.transitions,
        }
        if self.holder:
            spec["holderIdentity"] = self.holder
        if self.acquire_time is not None:
            spec["acquireTime"] = self.acquire_time
        if self.renew_time is not None:
            spec["renewTime"] = self.renew_time
        return spec


class Candidate:
    """One replica's view of the Lease: the record it last saw or wrote, and when (monotonic).

    Every method takes the current monotonic time ``now`` and wall-clock time ``wall``
    (written into the Lease for people to read; no decision depends on it).
    """

    def __init__(self, identity: str, timings: Timings) -> None:
        self.identity = identity
        self.timings = timings
        self.observed: LeaseRecord | None = None
        self.observed_at = -math.inf
        self.renewed_at = -math.inf  # when this candidate's last accepted write was sent

    @property
    def is_leader(self) -> bool:
        return self.observed is not None and self.observed.holder == self.identity

    @property
    def holder(self) -> str:
        """Who this candidate last saw holding the Lease ("" for nobody)."""
        return self.observed.holder if self.observed is not None else ""

    def lease_valid(self, now: float) -> bool:
        """Whether the observed holder's term still runs, measured from when it was observed."""
        if self.observed is None:
            return False
        return self.observed_at + self.observed.lease_duration_seconds > now

    def _own_record(self, wall: datetime.datetime) -> LeaseRecord:
        stamp = microtime(wall)
        return LeaseRecord(
            holder=self.identity,
            lease_duration_seconds=self.timings.lease_seconds,
            acquire_time=stamp,
            renew_time=stamp,
        )

    def renewal(self, now: float, wall: datetime.datetime) -> LeaseRecord | None:
        """The record a leader writes without reading first (client-go's fast path), or None
        when it must read the Lease first: it is not the leader, or its own term has run out."""
        if not (self.is_leader and self.lease_valid(now)):
            return None
        assert self.observed is not None
        return replace(
            self._own_record(wall),
            acquire_time=self.observed.acquire_time,
            transitions=self.observed.transitions,
        )

    def observe(self, current: LeaseRecord, now: float) -> None:
        """The Lease as just read: a changed record starts its holder's term anew, as seen
        from here."""
        if current != self.observed:
            self.observed, self.observed_at = current, now

    def claim(
        self, current: LeaseRecord | None, now: float, wall: datetime.datetime
    ) -> LeaseRecord | None:
        """Given the Lease as just read (None: it does not exist), the record to write to take
        or keep it, or None while another holder's term still runs."""
        if current is None:
            return self._own_record(wall)
        self.observe(current, now)
        if current.holder and self.lease_valid(now) and not self.is_leader:
            return None
        if self.is_leader:
            return replace(
                self._own_record(wall),
                acquire_time=current.acquire_time,
                transitions=current.transitions,
            )
        return replace(self._own_record(wall), transitions=current.transitions + 1)

    def wrote(self, record: LeaseRecord, sent_at: float) -> None:
        """The API server accepted ``record``, sent at ``sent_at``: it is now what this candidate
        has observed. Times count from the sending, which can only make the leader stop early."""
        self.observed, self.observed_at = record, sent_at
        if record.holder == self.identity:
            self.renewed_at = sent_at

    def acting_deadline(self) -> float:
        """When a leader that has not renewed since must have stopped acting: a retry period
        and the renew deadline after its last accepted write was sent. Any other candidate saw
        that write later and waits a whole lease duration from then, which is longer."""
        return self.renewed_at + self.timings.retry_period + self.timings.renew_deadline

    def release(self, current: LeaseRecord | None, wall: datetime.datetime) -> LeaseRecord | None:
        """Given the Lease as just read, the record that gives it up (client-go's
        ReleaseOnCancel: no holder, a term of one second), or None when it is not ours."""
        if current is None or current.holder != self.identity:
            return None
        stamp = microtime(wall)
        return LeaseRecord(
            holder="",
            lease_duration_seconds=1,
            acquire_time=stamp,
            renew_time=stamp,
            transitions=current.transitions,
        )
