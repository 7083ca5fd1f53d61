"""What a run changed, or a planned run would change: its writes read as objects created, updated
or deleted, with the fields that differ.

Every run talks to the API server through the proxy, which records each of its writes here as a
``Write``: the object before (the run's own read of it just before, or for a planned run a read
of the proxy's) and the API server's answer (the object as stored, defaults and admission
included). A planned run (``ansible-operator plan``, or a CR held for review) has each write
made a dry run, so the answer is the object as it would be stored. ``object_changes`` folds the
writes into one change per object, first ``before`` against last ``after``, so an object a run
writes twice is one line. The fields are compared as stored, less what the server sets on every
write (``resourceVersion``, ``managedFields``, ...) and ``status`` (the object's controller
writes it, not the run); a Secret's values are never shown, only that they change.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# What the API server writes on every write, or on a dry run only: never a change of the run's.
SERVER_SET = frozenset(
    {
        "metadata.resourceVersion",
        "metadata.managedFields",
        "metadata.generation",
        "metadata.uid",
        "metadata.creationTimestamp",
        "metadata.selfLink",
    }
)
IGNORED_ROOTS = ("status",)
PLAN_ANSIBLE_ARGS = "--check --diff"  # added to a planned run's ansible-playbook command line
SENSITIVE_KINDS = frozenset({"Secret"})
SENSITIVE = "(sensitive value)"
MAX_FIELDS = 200  # per object; the rest counted in `more_fields`
MAX_WRITES = 500  # per run; the rest counted in `WriteLog.dropped`


@dataclass(frozen=True)
class Write:
    """One write a planned run made, as the proxy saw it."""

    verb: str  # create, update, patch, delete, deletecollection
    api_version: str
    kind: str
    namespace: str
    name: str
    subresource: str = ""
    before: Mapping[str, Any] | None = None  # None: it did not exist (or could not be read)
    after: Mapping[str, Any] | None = None  # the dry run's answer; None for a delete
    code: int = 200  # the API server's status code
    message: str = ""  # its message when it refused the write


@dataclass(frozen=True)
class TaskChange:
    name: str
    role: str
    status: str  # changed, failed


@dataclass
class WriteLog:
    """What one run wrote, or would have written: its writes as the proxy saw them, and the
    tasks that reported a change or failed (the session adds them when the run ends). With
    ``dry_run`` (a planned run) the proxy made every write a dry run."""

    dry_run: bool = False
    writes: list[Write] = field(default_factory=list)
    tasks: list[TaskChange] = field(default_factory=list)
    forwarded: int = 0  # writes the proxy forwarded (dry runs, with dry_run)
    refused: int = 0  # requests the proxy refused (exec, attach, writes outside the API)
    dropped: int = 0  # writes past MAX_WRITES, counted and not kept

    def add(self, write: Write) -> None:
        self.forwarded += 1
        if len(self.writes) >= MAX_WRITES:
            self.dropped += 1
            return
        self.writes.append(write)

    def to_json(self) -> dict[str, Any]:
        """A run record's view: the objects it changed (or would have) and the counts."""
        return {
            "objects": [change.to_json() for change in object_changes(self.writes)],
            "forwarded": self.forwarded,
            "refused": self.refused,
            "dropped": self.dropped,
        }


@dataclass(frozen=True)
class FieldChange:
    path: str
    before: Any
    after: Any

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class ObjectChange:
    api_version: str
    kind: str
    namespace: str
    name: str
    action: str  # create, update, delete, none
    fields: tuple[FieldChange, ...] = ()
    more_fields: int = 0  # past MAX_FIELDS
    error: str = ""  # the API server refused the (dry-run) write

    @property
    def changes(self) -> bool:
        return self.action != "none"

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "action": self.action,
            "fields": [change.path for change in self.fields],
            "changes": [change.to_json() for change in self.fields],
        }
        if self.more_fields:
            body["moreFields"] = self.more_fields
        if self.error:
            body["error"] = self.error
        return body


def object_changes(writes: Sequence[Write]) -> list[ObjectChange]:
    """One change per object written, in the order first written."""
    firsts: dict[tuple[str, str, str, str], Write] = {}
    lasts: dict[tuple[str, str, str, str], Write] = {}
    for write in writes:
        if write.verb == "deletecollection":
            continue  # names no object; its answer lists them (see `_collection`)
        where = (write.api_version, write.kind, write.namespace, write.name)
        firsts.setdefault(where, write)
        lasts[where] = write
    changes = [_change(firsts[where], lasts[where]) for where in firsts]
    for write in writes:
        if write.verb == "deletecollection":
            changes.extend(_collection(write))
    return changes


