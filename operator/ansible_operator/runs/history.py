"""The record of every run, kept per CR: what triggered it, when it ran, how it ended, and every
task with its start and duration; read by the runs API (``runs_api``), the page and
``ansible-operator runs``.

A record is one JSON file in ``runs/`` of the CR's runner input directory, beside
ansible-runner's artifacts: it survives a restart of the operator (the directory is on the
operator's disk, an emptyDir in the Pod) and goes with the CR (``RunSession.forget`` removes
the directory). It is written when the run starts (``Running``) and again when it ends, so a
crash leaves a record that says it never ended. Bounded twice: the newest ``per_resource``
records of each CR, and ``max_bytes`` for all of them (the oldest go first). The index of
summaries is read from disk on first use, not at start, and kept in memory after that: the
records of the kinds and namespaces this operator watches only, since another operator on the
same machine (``make run`` of another project, the e2e tests) shares upstream's directory; its
records are neither shown nor removed here.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import os
import socket
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ansible_operator.core import GVK, WriteLog, cap, objects, triggers
from ansible_operator.runner import RunResult, Timeline, strip_ansi, without_lines

log = logging.getLogger("runs")

RECORDS = "runs"  # the records' directory in a CR's input dir
OUTPUT_BYTES = 256 * 1024  # of a run's stdout kept in its record

Summary = dict[str, Any]
CRKey = tuple[str, str, str, str, str]  # group, version, kind, namespace, name


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _stamp(when: datetime.datetime) -> str:
    return when.isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass
class RunRecord:
    """One run, as it goes: its summary fields, its timeline, and its output once it ended."""

    path: Path
    id: str
    replica: str
    gvk: GVK
    namespace: str
    name: str
    uid: str
    generation: int | None
    trigger: triggers.Trigger
    finalizing: bool
    ansible: str
    started: datetime.datetime
    timeline: Timeline
    ended: datetime.datetime | None = None
    outcome: str = "Running"
    message: str = ""
    counts: dict[str, int] = field(
        default_factory=lambda: {"ok": 0, "changed": 0, "failed": 0, "skipped": 0}
    )
    trace_id: str | None = None
    output: str = ""
    writes: WriteLog | None = None  # what it wrote, or as a planned run would have written

    def summary(self) -> Summary:
        duration = (self.ended - self.started).total_seconds() if self.ended else None
        return {
            "id": self.id,
            "replica": self.replica,
            "apiVersion": self.gvk.api_version,
            "kind": self.gvk.kind,
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "generation": self.generation,
            "trigger": self.trigger.to_json(),
            "finalizing": self.finalizing,
            "ansible": self.ansible,
            "started": _stamp(self.started),
            "ended": _stamp(self.ended) if self.ended else None,
            "duration": duration,
            "outcome": self.outcome,
            "message": self.message,
            "counts": dict(self.counts),
            "traceId": self.trace_id,
            "planned": self.writes is not None and self.writes.dry_run,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            **self.summary(),
            "tasks": [task.to_json() for task in self.timeline.tasks],
            "tasksDropped": self.timeline.dropped,
            "output": self.output,
            **({"writes": self.writes.to_json()} if self.writes is not None else {}),
        }


@dataclass
class _Kept:
    summary: Summary
    path: Path
    size: int


class RunHistory:
    def __init__(
        self,
        base: Path,
        *,
        per_resource: int,
        max_bytes: int,
        replica: str | None = None,
        kinds: Collection[GVK] | None = None,
        namespaces: Collection[str] = (),
        clock: Callable[[], datetime.datetime] = utc_now,
    ) -> None:
        """The records under ``base`` of ``kinds`` (None: every kind) in ``namespaces`` (none:
        every namespace; a cluster-scoped CR's are always read)."""
        self.base = Path(base)
        # Where the records are, as globs under base (the runner's layout, empty group dropped).
        self._kind_dirs = (
            ["*/*/*"]
            if kinds is None
            else sorted("/".join(filter(None, (k.group, k.version, k.kind))) for k in kinds)
        )
        self._namespace_dirs = sorted(namespaces) or ["*"]
        self.per_resource = per_resource
        self.max_bytes = max_bytes
        self.replica = replica or socket.gethostname()
        self.clock = clock
        self._index: dict[CRKey, list[_Kept]] | None = None  # newest first; read on first use
        # Every kept record by path, in the order the runs started: the oldest go first when
        # all of them outgrow max_bytes, found without a scan of every record.
        self._by_start: dict[Path, _Kept] = {}
        self._live: dict[str, RunRecord] = {}  # running, by id
        self._bytes = 0

    @property
    def enabled(self) -> bool:
        return self.per_resource > 0

    # -- writing ----------------------------------------------------------------------------------

    def begin(
        self,
        *,
        gvk: GVK,
        obj: Mapping[str, Any],
        input_dir: Path,
        ident: str,
        trigger: triggers.Trigger,
        finalizing: bool,
        ansible: str,
        timeline: Timeline,
        trace_id: str | None = None,
        writes: WriteLog | None = None,
    ) -> RunRecord:
        meta = objects.metadata(obj)
        generation = meta.get("generation")
        record = RunRecord(
            path=input_dir / RECORDS / f"{ident}.json",
            id=ident,
            replica=self.replica,
            gvk=gvk,
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
            uid=str(meta.get("uid") or ""),
            generation=generation if isinstance(generation, int) else None,
            trigger=trigger,
            finalizing=finalizing,
            ansible=ansible,
            started=self.clock(),
            timeline=timeline,
            trace_id=trace_id,
            writes=writes,
        )
        self._live[ident] = record
        self._write(record)
        return record

    def finish(self, record: RunRecord, result: RunResult | None, *, outcome: str) -> None:
        """The run ended: ``result`` is None when it never got one (interrupted, not started)."""
        record.ended = self.clock()
        record.outcome = outcome
        if result is not None:
            stats = result.outcome.ansible_result
            record.counts = {
                "ok": stats.ok,
                "changed": stats.changed,
                "failed": stats.failures,
                "skipped": stats.skipped,
            }
            record.message = "; ".join(result.outcome.failure_messages) if not result.ok else ""
            record.output = _output(result)
        self._live.pop(record.id, None)
        self._write(record)

    def forget(self, gvk: GVK, namespace: str, name: str) -> None:
        """The CR is gone (its directory, records included, is removed by the caller)."""
        if self._index is None:
            return
        for kept in self._index.pop((gvk.group, gvk.version, gvk.kind, namespace, name), []):
            self._bytes -= kept.size
            self._by_start.pop(kept.path, None)

    def _write(self, record: RunRecord) -> None:
        body = json.dumps(record.to_json(), separators=(",", ":")).encode()
        try:
            record.path.parent.mkdir(parents=True, exist_ok=True)
            scratch = record.path.with_suffix(".tmp")
            scratch.write_bytes(body)
            os.replace(scratch, record.path)  # a reader sees the old record or the new one
        except OSError as err:
            log.error("Run record not written", extra={"path": str(record.path), "error": str(err)})
            return
        self._keep(record.summary(), record.path, len(body))

    def _keep(self, summary: Summary, path: Path, size: int) -> None:
        index = self._load()
        key = _cr_key(summary)
        kept = index.setdefault(key, [])
        for i, old in enumerate(kept):
            if old.path == path:
                self._bytes -= old.size
                del kept[i]
                break
        new = _Kept(summary, path, size)
        kept.insert(0, new)
        self._by_start[path] = new  # a record written again keeps its place
        self._bytes += size
        while len(kept) > self.per_resource:
            self._drop(key, kept[-1])
        while self._bytes > self.max_bytes:
            # The oldest that has ended (the runs under way are as many as the workers).
            oldest = next((k for k in self._by_start.values() if k.summary["ended"]), None)
            if oldest is None:
                break
            self._drop(_cr_key(oldest.summary), oldest)

    def _drop(self, key: CRKey, kept: _Kept) -> None:
        index = self._load()
        runs = index.get(key, [])
        if kept in runs:
            runs.remove(kept)
            self._bytes -= kept.size
        self._by_start.pop(kept.path, None)
        if not runs:
            index.pop(key, None)
        with contextlib.suppress(OSError):
            kept.path.unlink()

    # -- reading ----------------------------------------------------------------------------------

    def kinds(self) -> list[dict[str, Any]]:
        """Each kind with runs, and each of its CRs with its last run."""
        by_kind: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for (_, _, _, namespace, name), kept in sorted(self._load().items()):
            if not kept:
                continue
            last = self._fresh(kept[0])
            resources = by_kind.setdefault((last["apiVersion"], last["kind"]), [])
            resources.append({"namespace": namespace, "name": name, "last": last})
        return [
            {"apiVersion": api_version, "kind": kind, "resources": resources}
            for (api_version, kind), resources in sorted(by_kind.items())
        ]

    def runs(
        self, group: str, version: str, kind: str, namespace: str | None = None, name: str = ""
    ) -> list[Summary]:
        """The runs of a kind, or of one CR, newest first."""
        found = [
            self._fresh(k)
            for key, kept in self._load().items()
            if key[:3] == (group, version, kind)
            and (namespace is None or key[3:] == (namespace, name))
            for k in kept
        ]
        return sorted(found, key=lambda s: s["started"], reverse=True)

    def record(
        self, group: str, version: str, kind: str, namespace: str, name: str, ident: str
    ) -> dict[str, Any] | None:
        live = self._live.get(ident)
        if live is not None:
            return live.to_json()
        for kept in self._load().get((group, version, kind, namespace, name), []):
            if kept.summary["id"] == ident:
                return _read(kept.path)
        return None

    def _fresh(self, kept: _Kept) -> Summary:
        """A running record's summary as it is now (its counts grow as it goes)."""
        live = self._live.get(kept.summary["id"])
        return live.summary() if live is not None else kept.summary

    def _load(self) -> dict[CRKey, list[_Kept]]:
        if self._index is not None:
            return self._index
        self._index = {}
        for path in self._record_files():
            record = _read(path)
            if record is None:
                continue
            if record.get("outcome") == "Running":  # the operator stopped before it ended
                record["outcome"] = "Interrupted"
                record["message"] = record.get("message") or "the operator stopped during the run"
            summary = {k: record.get(k) for k in _SUMMARY_KEYS}
            size = path.stat().st_size
            self._index.setdefault(_cr_key(summary), []).append(_Kept(summary, path, size))
            self._bytes += size
        for runs in self._index.values():
            runs.sort(key=lambda k: k.summary["started"] or "", reverse=True)
        every = sorted(
            (k for runs in self._index.values() for k in runs),
            key=lambda k: k.summary["started"] or "",
        )
        self._by_start = {k.path: k for k in every}
        return self._index

    def _record_files(self) -> Iterator[Path]:
        """Records of cluster-scoped CRs (g/v/k/name/runs) and namespaced ones (g/v/k/ns/name/runs)
        in the directories of the watched kinds and namespaces (of every one when not given)."""
        if not self.base.is_dir():
            return
        for kind in self._kind_dirs:
            yield from self.base.glob(f"{kind}/*/{RECORDS}/*.json")
            for namespace in self._namespace_dirs:
                yield from self.base.glob(f"{kind}/{namespace}/*/{RECORDS}/*.json")


_SUMMARY_KEYS = (
    "id",
    "replica",
    "apiVersion",
    "kind",
    "namespace",
    "name",
    "uid",
    "generation",
    "trigger",
    "finalizing",
    "ansible",
    "started",
    "ended",
    "duration",
    "outcome",
    "message",
    "counts",
    "traceId",
)


def _cr_key(summary: Summary) -> CRKey:
    group, _, version = str(summary.get("apiVersion") or "").rpartition("/")
    return (
        group,
        version,
        str(summary.get("kind") or ""),
        str(summary.get("namespace") or ""),
        str(summary.get("name") or ""),
    )


def _read(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _output(result: RunResult) -> str:
    """The run's stdout as the log would show it: no colour codes, nothing a no_log task
    displayed, its end kept when it is too long (the failure is at the end)."""
    try:
        text = result.stdout_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    text = without_lines(strip_ansi(text).replace("\r\n", "\n"), result.outcome.hidden_output)
    data = text.encode()
    if len(data) <= OUTPUT_BYTES:
        return text
    tail = data[-OUTPUT_BYTES:].decode("utf-8", errors="ignore")
    return cap(f"[{len(data) - len(tail.encode())} bytes before this are left out]\n", 200) + tail
