"""A run's observers, in ansible-runner's callback shape: told when a run starts, of each of its
events, and when it ends with its outcome.

The session (``session.RunSession``) calls them and knows none of them; the manager registers
them: the upstream-style log lines and the run metrics always, the run's record when runs are
recorded (``runs``), its span when traces are on (``tracing``). ``started`` returns the run's
listener, which holds what the observer keeps for that run (a record, a span, an event logger).
Listeners are told in the order the observers were registered and finished in the reverse order,
so the span begun first (whose id the record carries) ends last.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ansible_operator.core import GVK, WriteLog, triggers
from ansible_operator.runner import (
    EventLogger,
    LogEventsMode,
    RunResult,
    Timeline,
    log_debug_result,
    log_stats_stdout,
)
from ansible_operator.runs import RunHistory
from ansible_operator.runtime.config.settings import Logging
from ansible_operator.runtime.observe.metrics import OperatorMetrics
from ansible_operator.runtime.observe.tracing import Tracing

runner_log = logging.getLogger("runner")


@dataclass
class Run:
    """One Ansible run as its observers see it."""

    gvk: GVK
    obj: Mapping[str, Any]
    ident: str
    input_dir: Path  # the CR's runner input directory
    ansible: str  # the playbook or the role it runs
    trigger: triggers.Trigger
    finalizing: bool
    log_verbosity: int  # of its event log lines (the CR's annotation, capped, else the setting)
    writes: WriteLog = field(default_factory=WriteLog)  # its writes (dry runs, if planned)
    timeline: Timeline = field(default_factory=Timeline)  # its tasks, fed by the session
    trace_id: str | None = None  # set by the tracing observer, for the run's record

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace") or "")

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])


@dataclass(frozen=True)
class RunEnd:
    """How a run ended: ``result`` is None when it never got one (it could not start, or a stop
    interrupted it), ``error`` says why when it raised."""

    result: RunResult | None
    outcome: str  # Succeeded, Failed or Interrupted
    error: str = ""


class RunListener(Protocol):
    def event(self, event: Mapping[str, Any]) -> None: ...

    def finished(self, end: RunEnd) -> None: ...


class RunObserver(Protocol):
    def started(self, run: Run) -> RunListener: ...

    def forget(self, gvk: GVK, namespace: str, name: str) -> None:
        """The CR is gone."""


class _Observer:
    """An observer that keeps nothing of a CR past its runs."""

    def forget(self, gvk: GVK, namespace: str, name: str) -> None:
        pass


class _Listener:
    """A listener that ignores what it is told; observers override what they need."""

    def event(self, event: Mapping[str, Any]) -> None:
        pass

    def finished(self, end: RunEnd) -> None:
        pass


class Observers:
    """The observers of a session's runs, told in order; the session's one entry to them."""

    def __init__(self, observers: Sequence[RunObserver]) -> None:
        self._observers = tuple(observers)

    def started(self, run: Run) -> Listeners:
        return Listeners(run, [observer.started(run) for observer in self._observers])

    def forget(self, gvk: GVK, namespace: str, name: str) -> None:
        for observer in self._observers:
            observer.forget(gvk, namespace, name)


class Listeners:
    """One run's listeners: each event fed to its timeline and to every listener."""

    def __init__(self, run: Run, listeners: Sequence[RunListener]) -> None:
        self._run = run
        self._listeners = tuple(listeners)

    def event(self, event: Mapping[str, Any]) -> None:
        self._run.timeline.feed(event)
        for listener in self._listeners:
            listener.event(event)

    def finished(self, end: RunEnd) -> None:
        for listener in reversed(self._listeners):
            listener.finished(end)


# -- the observers --------------------------------------------------------------------------------


class LoggedRuns(_Observer):
    """Upstream's log lines of a run: its events as they come (``--ansible-log-events``), then its
    stats, its warnings and, with ``--ansible-debug-logs``, its output."""

    def __init__(self, settings: Logging) -> None:
        self._settings = settings
        self._mode = LogEventsMode.parse(settings.ansible_log_events)

    def started(self, run: Run) -> RunListener:
        return _LoggedRun(self, run)


class _LoggedRun(_Listener):
    def __init__(self, observer: LoggedRuns, run: Run) -> None:
        self._settings = observer._settings
        self._run = run
        self._events = EventLogger(
            observer._mode,
            logger=runner_log,
            ident=run.ident,
            gvk=str(run.gvk),
            verbosity=run.log_verbosity,
        )

    def event(self, event: Mapping[str, Any]) -> None:
        self._events(event)

    def finished(self, end: RunEnd) -> None:
        result, run = end.result, self._run
        if result is None:
            return
        where = {"gvk": str(run.gvk), "name": run.name, "namespace": run.namespace}
        where["ident"] = run.ident
        log_stats_stdout(runner_log, result.outcome.stats_stdout, **where)
        for warning in result.outcome.warnings:
            runner_log.warning(warning, extra={"job": run.ident})
        if self._settings.ansible_debug_logs:
            log_debug_result(
                runner_log, result.stdout_path, hidden=result.outcome.hidden_output, **where
            )


class CountedRuns(_Observer):
    """The run metrics: each run's duration and result by kind."""

    def __init__(self, metrics: OperatorMetrics) -> None:
        self._metrics = metrics

    def started(self, run: Run) -> RunListener:
        return _CountedRun(self._metrics, run)


class _CountedRun(_Listener):
    def __init__(self, metrics: OperatorMetrics, run: Run) -> None:
        self._metrics = metrics
        self._gvk = str(run.gvk)

    def finished(self, end: RunEnd) -> None:
        if end.result is not None:
            self._metrics.observe_run(self._gvk, end.result.duration, end.result.ok)


class RecordedRuns:
    """Each run's record (``runs``): written when it starts and when it ends."""

    def __init__(self, history: RunHistory) -> None:
        self._history = history

    def started(self, run: Run) -> RunListener:
        return _RecordedRun(self._history, run)

    def forget(self, gvk: GVK, namespace: str, name: str) -> None:
        self._history.forget(gvk, namespace, name)


class _RecordedRun(_Listener):
    def __init__(self, history: RunHistory, run: Run) -> None:
        self._history = history
        self._record = history.begin(
            gvk=run.gvk,
            obj=run.obj,
            input_dir=run.input_dir,
            ident=run.ident,
            trigger=run.trigger,
            finalizing=run.finalizing,
            ansible=run.ansible,
            timeline=run.timeline,
            trace_id=run.trace_id,
            writes=run.writes,
        )

    def finished(self, end: RunEnd) -> None:
        if end.error:
            self._record.message = end.error
        self._history.finish(self._record, end.result, outcome=end.outcome)


class TracedRuns(_Observer):
    """Each run's span (``tracing``), in its reconcile's trace, with a span per task at its end."""

    def __init__(self, tracing: Tracing) -> None:
        self._tracing = tracing

    def started(self, run: Run) -> RunListener:
        return _TracedRun(self._tracing, run)


class _TracedRun(_Listener):
    def __init__(self, tracing: Tracing, run: Run) -> None:
        self._run = run
        self._span = contextlib.ExitStack()
        self._traced = self._span.enter_context(tracing.run(run.ident, run.obj, run.ansible))
        run.trace_id = tracing.trace_id()

    def finished(self, end: RunEnd) -> None:
        with self._span:
            self._traced.finish(self._run.timeline, end.result, end.outcome)
