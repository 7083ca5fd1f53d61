"""The ansible-cores the runtime supports, each with the `ansible` package that brings it and the
month its maintenance ends: one table for the start-up check, `init`'s choice and the docs
(docs/ansible-core-versions.md).

End-of-life months are ansible-core's own, from its release and maintenance schedule (the
"ansible-core support matrix" of
https://docs.ansible.com/ansible/latest/reference_appendices/release_and_maintenance.html): a
release is maintained for about 18 months, then gets no fix, security fixes included.
"""

from __future__ import annotations

import calendar
import datetime
from dataclasses import dataclass


@dataclass(frozen=True)
class Core:
    release: tuple[int, int]
    package: str  # the `ansible` package requirement that installs it
    end_of_life: tuple[int, int]  # (year, month): the schedule gives a month
    kubernetes_core: str  # the kubernetes.core that package's newest release bundles

    @property
    def name(self) -> str:
        return f"{self.release[0]}.{self.release[1]}"

    @property
    def end_of_life_text(self) -> str:
        year, month = self.end_of_life
        return f"{calendar.month_name[month]} {year}"

    @property
    def end_of_life_month(self) -> str:
        """As `2026-11`."""
        year, month = self.end_of_life
        return f"{year}-{month:02d}"

    def past_end_of_life(self, today: datetime.date) -> bool:
        """Whether `today` is in its end-of-life month or after (no fix from then on)."""
        return (today.year, today.month) >= self.end_of_life


CORES = (
    Core((2, 18), "ansible>=11,<12", (2026, 11), "5.4.1"),
    Core((2, 19), "ansible>=12,<13", (2027, 5), "6.2.0"),
    Core((2, 20), "ansible>=13,<14", (2027, 11), "6.4.0"),
    Core((2, 21), "ansible>=14,<15", (2028, 5), "6.6.0"),
)
"""Every supported core, oldest first; each is tested by CI on every change."""

DEFAULT = CORES[0]
"""The runtime's own: upstream's image's, which existing Operator SDK projects are written for."""
NEWEST = CORES[-1]
"""The one maintained longest: what a new project starts on, and where to move an old one."""


NAMES = tuple(core.name for core in CORES)
"""`2.18`, `2.19`...: what a command line names a core by."""


def find(release: tuple[int, int]) -> Core | None:
    """The supported core of this release (major, minor), or None."""
    return next((core for core in CORES if core.release == release), None)


def named(name: str) -> Core | None:
    """The supported core named as `2.21`, or None."""
    return next((core for core in CORES if core.name == name), None)


def supported_range() -> str:
    """The supported cores in words, for the one-line refusals."""
    return (
        f"ansible-core {', '.join(NAMES[:-1])} or {NAMES[-1]} ({DEFAULT.name} is the default, "
        "as upstream's image)"
    )
