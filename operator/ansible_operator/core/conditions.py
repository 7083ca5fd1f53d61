"""Status conditions a reconcile writes on its CR, as pure functions from old status to new.

Types, reasons, messages, order and upstream's SetCondition rules are kept (steady state after a
success: `[Running, Successful, Failure]`); deliberately, each condition we write records its
`observedGeneration`, a flipped condition gets a fresh `lastTransitionTime`, and conditions written
by others keep every field. A message we write is capped (core.limits). Callers pass `now`:
nothing here reads a clock.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ansible_operator.core.limits import CONDITION_MESSAGE_BYTES, cap

RUNNING = "Running"
SUCCESSFUL = "Successful"
FAILURE = "Failure"

REASON_RUNNING = "Running"
REASON_SUCCESSFUL = "Successful"
REASON_FAILED = "Failed"
# Ours: a run stopped from outside before it ended (not a verdict on the role), and one that
# ran past its timeout. Both are retried, and their messages say so.
REASON_INTERRUPTED = "Interrupted"
REASON_TIMEOUT = "Timeout"
# Ours: the spec sets a variable that is Ansible's, not the CR's (core.reserved); no run starts
# until the spec changes.
REASON_RESERVED_VARIABLE = "ReservedVariable"
# Ours: the CR cannot be handed to Ansible as data (core.extravars.check_spec says why, naming
# the field); no run starts until it changes.
REASON_SPEC_REFUSED = "SpecRefused"
# Ours: the CR is held for review (core.annotations.hold), its run planned and not applied.
REASON_HELD = "Held"

MESSAGE_RUNNING = "Running reconciliation"
MESSAGE_AWAITING = "Awaiting next reconciliation"
MESSAGE_SUCCEEDED = "Last reconciliation succeeded"

TRUE = "True"
FALSE = "False"

Condition = dict[str, Any]
Status = dict[str, Any]

_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$",
)


def _utc(moment: datetime) -> datetime:
    """Aware UTC time; a naive datetime is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def format_transition_time(moment: datetime) -> str:
    """`lastTransitionTime` form: RFC3339 in UTC, whole seconds (`2026-01-02T15:04:05Z`)."""
    return _utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_completion(moment: datetime) -> str:
    """`ansibleResult.completion` form: `2026-01-02T15:04:05.123456+00:00`.

    Upstream's Go layout `2006-01-02T15:04:05.99999999+00:00`: trailing zeros of the fraction
    are dropped (and the dot with them), and the offset is the literal `+00:00`.
    """
    utc = _utc(moment)
    fraction = f"{utc.microsecond:06d}".rstrip("0")
    return utc.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "+00:00"


def parse_runner_time(created: str) -> datetime:
    """Parse an ansible-runner event's `created` (ISO 8601, naive means UTC) into aware UTC."""
    text = created.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return _utc(datetime.fromisoformat(text))


def is_rfc3339(value: Any) -> bool:
    """True for an RFC3339 date-time string (any fraction, `Z` or a numeric offset)."""
    if not isinstance(value, str) or not _RFC3339.match(value):
        return False
    text = value[:-1] + "+00:00" if value[-1] in "Zz" else value
    try:
        datetime.fromisoformat(text.replace("t", "T"))
    except ValueError:
        return False
    return True


# --- the condition list ------------------------------------------------------------------------


def _normalise(entry: Mapping[str, Any], now: str) -> Condition:
    """Upstream's defaults for the fields it owns; every other field is kept as it is."""
    condition = copy.deepcopy(dict(entry))
    if not isinstance(condition.get("type"), str):
        condition["type"] = RUNNING
    if not isinstance(condition.get("status"), str):
        condition["status"] = TRUE
    for key in ("reason", "message"):
        if not isinstance(condition.get(key), str):
            condition[key] = ""
    if not is_rfc3339(condition.get("lastTransitionTime")):
        condition["lastTransitionTime"] = now
    return condition


def _split(status: Mapping[str, Any] | None, now: str) -> tuple[Status, list[Condition]]:
    """User keys of `.status` (copied) and its conditions (normalised; non-mappings dropped)."""
    source = status if isinstance(status, Mapping) else {}
    custom = {k: copy.deepcopy(v) for k, v in source.items() if k != "conditions"}
    raw = source.get("conditions")
    conditions = (
        [_normalise(c, now) for c in raw if isinstance(c, Mapping)] if isinstance(raw, list) else []
    )
    return custom, conditions


