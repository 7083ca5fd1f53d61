"""kstatus's conditions, written beside upstream's three: pure functions from old status to new.

Argo CD, Flux, `kubectl wait` and cli-utils judge a custom resource by the kstatus conventions
(sigs.k8s.io/cli-utils/pkg/kstatus): `status.observedGeneration`, and the abnormal-true
conditions `Reconciling` and `Stalled`, beside `Ready`. Upstream's `Running`, `Successful` and
`Failure` mean nothing to them, so each write of ours also says, for the generation it read:

- `Reconciling=True` while that generation has not succeeded yet: its run is going on, or a
  failed (or interrupted) run waits for its retry. A re-run of a generation that succeeded
  already (the periodic one, a dependent's change) is not reconciling it again;
- `Stalled=True` when the operator gave up until the spec changes (a refused spec, a reserved
  variable, a bad annotation): what the retries cannot mend;
- `Ready=True` when the last run of that generation succeeded. A role that writes `Ready` itself
  (with a reason of its own, through `k8s_status`) owns it when its run succeeds; a run that
  fails, or a new generation, makes it False;
- `status.observedGeneration`, and each condition's `observedGeneration`.

Types and reasons are kstatus's and Flux's (`Progressing`, `Succeeded`); the messages are ours.
Every other condition and status key is kept as it is.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ansible_operator.core import conditions
from ansible_operator.core.conditions import FALSE, TRUE, Condition, Status

RECONCILING = "Reconciling"
STALLED = "Stalled"
READY = "Ready"

REASON_PROGRESSING = "Progressing"
REASON_SUCCEEDED = "Succeeded"
REASON_RETRYING = "RetryingAfterFailure"
REASON_INTERRUPTED = conditions.REASON_INTERRUPTED
REASON_STALLED = "Stalled"


_TYPES = (RECONCILING, STALLED, READY)


class Phase(enum.Enum):
    RUNNING = "running"  # a run starts
    SUCCEEDED = "succeeded"
    RETRYING = "retrying"  # a run failed or could not start; the controller retries it
    INTERRUPTED = "interrupted"  # a stop ended the run; the next operator runs it again
    STALLED = "stalled"  # no run until the spec changes


# Ready's reasons that this module writes (a failure's are upstream's and the refusals'): a
# Ready with another reason is the role's.
_OUR_READY_REASONS = frozenset(
    {
        REASON_PROGRESSING,
        REASON_SUCCEEDED,
        REASON_INTERRUPTED,
        REASON_STALLED,
        conditions.REASON_FAILED,
        conditions.REASON_TIMEOUT,
        conditions.REASON_RESERVED_VARIABLE,
        conditions.REASON_SPEC_REFUSED,
        conditions.REASON_HELD,
    }
)


def apply(
    status: Mapping[str, Any],
    phase: Phase,
    *,
    now: datetime,
    generation: int | None,
    reason: str = "",
    message: str = "",
) -> Status:
    """``status`` (upstream's conditions just written) with the kstatus conditions for ``phase``;
    ``reason`` and ``message`` say why for RETRYING and STALLED."""
    stamp = conditions.format_transition_time(now)
    new = dict(status)
    found = new.get("conditions")
    kept: list[Condition] = [dict(c) for c in found] if isinstance(found, list) else []
    if generation is not None:
        new["observedGeneration"] = generation
    done = _succeeded(kept, generation)
    on = f"generation {generation}" if generation is not None else "the resource"
    wanted: list[tuple[str, str, str, str]] = []  # type, status, reason, message
    if phase is Phase.RUNNING or phase is Phase.INTERRUPTED:
        if not done:
            why = REASON_PROGRESSING if phase is Phase.RUNNING else REASON_INTERRUPTED
            said = f"Reconciling {on}" if phase is Phase.RUNNING else message
            wanted = [
                (RECONCILING, TRUE, why, said),
                (STALLED, FALSE, why, said),
                (READY, FALSE, why, said),
            ]
    elif phase is Phase.SUCCEEDED:
        said = f"Reconciled {on}"
        wanted = [
            (RECONCILING, FALSE, REASON_SUCCEEDED, said),
            (STALLED, FALSE, REASON_SUCCEEDED, said),
            (READY, TRUE, REASON_SUCCEEDED, conditions.MESSAGE_SUCCEEDED),
        ]
    elif phase is Phase.RETRYING:
        said = f"{message}; retried with backoff" if message else "retried with backoff"
        wanted = [
            (RECONCILING, TRUE, REASON_RETRYING, said),
            (STALLED, FALSE, REASON_RETRYING, said),
            (READY, FALSE, reason or conditions.REASON_FAILED, message),
        ]
    else:  # STALLED
        said = f"{message}; not retried until the resource changes"
        wanted = [
            (RECONCILING, FALSE, REASON_STALLED, said),
            (STALLED, TRUE, reason or REASON_STALLED, said),
            (READY, FALSE, reason or REASON_STALLED, message),
        ]
    for ctype, value, why, said in wanted:
        if ctype == READY and not _ours(kept, phase):
            continue
        kept = _put(kept, ctype, value, why, said, stamp, generation)
    # Upstream's three where upstream puts them (first, in a CR nobody else writes), ours last.
    new["conditions"] = [c for c in kept if c.get("type") not in _TYPES] + [
        c for ctype in _TYPES for c in kept if c.get("type") == ctype
    ]
    return new


def _succeeded(kept: list[Condition], generation: int | None) -> bool:
    """Whether this generation's last run succeeded (our Reconciling=False/Succeeded for it)."""
    current = next((c for c in kept if c.get("type") == RECONCILING), None)
    return (
        current is not None
        and current.get("status") == FALSE
        and current.get("reason") == REASON_SUCCEEDED
        and current.get("observedGeneration") == generation
    )


def _ours(kept: list[Condition], phase: Phase) -> bool:
    """Whether Ready is ours to write: always when a run did not succeed; after a success only
    when no role wrote it (a Ready with a reason this module does not write)."""
    if phase is not Phase.SUCCEEDED:
        return True
    ready = next((c for c in kept if c.get("type") == READY), None)
    return ready is None or ready.get("reason") in _OUR_READY_REASONS


def _put(
    kept: list[Condition],
    ctype: str,
    value: str,
    reason: str,
    message: str,
    stamp: str,
    generation: int | None,
) -> list[Condition]:
    """Set one condition, its transition time moved only when its status flips."""
    condition = conditions.new_condition(
        ctype, value, reason, message, now=stamp, generation=generation
    )
    for i, current in enumerate(kept):
        if current.get("type") == ctype:
            if current.get("status") == value and conditions.is_rfc3339(
                current.get("lastTransitionTime")
            ):
                condition["lastTransitionTime"] = current["lastTransitionTime"]
            return [*kept[:i], condition, *kept[i + 1 :]]
    return [*kept, condition]
