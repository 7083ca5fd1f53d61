"""Runs that trigger themselves: a CR re-run, again and again, by its own dependents.

A role that writes a changing value into an object it owns (a timestamp in a ConfigMap's data
or an annotation) wakes its CR again through the dependent watch, which writes again, forever.
Nothing in any one run is wrong, so nothing else says so. ``LoopDetector`` sees it in the runs'
triggers: ``THRESHOLD`` runs in a row triggered by a dependent's change (``DependentChanged``),
at one generation of the CR, within ``WINDOW`` seconds. It reports that once per episode; an
episode ends with a run of any other trigger, a new generation, or ``WINDOW`` without a run.

The defaults: a loop's runs come back to back (each run's own write wakes the next, so the gap
is the run's length plus the queue), so in five minutes even a role of a minute a run has looped
five times, while five changes to its objects by someone else in five minutes, with the CR's
spec untouched, are rare; and a false report costs one Warning Event an episode.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from ansible_operator.core import changes, triggers
from ansible_operator.core.triggers import ObjectRef
from ansible_operator.core.watches import GVK

THRESHOLD = 5  # dependent-triggered runs in a row
WINDOW = 300.0  # seconds those runs fall within; also the quiet that ends an episode
NAMED = 3  # dependents a report names


@dataclass(frozen=True)
class Loop:
    """A CR's loop: ``runs`` runs within ``seconds``, woken by ``dependents`` (each with the
    fields that changed, newest first)."""

    runs: int
    seconds: float
    dependents: tuple[tuple[ObjectRef, tuple[str, ...]], ...]

    def message(self) -> str:
        """One line: what loops, and what would stop it."""
        woken = "; ".join(
            f"{ref} ({changes.describe(fields)})" if fields else str(ref)
            for ref, fields in self.dependents
        )
        kinds: list[GVK] = []
        for ref, _ in self.dependents:
            gvk = GVK.from_api_version(ref.api_version, ref.kind)
            if gvk not in kinds:
                kinds.append(gvk)
        blacklist = ", ".join(
            f'{{group: "{g.group}", version: {g.version}, kind: {g.kind}}}' for g in kinds
        )
        return (
            f"The last {self.runs} runs in {self.seconds:.0f}s were each triggered by a change "
            f"to an object the CR owns, its generation unchanged: {woken}. Each run changes "
            "what wakes the next one. Make the role write the same value when nothing changed "
            "(no timestamp or counter on every run), or stop watching the kind in "
            f"watches.yaml with blacklist: [{blacklist}] (or watchDependentResources: false for "
            "every kind); without the watch, the operator no longer repairs changes made to it"
        )


@dataclass(frozen=True)
class _Run:
    at: float
    dependent: ObjectRef
    fields: tuple[str, ...]


@dataclass
class _Streak:
    generation: object
    runs: deque[_Run]
    reported: bool = field(default=False)


class LoopDetector:
    """Per CR key, the streak of dependent-triggered runs; ``observe`` after each run."""

    def __init__(
        self,
        *,
        threshold: int = THRESHOLD,
        window: float = WINDOW,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._threshold = threshold
        self._window = window
        self._clock = clock
        self._streaks: dict[Hashable, _Streak] = {}

    def observe(self, key: Hashable, trigger: triggers.Trigger, generation: object) -> Loop | None:
        """A run of ``key`` at ``generation`` (the CR's, None for kinds without one) woken by
        ``trigger`` has ended: the loop, the first time an episode reaches the threshold."""
        now = self._clock()
        if trigger.reason != triggers.DEPENDENT_CHANGED or trigger.object is None:
            self._streaks.pop(key, None)
            return None
        streak = self._streaks.get(key)
        if (
            streak is None
            or streak.generation != generation
            or now - streak.runs[-1].at > self._window
        ):
            streak = self._streaks[key] = _Streak(generation, deque(maxlen=self._threshold))
        streak.runs.append(_Run(now, trigger.object, trigger.fields))
        if streak.reported or len(streak.runs) < self._threshold:
            return None
        seconds = now - streak.runs[0].at
        if seconds > self._window:
            return None
        streak.reported = True
        named: dict[ObjectRef, tuple[str, ...]] = {}
        for run in reversed(streak.runs):
            if len(named) < NAMED:
                named.setdefault(run.dependent, run.fields)
        return Loop(len(streak.runs), seconds, tuple(named.items()))

    def forget(self, key: Hashable) -> None:
        """``key``'s CR is gone."""
        self._streaks.pop(key, None)