def _find(conditions: list[Condition], ctype: str) -> Condition | None:
    return next((c for c in conditions if c.get("type") == ctype), None)


def _set(
    conditions: list[Condition], condition: Condition, generation: int | None
) -> list[Condition]:
    """Upstream's SetCondition, plus: a new generation is never a no-op."""
    ctype = condition["type"]
    current = _find(conditions, ctype)
    if current is not None:
        same = (
            current.get("status") == condition["status"]
            and current.get("reason") == condition["reason"]
        )
        generation_seen = generation is None or current.get("observedGeneration") == generation
        if same and generation_seen and ctype != FAILURE:
            return conditions
        if current.get("status") == condition["status"]:
            condition["lastTransitionTime"] = current["lastTransitionTime"]
    return [c for c in conditions if c.get("type") != ctype] + [condition]


def new_condition(
    ctype: str,
    status: str,
    reason: str,
    message: str,
    *,
    now: str,
    generation: int | None,
    result: Mapping[str, Any] | None = None,
) -> Condition:
    condition: Condition = {
        "type": ctype,
        "status": status,
        "lastTransitionTime": now,
        "reason": reason,
        "message": cap(message, CONDITION_MESSAGE_BYTES),
    }
    if result is not None:
        condition["ansibleResult"] = copy.deepcopy(dict(result))
    if generation is not None:
        condition["observedGeneration"] = generation
    return condition


def _flip_false(
    conditions: list[Condition], ctype: str, *, now: str, generation: int | None
) -> list[Condition]:
    """Set an existing condition to False, keeping its reason, message and other fields."""
    current = _find(conditions, ctype)
    if current is None:
        return conditions
    flipped = copy.deepcopy(current)
    flipped["status"] = FALSE
    flipped["lastTransitionTime"] = now
    if generation is not None:
        flipped["observedGeneration"] = generation
    return _set(conditions, flipped, generation)


def _join(custom: Status, conditions: list[Condition]) -> Status:
    result = dict(custom)
    result["conditions"] = conditions
    return result


def mark_running(
    status: Mapping[str, Any] | None, *, now: datetime, generation: int | None
) -> Status:
    """Start of a run: `Successful` flips to False, `Running=True/Running`."""
    stamp = format_transition_time(now)
    custom, conditions = _split(status, stamp)
    conditions = _flip_false(conditions, SUCCESSFUL, now=stamp, generation=generation)
    running = new_condition(
        RUNNING, TRUE, REASON_RUNNING, MESSAGE_RUNNING, now=stamp, generation=generation
    )
    return _join(custom, _set(conditions, running, generation))


def mark_success(
    status: Mapping[str, Any] | None,
    *,
    ansible_result: Mapping[str, Any] | None,
    now: datetime,
    generation: int | None,
) -> Status:
    """A successful run: `Running=True/Successful` (with the result), `Successful=True`,
    `Failure=False`, in that order."""
    stamp = format_transition_time(now)
    custom, conditions = _split(status, stamp)
    for condition in (
        new_condition(
            RUNNING,
            TRUE,
            REASON_SUCCESSFUL,
            MESSAGE_AWAITING,
            now=stamp,
            generation=generation,
            result=ansible_result,
        ),
        new_condition(
            SUCCESSFUL,
            TRUE,
            REASON_SUCCESSFUL,
            MESSAGE_SUCCEEDED,
            now=stamp,
            generation=generation,
        ),
        new_condition(FAILURE, FALSE, "", "", now=stamp, generation=generation),
    ):
        conditions = _set(conditions, condition, generation)
    return _join(custom, conditions)


def mark_failure(
    status: Mapping[str, Any] | None,
    *,
    message: str,
    ansible_result: Mapping[str, Any] | None,
    now: datetime,
    generation: int | None,
    reason: str = REASON_FAILED,
) -> Status:
    """A failed run: `Running` flips to False, `Failure=True/<reason>/<message>` (with the
    result), `Successful=False`. Pass a reason such as `Timeout` for runs that were cut short."""
    stamp = format_transition_time(now)
    custom, conditions = _split(status, stamp)
    conditions = _flip_false(conditions, RUNNING, now=stamp, generation=generation)
    failure = new_condition(
        FAILURE, TRUE, reason, message, now=stamp, generation=generation, result=ansible_result
    )
    conditions = _set(conditions, failure, generation)
    successful = new_condition(SUCCESSFUL, FALSE, "", "", now=stamp, generation=generation)
    return _join(custom, _set(conditions, successful, generation))


