"""What ``/readyz`` answers: ready means the operator can see, not only that it is running.

An operator is ready once the API server has answered and, when it acts (no leader election, or
as the leader), once its watches are established; a follower, which watches nothing, is ready
as soon as it reaches the API server, as every upstream replica serves its probes. Losing the
API server makes it unready only after a grace period, so that one slow answer does not take
every replica out of a Service at once. Pure state with an injected clock; the manager feeds it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

API_GRACE = 15.0  # seconds the API server may stay silent before /readyz fails
API_CHECK_INTERVAL = 5.0  # how often the manager asks the API server for /version


class Readiness:
    def __init__(
        self, *, grace: float = API_GRACE, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._grace = grace
        self._clock = clock
        self._reached = False
        self._lost_since: float | None = None
        self._needs_watches = False
        self._watching = False

    def api_answered(self) -> None:
        self._reached = True
        self._lost_since = None

    def api_failed(self) -> None:
        if self._lost_since is None:
            self._lost_since = self._clock()

    def acting(self) -> None:
        """From now on this replica watches: it is unready until the watches are established."""
        self._needs_watches = True

    def watches_established(self) -> None:
        self._watching = True

    def why_not_ready(self) -> str | None:
        """None when ready; otherwise what is missing, for the probe's answer."""
        if not self._reached:
            return "the API server has not answered yet"
        if self._lost_since is not None and self._clock() - self._lost_since > self._grace:
            return f"the API server has not answered for over {self._grace:g}s"
        if self._needs_watches and not self._watching:
            return "the watches are not established yet"
        return None
