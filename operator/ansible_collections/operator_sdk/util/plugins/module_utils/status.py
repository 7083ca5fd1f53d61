# Copyright: ansible-operator-py contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""What k8s_status writes: the new status computed from the current one, without I/O.

Status keys are merged the way a JSON merge patch (RFC 7386) merges them, so the status computed
here is exactly what the API server stores after the patch; conditions are merged by type, and a
condition keeps its lastTransitionTime unless its status flips. Comparing the two tells whether
anything changes, which is what makes the module report `changed` truthfully.
"""

from __future__ import annotations

import copy
import re
from datetime import UTC, datetime
from typing import Any

CONDITION_KEYS = (
    "type",
    "status",
    "reason",
    "message",
    "lastHeartbeatTime",
    "lastTransitionTime",
    "observedGeneration",
)
CONDITION_STATUSES = ("True", "False", "Unknown")
# metav1.Condition's reason pattern: a CamelCase identifier.
_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
_RFC3339 = re.compile(r"^\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$")


class StatusError(ValueError):
    """Input the module refuses, with a message that names the problem."""


def now_rfc3339(moment: datetime | None = None) -> str:
    moment = moment or datetime.now(UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def validate_conditions(conditions: Any, where: str = "conditions") -> list[dict[str, Any]]:
    """Check conditions against the Kubernetes API conventions; booleans become "True"/"False"."""
    if not isinstance(conditions, list):
        raise StatusError(f"{where} must be a list of condition objects")
    result = []
    seen = set()
    for i, raw in enumerate(conditions):
        at = f"{where}[{i}]"
        if not isinstance(raw, dict):
            raise StatusError(f"{at} must be an object with type and status")
        condition = dict(raw)
        unknown = sorted(set(condition) - set(CONDITION_KEYS))
        if unknown:
            raise StatusError(
                f"{at}: unknown field(s) {', '.join(unknown)}; "
                f"accepted fields are {', '.join(CONDITION_KEYS)}"
            )
        if isinstance(condition.get("status"), bool):
            condition["status"] = "True" if condition["status"] else "False"
        for key in ("type", "status"):
            if not condition.get(key):
                raise StatusError(f"{at}: `{key}` must be set")
        if not isinstance(condition["type"], str):
            raise StatusError(f"{at}: `type` must be a string")
        if condition["status"] not in CONDITION_STATUSES:
            raise StatusError(
                f'{at}: `status` must be one of "True", "False", "Unknown", '
                f"not {condition['status']!r}"
            )
        reason = condition.get("reason")
        if reason is not None and (not isinstance(reason, str) or not _REASON.match(reason)):
            raise StatusError(f"{at}: `reason` must be a single CamelCase word, not {reason!r}")
        for key in ("lastHeartbeatTime", "lastTransitionTime"):
            value = condition.get(key)
            if value is not None and (not isinstance(value, str) or not _RFC3339.match(value)):
                raise StatusError(f"{at}: `{key}` must be an RFC3339 date-time, not {value!r}")
        generation = condition.get("observedGeneration")
        if generation is not None and (
            isinstance(generation, bool) or not isinstance(generation, int)
        ):
            raise StatusError(f"{at}: `observedGeneration` must be an integer")
        if condition["type"] in seen:
            raise StatusError(f"{at}: condition type {condition['type']!r} is given twice")
        seen.add(condition["type"])
        result.append(condition)
    return result


def _find(conditions: list[Any], ctype: str) -> int | None:
    for i, condition in enumerate(conditions):
        if isinstance(condition, dict) and condition.get("type") == ctype:
            return i
    return None


def _stamped(given: dict[str, Any], previous: Any, now: str) -> dict[str, Any]:
    """A given condition with its lastTransitionTime: given, kept (same status), or now."""
    condition = dict(given)
    if not condition.get("lastTransitionTime"):
        if isinstance(previous, dict) and previous.get("status") == condition["status"]:
            kept = previous.get("lastTransitionTime")
            condition["lastTransitionTime"] = kept or now
        else:
            condition["lastTransitionTime"] = now
    return condition


def merge_conditions(
    current: Any, given: list[dict[str, Any]], now: str, *, replace: bool = False
) -> list[Any]:
    """Conditions by type: a given one replaces the current one of its type, new types are
    appended, others are kept (unless `replace`, which keeps only the given ones)."""
    existing = list(current) if isinstance(current, list) else []
    merged: list[Any] = [] if replace else copy.deepcopy(existing)
    for condition in given:
        old_index = _find(existing, condition["type"])
        previous = existing[old_index] if old_index is not None else None
        stamped = _stamped(condition, previous, now)
        index = _find(merged, condition["type"])
        if index is None:
            merged.append(stamped)
        else:
            merged[index] = stamped
    return merged


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key, `null` removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def status_patch(
    current: Any,
    status: dict[str, Any] | None,
    conditions: list[Any] | None,
    *,
    now: str,
    replace: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return (patch, new status): the body for `/status` and the status it results in.

    With `replace` the patch is the whole new status (for a PUT); otherwise it is a merge patch
    holding the given keys and, when conditions are given, the complete merged condition list.
    """
    current_status = current if isinstance(current, dict) else {}
    patch = copy.deepcopy(status) if status else {}
    if conditions and patch.get("conditions") is not None:
        raise StatusError(
            "You cannot specify conditions in both the `status` and `conditions` parameters"
        )
    if conditions is None and patch.get("conditions") is not None:
        conditions = patch["conditions"]
        where = "status.conditions"
    else:
        where = "conditions"
    if conditions is not None:
        given = validate_conditions(conditions, where)
        patch["conditions"] = merge_conditions(
            current_status.get("conditions"), given, now, replace=replace
        )
    if replace:
        new_status = {k: v for k, v in patch.items() if v is not None}
        return new_status, new_status
    return patch, merge_patch(current_status, patch)