def mark_error(
    status: Mapping[str, Any] | None,
    *,
    message: str,
    now: datetime,
    generation: int | None,
    reason: str = REASON_FAILED,
) -> Status:
    """The run could not happen (bad annotation, runner failed to start, ...): `Running` and
    `Successful` flip to False, `Failure=True/<reason>/<message>` (upstream's reason: `Failed`)."""
    stamp = format_transition_time(now)
    custom, conditions = _split(status, stamp)
    conditions = _flip_false(conditions, RUNNING, now=stamp, generation=generation)
    conditions = _flip_false(conditions, SUCCESSFUL, now=stamp, generation=generation)
    failure = new_condition(FAILURE, TRUE, reason, message, now=stamp, generation=generation)
    return _join(custom, _set(conditions, failure, generation))


def mark_interrupted(
    status: Mapping[str, Any] | None, *, cause: str, now: datetime, generation: int | None
) -> Status:
    """A run stopped before it ended by something other than the role (the operator shutting
    down, say): `Running=False/Interrupted/<message>` and `Successful` flips to False. `Failure`
    is left as it was: the role did not fail, and nothing is known about this run's outcome."""
    stamp = format_transition_time(now)
    custom, conditions = _split(status, stamp)
    conditions = _flip_false(conditions, SUCCESSFUL, now=stamp, generation=generation)
    running = new_condition(
        RUNNING,
        FALSE,
        REASON_INTERRUPTED,
        interrupted_message(cause),
        now=stamp,
        generation=generation,
    )
    return _join(custom, _set(conditions, running, generation))


def mark_held(
    status: Mapping[str, Any] | None,
    *,
    message: str,
    pending: bool,
    now: datetime,
    generation: int | None,
) -> Status:
    """A CR held for review was planned, not applied: `Running=False/Held/<message>`, and
    `Successful` flips to False when something would change (what the CR asks is not made)."""
    stamp = format_transition_time(now)
    custom, conditions = _split(status, stamp)
    if pending:
        conditions = _flip_false(conditions, SUCCESSFUL, now=stamp, generation=generation)
    held = new_condition(RUNNING, FALSE, REASON_HELD, message, now=stamp, generation=generation)
    current = _find(conditions, RUNNING)
    if current is not None and current.get("message") != message:
        # What is pending changes without a new generation (a role edited, a dependent
        # drifted): unlike upstream's SetCondition, a new message is written.
        if current.get("status") == FALSE:
            held["lastTransitionTime"] = current["lastTransitionTime"]
        conditions = [c for c in conditions if c.get("type") != RUNNING]
    return _join(custom, _set(conditions, held, generation))


def interrupted_message(cause: str) -> str:
    """`Running`'s message for an interrupted run; `cause` says what stopped it."""
    return f"Reconciliation interrupted: {cause}. It will be retried"


def timeout_message(detail: str) -> str:
    """`Failure`'s message for a run stopped by its timeout (`detail` from the runner)."""
    return f"{detail}. It will be retried"


def get_condition(status: Mapping[str, Any] | None, ctype: str) -> Condition | None:
    """The first condition of type `ctype` in a `.status`, or None."""
    if not isinstance(status, Mapping):
        return None
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        return None
    for condition in conditions:
        if isinstance(condition, Mapping) and condition.get("type") == ctype:
            return dict(condition)
    return None


def settled(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` is `Successful=True` for its current generation, as our own status
    writes record it (`observedGeneration`). An object without that record (never reconciled,
    failed, changed since, or written by a runtime that records no generation) is not settled."""
    metadata = obj.get("metadata")
    generation = metadata.get("generation") if isinstance(metadata, Mapping) else None
    status = obj.get("status")
    raw = status.get("conditions") if isinstance(status, Mapping) else None
    if generation is None or not isinstance(raw, list):
        return False
    return any(
        isinstance(c, Mapping)
        and c.get("type") == SUCCESSFUL
        and c.get("status") == TRUE
        and c.get("observedGeneration") == generation
        for c in raw
    )


def condition_true(obj: Mapping[str, Any], ctype: str) -> bool:
    """Whether an object's status has a condition of type `ctype` whose status is "True"."""
    condition = get_condition(obj.get("status"), ctype)
    return bool(condition and condition.get("status") == TRUE)
