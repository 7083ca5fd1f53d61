"""Turn the job events of one Ansible run into its outcome: ok or not, why, counts, requeue delay.

Pure and incremental: an `EventSummary` is fed events one at a time as the runner reads them (so
a long run's events are never all held in memory) and produces a `RunOutcome` at the end;
`summarize()` does both for a list. The rules fix upstream's miscounts on purpose: ignored and
rescued failures are not failures, unreachable hosts are, counts cover every host, and a
`requeue_after` task only sets the delay instead of cutting the processing short. A failure
that one of ansible-core 2.19's new rules caused gets core_rules' explanation as its message.

Rescue detection: ansible-runner's `runner_on_failed` event does not say whether a block's
`rescue` caught it. Ansible counts every failure that is not ignored exactly once in the stats
event, under `rescued` or under `failures` for its host, and a failure that is not rescued ends
the host's run (only `always` sections follow). So, per host, the last `failures[host]`
non-ignored failures are the real ones and the ones before them were rescued; when the stats say
no rescue happened (the usual case) or no failure remained, the answer is exact. Unreachable
events are treated the same way against `dark`, which also leaves out `ignore_unreachable` ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible_operator.gocompat import parse_go_duration
from ansible_operator.runner import core_rules
from ansible_operator.runner.output import NoLogOutput, strip_ansi, without_lines

DEFAULT_FAILURE_MESSAGE = "unknown playbook failure"
MISSING_STATS_MESSAGE = "did not receive playbook_on_stats event"

# Task actions that request a delayed requeue. Upstream accepts the FQCN and the bare name (the
# latter resolves through a play's or role's `collections:` list); `resolved_action` carries the
# FQCN in that case, and `ansible.legacy.` is what a module found on the `library` path gets.
REQUEUE_ACTIONS = frozenset(
    {"operator_sdk.util.requeue_after", "requeue_after", "ansible.legacy.requeue_after"}
)

_STATS_KEYS = ("ok", "changed", "failures", "dark", "ignored", "rescued", "processed", "skipped")


@dataclass(frozen=True)
class FailedTask:
    """One reason a run failed: a task that failed or found its host unreachable, or the run itself.

    For run-level reasons (no stats event, timeout) `task`, `host` and `task_path` are empty.
    """

    task: str
    message: str
    host: str = ""
    task_path: str = ""


@dataclass(frozen=True)
class AnsibleResult:
    """Counts for the `ansibleResult` of status conditions, summed over every host.

    `failures` is Ansible's `failures` plus `dark` (unreachable). `completion` is the raw
    `created` timestamp of the stats event (ISO 8601); formatting it is the status writer's job.
    """

    ok: int = 0
    changed: int = 0
    skipped: int = 0
    failures: int = 0
    completion: str | None = None


@dataclass(frozen=True)
class RunOutcome:
    """What one Ansible run amounted to, derived from its events only."""

    ok: bool
    failures: list[FailedTask]
    stats: dict[str, dict[str, int]]  # host -> {ok, changed, failures, dark, ignored, ...}
    ansible_result: AnsibleResult
    requeue_after: float | None  # seconds, from the first requeue_after task
    stats_received: bool
    artifact_data: dict[str, Any]  # set_stats data, from playbook_on_stats
    stats_stdout: str = ""  # the PLAY RECAP text of the stats event
    warnings: list[str] = field(default_factory=list)
    # Digests of the lines of stdout that no_log tasks displayed (output.NoLogOutput): never
    # to be shown.
    hidden_output: frozenset[bytes] = frozenset()

    @property
    def failure_messages(self) -> list[str]:
        return [failure.message for failure in self.failures]


def failure_message(event: Mapping[str, Any]) -> str:
    """The message of a failed or unreachable event: `res.msg` if it is a string.

    Failed includes carry their reason in `res.reason` instead of `msg`, so that is the second
    choice; anything else gives upstream's `unknown playbook failure`.
    """
    res = _event_data(event).get("res")
    if isinstance(res, Mapping):
        for key in ("msg", "reason"):
            value = res.get(key)
            if isinstance(value, str):
                return value
    return DEFAULT_FAILURE_MESSAGE


class EventSummary:
    """Accumulates the events of one run, in the order they happened; see the module docstring."""

    def __init__(self) -> None:
        self._failed: list[FailedTask] = []  # non-ignored runner_on_failed, in order
        self._failed_hosts: list[str] = []
        self._unreachable: list[FailedTask] = []
        self._unreachable_hosts: list[str] = []
        self._stats_event: Mapping[str, Any] | None = None
        self._requeue_after: float | None = None
        self._warnings: list[str] = []
        self._no_log = NoLogOutput(lines=True)

    def feed(self, event: Mapping[str, Any]) -> None:
        self._no_log.feed(event)
        kind = event.get("event")
        data = _event_data(event)
        if kind == "playbook_on_stats":
            self._stats_event = event  # the last one wins, as upstream
        elif kind == "runner_on_failed":
            if data.get("ignore_errors") is not True:
                self._failed.append(_failed_task(event))
                self._failed_hosts.append(str(data.get("host", "")))
        elif kind == "runner_on_unreachable":
            self._unreachable.append(_failed_task(event))
            self._unreachable_hosts.append(str(data.get("host", "")))
        elif kind == "runner_on_ok" and self._requeue_after is None and _is_requeue(data):
            self._take_requeue(data)

    def outcome(
        self, *, stdout_tail: str | None = None, abort_reason: str | None = None
    ) -> RunOutcome:
        """The outcome so far.

        `abort_reason` says why the run was cut short (a timeout): it becomes the last failure
        and replaces the missing-stats message. `stdout_tail` is appended to that message, without
        what no_log tasks displayed.
        """
        hidden = self._no_log.hidden_lines()
        stats_event = self._stats_event
        stats = _stats_by_host(_event_data(stats_event)) if stats_event is not None else {}
        failures: list[FailedTask]
        if stats_event is None:
            # Without stats nothing tells rescued from real failures: all of them count.
            failures = [*self._failed, *self._unreachable]
        else:
            failures = [
                *_real_failures(self._failed, self._failed_hosts, stats, "failures"),
                *_real_failures(self._unreachable, self._unreachable_hosts, stats, "dark"),
            ]
        if abort_reason is not None:
            failures.append(FailedTask(task="", message=abort_reason))
        elif stats_event is None:
            message = MISSING_STATS_MESSAGE
            tail = without_lines(strip_ansi(stdout_tail or ""), hidden).strip()
            if tail:
                message = f"{message}\n{tail}"
            failures.append(FailedTask(task="", message=message))

        stats_data = _event_data(stats_event)
        artifact_data = stats_data.get("artifact_data")
        created = stats_event.get("created") if stats_event is not None else None
        return RunOutcome(
            ok=stats_event is not None and not failures,
            failures=failures,
            stats=stats,
            ansible_result=AnsibleResult(
                ok=_total(stats, "ok"),
                changed=_total(stats, "changed"),
                skipped=_total(stats, "skipped"),
                failures=_total(stats, "failures") + _total(stats, "dark"),
                completion=created if isinstance(created, str) else None,
            ),
            requeue_after=self._requeue_after,
            stats_received=stats_event is not None,
            artifact_data=dict(artifact_data) if isinstance(artifact_data, Mapping) else {},
            stats_stdout=str(stats_event.get("stdout") or "") if stats_event is not None else "",
            warnings=list(self._warnings),
            hidden_output=hidden,
        )

    def _take_requeue(self, data: Mapping[str, Any]) -> None:
        res = data.get("res")
        period = res.get("period") if isinstance(res, Mapping) else None
        if not isinstance(period, str):
            self._warnings.append(f"requeue_after task {data.get('task')!r} returned no period")
            return
        try:
            self._requeue_after = parse_go_duration(period)
        except ValueError as err:
            self._warnings.append(f"requeue_after task {data.get('task')!r}: {err}")


def summarize(
    events: Iterable[Mapping[str, Any]],
    *,
    stdout_tail: str | None = None,
    abort_reason: str | None = None,
) -> RunOutcome:
    """The outcome of a run from all its events, in counter order."""
    summary = EventSummary()
    for event in events:
        summary.feed(event)
    return summary.outcome(stdout_tail=stdout_tail, abort_reason=abort_reason)


def _event_data(event: Mapping[str, Any] | None) -> Mapping[str, Any]:
    data = event.get("event_data") if event is not None else None
    return data if isinstance(data, Mapping) else {}


def _failed_task(event: Mapping[str, Any]) -> FailedTask:
    data = _event_data(event)
    return FailedTask(
        task=str(data.get("task", "")),
        message=core_rules.explain(event) or failure_message(event),
        host=str(data.get("host", "")),
        task_path=str(data.get("task_path", "")),
    )


def _is_requeue(data: Mapping[str, Any]) -> bool:
    return data.get("task_action") in REQUEUE_ACTIONS or data.get("resolved_action") in (
        REQUEUE_ACTIONS
    )


def _stats_by_host(data: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """Pivot the stats event's {counter: {host: n}} into {host: {counter: n}}."""
    by_host: dict[str, dict[str, int]] = {}
    for key in _STATS_KEYS:
        per_host = data.get(key)
        if not isinstance(per_host, Mapping):
            continue
        for host, count in per_host.items():
            counts = by_host.setdefault(str(host), dict.fromkeys(_STATS_KEYS, 0))
            counts[key] = int(count) if isinstance(count, int | float) else 0
    return by_host


def _total(stats: Mapping[str, Mapping[str, int]], key: str) -> int:
    return sum(counts.get(key, 0) for counts in stats.values())


def _real_failures(
    candidates: list[FailedTask],
    hosts: list[str],
    stats: Mapping[str, Mapping[str, int]],
    stats_key: str,
) -> list[FailedTask]:
    """Of one kind of failure event, the ones the stats count as real (see module docstring).

    Per host, the last `stats[host][stats_key]` events are kept. If the stats count more than
    there are events (events lost), the missing ones become generic failures so that `ok` never
    contradicts the stats.
    """
    wanted = {host: counts.get(stats_key, 0) for host, counts in stats.items()}
    kept_indexes: set[int] = set()
    for index in range(len(candidates) - 1, -1, -1):
        host = hosts[index]
        if wanted.get(host, 0) > 0:
            wanted[host] -= 1
            kept_indexes.add(index)
    kept = [task for index, task in enumerate(candidates) if index in kept_indexes]
    for host, missing in sorted(wanted.items()):
        kept.extend(
            FailedTask(task="", message=DEFAULT_FAILURE_MESSAGE, host=host) for _ in range(missing)
        )
    return kept
