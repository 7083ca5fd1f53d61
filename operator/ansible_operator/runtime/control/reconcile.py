"""The reconcile contract between the controller and the reconciler, as controller-runtime's
``reconcile`` package: a request names an object, the answer says when to run it again.

Reconciliation is level-based. The reconciler is handed only the object's identity (``Key``),
never the event that woke it, and reads the object afresh: if a CR's spec changed from
``size: 1`` to ``2`` and then ``3`` while a run was going on, the next run sees ``3`` once and
makes the world match it; nothing replays the ``2``. So events may be merged, dropped or
repeated without harm, and a restart loses nothing: every object is reconciled again.

A ``Request`` carries, beside the key, why the reconcile runs (``core.triggers``: the event,
the dependent or the timer that asked for it). It changes nothing a run does; it is for the run's
record, its span and the loop detector, and a ``Result`` may say why it asks for the next run.

The answer is one of three:

- a ``Result``: success; ``requeue_after`` asks for another run that many seconds later
  (the periodic re-run, or a role's ``requeue_after``), None for no timed re-run;
- ``ReconcileError``: the run failed and may succeed later (a failed task, an API outage), so
  the controller retries it with per-key exponential backoff;
- ``TerminalError``: the object itself is wrong (a bad annotation, say). It is reported (in the
  status and as an Event) and not retried: retrying cannot help until the object changes.

Queueing, de-duplication, one run per key at a time, backoff and timers live in the controller.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ansible_operator.core import Key, triggers


@dataclass(frozen=True)
class Request:
    """One object to reconcile, and why (the first reason asked since its last run began)."""

    key: Key
    trigger: triggers.Trigger = triggers.NONE_KNOWN


@dataclass(frozen=True)
class Result:
    """What a successful reconcile asks for: a re-run after ``requeue_after`` seconds, or none."""

    requeue_after: float | None = None
    # Why the re-run is asked for, for its record; not part of the answer's meaning.
    reason: triggers.Trigger | None = field(default=None, compare=False)


class ReconcileError(Exception):
    """The reconcile failed and should be retried with backoff; the message says why."""


class TerminalError(Exception):
    """The reconcile cannot succeed until the object changes; reported, not retried."""


ReconcileFn = Callable[[Request], Awaitable[Result]]
