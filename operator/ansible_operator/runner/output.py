"""What of a run's output may be shown in logs and messages: no colour codes, and nothing of
what Ansible displays while a `no_log` task runs.

Ansible censors a `no_log` task's result in its callbacks, but not what it displays at higher
verbosity while the task runs: at -vvv the command lines it executes (a `raw` or `script`
task's arguments, a task's `environment:` values) are shown as they are, in `verbose` events and
in the stdout file. Nothing in those events says whether their task is `no_log`; the task's
result does (Ansible replaced it with `censored`). So a task's display events are held until its
next result: released if the result is not censored, dropped if it is, and every later display
event of that task is dropped too. A censored result's own output is dropped as well: beside the
censored result, ansible-core 2.19 displays the error it preserved (a `fail` task's message).
Held events of a task that gets no result (a `meta` task) are released with the run's stats, and
count as hidden when the run ends without stats (a crash mid-task: nothing says what that task
was), except the run's last event when it is an `error`: the fatal error that ended
ansible-playbook ("A worker was found in a dead state"), which carries the running task's
context but is Ansible's verdict on the run, not that task's output.

Pure and incremental: one `NoLogOutput` per run and consumer, fed the events in order.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# ansible-runner's events for Ansible's Display calls (a `display()` outside a callback included).
DISPLAY_EVENTS = frozenset({"verbose", "debug", "deprecated", "warning", "system_warning", "error"})

Event = Mapping[str, Any]


class NoLogOutput:
    """Which events of one run may be shown; see the module docstring.

    With `lines`, it also keeps what a dump of the run's stdout file must leave out
    (`hidden_lines`)."""

    def __init__(self, *, lines: bool = False) -> None:
        self._held: dict[str, list[Event]] = {}  # task uuid -> display events awaiting a result
        self._hidden_tasks: set[str] = set()
        self._lines = lines
        self._hidden_lines: set[bytes] = set()
        self._shown_lines: set[bytes] = set()
        self._last: Event | None = None

    def feed(self, event: Event) -> list[Event]:
        """The events that may be shown now, in order (`event` itself, later, or never)."""
        self._last = event
        shown = self._feed(event)
        if self._lines:
            self._shown_lines.update(_lines(shown))
        return shown

    def _feed(self, event: Event) -> list[Event]:
        kind = str(event.get("event", ""))
        data = _event_data(event)
        uuid = data.get("task_uuid")
        if kind in DISPLAY_EVENTS and isinstance(uuid, str) and uuid:
            if uuid in self._hidden_tasks:
                self._hide([event])
            else:
                self._held.setdefault(uuid, []).append(event)
            return []
        if "res" in data and isinstance(uuid, str) and uuid:
            held = self._held.pop(uuid, [])
            if censored(data.get("res")):
                self._hidden_tasks.add(uuid)
                self._hide([*held, event])
                return [{**event, "stdout": ""}]
            return [*held, event]
        if kind == "playbook_on_stats":
            released = [e for held in self._held.values() for e in held]
            self._held.clear()
            return [*released, event]
        return [event]

    def hidden_lines(self) -> frozenset[bytes]:
        """The digests of the lines (stripped) of every hidden event, the held ones included,
        that no shown event has (`ok: [localhost]`, a lone `}`): what a dump of the run's stdout
        file must leave out. Digests, not the lines, so the outcome that carries them shows
        nothing of them."""
        last = self._last
        fatal = last if last is not None and last.get("event") == "error" else None
        held = [e for events in self._held.values() for e in events if e is not fatal]
        return frozenset((self._hidden_lines | set(_lines(held))) - self._shown_lines)

    def _hide(self, events: Iterable[Event]) -> None:
        if self._lines:
            self._hidden_lines.update(_lines(events))


def censored(res: Any) -> bool:
    """Whether Ansible censored a task result (`no_log`), itself or one of its loop items."""
    if not isinstance(res, Mapping):
        return False
    if "censored" in res:
        return True
    items = res.get("results")
    return isinstance(items, list) and any(
        isinstance(item, Mapping) and "censored" in item for item in items
    )


def strip_ansi(text: str) -> str:
    """Remove terminal colour codes, which Ansible adds when it thinks it writes to a terminal."""
    return _ANSI_ESCAPE.sub("", text)


def without_lines(text: str, hidden: frozenset[bytes]) -> str:
    """`text` (without colour codes: `strip_ansi`) without the lines `hidden` has digests of."""
    if not hidden:
        return text
    return "\n".join(line for line in text.split("\n") if _digest(line) not in hidden)


def _digest(line: str) -> bytes:
    return hashlib.sha256(line.strip().encode("utf-8", "surrogatepass")).digest()


def _lines(events: Iterable[Event]) -> Iterable[bytes]:
    for event in events:
        for line in strip_ansi(str(event.get("stdout") or "")).replace("\r", "\n").split("\n"):
            if line.strip():
                yield _digest(line)


def _event_data(event: Event) -> Mapping[str, Any]:
    data = event.get("event_data")
    return data if isinstance(data, Mapping) else {}