def _change(first: Write, last: Write) -> ObjectChange:
    where = (last.api_version, last.kind, last.namespace, last.name)
    if last.code >= 300:
        return ObjectChange(*where, action="none", error=last.message or f"HTTP {last.code}")
    if last.subresource not in ("", "status"):  # a scale, say: another object's shape
        return ObjectChange(*where, action="update")
    before = first.before
    if last.verb == "delete":
        return ObjectChange(*where, action="delete" if before is not None else "none")
    if last.after is None or (before is None and first.verb != "create"):
        # An answer not read (too large, compressed), or an object the run changed without
        # reading it first: changed, fields unknown.
        return ObjectChange(*where, action="create" if first.verb == "create" else "update")
    after = last.after
    if before is None:
        fields = [FieldChange(path, None, value) for path, value in _leaves(after)]
        action = "create"
    else:
        fields = list(field_changes(before, after))
        action = "update" if fields else "none"
    if last.kind in SENSITIVE_KINDS:
        fields = [_hidden(change) for change in fields]
    return ObjectChange(
        *where,
        action=action,
        fields=tuple(fields[:MAX_FIELDS]),
        more_fields=max(0, len(fields) - MAX_FIELDS),
    )


def _collection(write: Write) -> Iterator[ObjectChange]:
    items = (write.after or {}).get("items")
    for item in items if isinstance(items, list) else ():
        meta = item.get("metadata") if isinstance(item, Mapping) else None
        if isinstance(meta, Mapping):
            namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
            yield ObjectChange(write.api_version, write.kind, namespace, name, action="delete")


def _hidden(change: FieldChange) -> FieldChange:
    root = change.path.split(".", 1)[0].split("[", 1)[0]
    if root not in ("data", "stringData"):
        return change
    return FieldChange(
        change.path,
        None if change.before is None else SENSITIVE,
        None if change.after is None else SENSITIVE,
    )


def field_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> Iterator[FieldChange]:
    """The leaves that differ between two versions of an object, as dotted paths."""
    old, new = dict(_leaves(before)), dict(_leaves(after))
    for path in sorted(old.keys() | new.keys()):
        if old.get(path, _MISSING) != new.get(path, _MISSING):
            yield FieldChange(path, old.get(path), new.get(path))


_MISSING = object()


