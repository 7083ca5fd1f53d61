"""A CRD's printer columns (what `kubectl get` shows): one per top-level scalar spec field, the
status columns when the operator manages the status, and the columns the author added by hand,
kept through regeneration and marked as such (``HAND_MARK``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ansible_operator.core import argspec


def status_columns(manage_status: bool) -> list[dict[str, Any]]:
    """Printer columns for the conditions the operator writes (none when it writes none)."""
    columns: list[dict[str, Any]] = []
    if manage_status:
        columns += [
            {
                "name": "Successful",
                "type": "string",
                "description": "Whether the last reconciliation succeeded",
                "jsonPath": '.status.conditions[?(@.type=="Successful")].status',
            },
            {
                "name": "Reason",
                "type": "string",
                "description": "Running, Successful or Failed",
                "jsonPath": '.status.conditions[?(@.type=="Running")].reason',
            },
            {
                "name": "Message",
                "type": "string",
                "priority": 1,
                "description": "Why the last reconciliation failed",
                "jsonPath": '.status.conditions[?(@.type=="Failure")].message',
            },
        ]
    columns.append({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})
    return columns


def spec_columns(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A column per top-level scalar field; those that always have a value are shown by default."""
    columns = []
    required = set(spec.get("required", []))
    for name, schema in (spec.get("properties") or {}).items():
        if schema.get("type") not in ("string", "integer", "number", "boolean"):
            continue
        column: dict[str, Any] = {
            "name": name[:1].upper() + name[1:],
            "type": schema["type"],
            "jsonPath": f".spec.{name}",
        }
        if name not in required and "default" not in schema:
            column["priority"] = 1
        columns.append(column)
    return columns


# In a printer column's description: a column the author added, which generate crds keeps.
HAND_MARK = "(added by hand, kept by generate crds)"


def _generated_shape(column: Mapping[str, Any], status_paths: set[str]) -> bool:
    """Whether a column looks like one `generate crds` writes: a top-level spec field's under
    its own name, or one of the status columns."""
    path = column.get("jsonPath")
    if path in status_paths:
        return True
    name = path[len(".spec.") :] if isinstance(path, str) and path.startswith(".spec.") else ""
    return bool(name) and "." not in name and column.get("name") == name[:1].upper() + name[1:]


def printer_columns(
    spec: Mapping[str, Any], manage_status: bool, existing: Sequence[Any] | None
) -> list[dict[str, Any]]:
    """The columns of the current spec and status, with the existing columns the author added
    kept between them, marked with HAND_MARK. A column that looks like a generated one is the
    generator's, and goes once its field is gone or no longer a scalar; an author keeps an
    edited generated column by marking it. A kept column of a spec field that is gone goes."""
    spec_part, status_part = spec_columns(spec), status_columns(manage_status)
    all_status = {str(c["jsonPath"]) for c in status_columns(True)}
    hand: list[dict[str, Any]] = []
    for column in existing or []:
        if not isinstance(column, dict) or not spec_path_exists(column.get("jsonPath"), spec):
            continue
        description = str(column.get("description") or "")
        if HAND_MARK not in description:
            if _generated_shape(column, all_status):
                continue
            column = {**column, "description": f"{description} {HAND_MARK}".strip()}
        hand.append(copy.deepcopy(column))
    kept = {c.get("jsonPath") for c in hand}
    return [
        *(c for c in spec_part if c["jsonPath"] not in kept),
        *hand,
        *(c for c in status_part if c["jsonPath"] not in kept),
    ]


_SPEC_PATH = re.compile(r"^\.spec((?:\.[A-Za-z0-9_-]+)*)")


def spec_path_exists(json_path: Any, spec: Mapping[str, Any]) -> bool:
    """Whether a printer column's `.spec.a.b` path names fields the spec schema still has (a
    path that is not under `.spec`, or goes through free-form data, is kept)."""
    found = _SPEC_PATH.match(json_path) if isinstance(json_path, str) else None
    if not found:
        return True
    schema: Mapping[str, Any] = spec
    for name in found.group(1).split(".")[1:]:
        if schema.get(argspec.PRESERVE) or "properties" not in schema:
            return True
        if name not in schema["properties"]:
            return False
        schema = schema["properties"][name]
    return True


def existing(existing: Mapping[str, Any] | None) -> dict[str, list[dict[str, Any]]]:
    kept: dict[str, list[dict[str, Any]]] = {}
    for version in ((existing or {}).get("spec") or {}).get("versions") or []:
        if isinstance(version, dict) and "additionalPrinterColumns" in version:
            kept[str(version.get("name"))] = copy.deepcopy(version["additionalPrinterColumns"])
    return kept