def _leaves(obj: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(path, value) for each leaf the run can have set: ``spec.replicas``,
    ``spec.template.spec.containers[0].image``, ``metadata.labels.app``; an empty map or
    list is a leaf of its own."""
    stack: list[tuple[str, Any]] = [
        (str(key), value) for key, value in reversed(list(obj.items())) if key not in IGNORED_ROOTS
    ]
    while stack:
        path, value = stack.pop()
        if path in SERVER_SET:
            continue
        if isinstance(value, Mapping) and value:
            stack.extend((f"{path}.{key}", item) for key, item in reversed(list(value.items())))
        elif isinstance(value, list) and value:
            stack.extend(
                (f"{path}[{index}]", item) for index, item in reversed(list(enumerate(value)))
            )
        else:
            yield path, value


# -- one CR's plan ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CRPlan:
    """What one CR's run would do."""

    api_version: str
    kind: str
    namespace: str
    name: str
    outcome: str  # Unchanged, Changes, Failed
    objects: tuple[ObjectChange, ...] = ()
    tasks: tuple[TaskChange, ...] = ()  # the tasks that would report changed or fail
    message: str = ""  # why it would fail
    dry_run_writes: int = 0  # the writes the proxy forwarded, every one a dry run
    refused_writes: int = 0

    @property
    def pending(self) -> int:
        """Objects that would change, else tasks that would (a task's change may touch
        nothing the API server holds: a file, a command)."""
        changed = sum(1 for obj in self.objects if obj.changes)
        return changed or sum(1 for task in self.tasks if task.status == "changed")

    def to_json(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "outcome": self.outcome,
            "message": self.message,
            "objects": [obj.to_json() for obj in self.objects],
            "tasks": [
                {"name": task.name, "role": task.role, "status": task.status} for task in self.tasks
            ],
            "writes": {"dryRun": self.dry_run_writes, "refused": self.refused_writes},
        }


def cr_plan(cr: Mapping[str, Any], log: WriteLog, *, failed: str | None) -> CRPlan:
    """One CR's plan from its run: ``failed`` is why the run failed, None when it succeeded."""
    meta = cr.get("metadata") or {}
    objects = tuple(object_changes(log.writes))
    tasks = tuple(log.tasks)
    outcome = "Failed" if failed is not None else "Unchanged"
    plan = CRPlan(
        str(cr.get("apiVersion") or ""),
        str(cr.get("kind") or ""),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        outcome,
        objects,
        tasks,
        failed or "",
        log.forwarded,
        log.refused,
    )
    if failed is None and plan.pending:
        plan = CRPlan(**{**plan.__dict__, "outcome": "Changes"})
    return plan


def exit_code(plans: Iterable[CRPlan]) -> int:
    """As ``terraform plan -detailed-exitcode``: 0 nothing would change, 2 something would,
    1 a run would fail."""
    outcomes = {plan.outcome for plan in plans}
    if "Failed" in outcomes:
        return 1
    return 2 if "Changes" in outcomes else 0


# -- text ------------------------------------------------------------------------------------------

_SIGNS = {"create": "+", "update": "~", "delete": "-", "none": "="}
_MAX_SHOWN = 120  # characters of a value in text


def render_text(plans: list[CRPlan]) -> str:
    """For people: a summary line first, then each CR that would change or fail."""
    changing = [plan for plan in plans if plan.outcome == "Changes"]
    failing = [plan for plan in plans if plan.outcome == "Failed"]
    objects = sum(plan.pending for plan in changing)
    lines = [
        f"Plan: {len(plans)} CR(s) planned, {len(changing)} would change "
        f"({objects} object(s) or task(s)), {len(failing)} would fail, "
        f"{len(plans) - len(changing) - len(failing)} unchanged."
    ]
    for plan in changing + failing:
        where = f"{plan.namespace}/{plan.name}" if plan.namespace else plan.name
        lines.append("")
        lines.append(f"{plan.kind} {where}: {plan.outcome.lower()}")
        if plan.message:
            lines.append(f"  failed: {plan.message}")
        for obj in plan.objects:
            if not obj.changes and not obj.error:
                continue
            at = f"{obj.namespace}/{obj.name}" if obj.namespace else obj.name
            lines.append(f"  {_SIGNS[obj.action]} {obj.kind} {at} ({obj.action})")
            if obj.error:
                lines.append(f"      refused: {obj.error}")
            if obj.action == "update":
                for change in obj.fields:
                    lines.append(
                        f"      {change.path}: {_shown(change.before)} -> {_shown(change.after)}"
                    )
            if obj.more_fields:
                lines.append(f"      ... and {obj.more_fields} more field(s)")
        for task in plan.tasks:
            lines.append(f"  task {task.status}: {task.name}")
    return "\n".join(lines) + "\n"


def _shown(value: Any) -> str:
    text = "(none)" if value is None else json.dumps(value, sort_keys=True)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def held_message(plan: CRPlan, annotation: str) -> str:
    """What a held CR's condition says: what would change, and how to apply it."""
    if plan.outcome == "Failed":
        what = f"the run would fail: {plan.message}"
    elif plan.outcome == "Unchanged":
        what = "nothing would change"
    else:
        changing = [obj for obj in plan.objects if obj.changes]
        named = [
            f"{obj.kind} {obj.namespace + '/' if obj.namespace else ''}{obj.name} "
            f"({obj.action}{_fields_named(obj)})"
            for obj in changing[:_NAMED]
        ]
        if not changing:
            named = [f"task {task.name!r}" for task in plan.tasks[:_NAMED]]
        more = plan.pending - len(named)
        what = f"{plan.pending} change(s) pending: {', '.join(named)}"
        what += f" and {more} more" if more > 0 else ""
    return f"Held for review ({annotation}): {what}; remove the hold to apply"


def _fields_named(obj: ObjectChange) -> str:
    if obj.action != "update" or not obj.fields:
        return ""
    paths = [change.path for change in obj.fields[:_NAMED_FIELDS]]
    more = len(obj.fields) + obj.more_fields - len(paths)
    return ": " + ", ".join(paths) + (f" and {more} more" if more > 0 else "")


_NAMED = 5  # objects a held CR's condition names
_NAMED_FIELDS = 3  # fields it names of each
