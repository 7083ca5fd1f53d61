"""What watches.yaml says: which role or playbook reconciles which kind (`Watch`, with its `GVK`,
`Finalizer` and `RelatedResource`s), and the one-line `WatchesError` a problem in it becomes.
The text is parsed into these by `watches_parser`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ansible_operator.core.selectors import LabelSelector

DEFAULT_MAX_RUNNER_ARTIFACTS = 20


@dataclass(frozen=True)
class GVK:
    """A group/version/kind; the core group is the empty string."""

    group: str
    version: str
    kind: str

    def __str__(self) -> str:
        # Go's schema.GroupVersionKind.String(): "group/version, Kind=Kind" ("/v1, Kind=Secret").
        return f"{self.group}/{self.version}, Kind={self.kind}"

    @property
    def api_version(self) -> str:
        """The object's `apiVersion`: `group/version`, or just `version` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_kind(self) -> str:
        """`Kind.group` (just `Kind` for the core group), as used in owner annotations."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @classmethod
    def from_api_version(cls, api_version: str, kind: str) -> GVK:
        group, _, version = api_version.rpartition("/")
        return cls(group=group, version=version, kind=kind)


@dataclass(frozen=True)
class Finalizer:
    """A watch's finalizer: its name, and what runs when a CR carrying it is deleted.

    With neither playbook nor role, the watch's own playbook or role runs with `vars` added.
    """

    name: str
    playbook: str | None = None
    role: str | None = None
    vars: dict[str, Any] = field(default_factory=dict)

    @property
    def has_own_ansible(self) -> bool:
        return bool(self.playbook or self.role)


# How a related object's change finds the CRs it concerns (a `relatedResources` entry's `mapBy`).
CR_SELECTOR = "crSelector"  # the CRs whose label selector at `path` matches the object's labels
OBJECT_REF = "objectRef"  # the CR named by the object's field at `path`
ALL_IN_NAMESPACE = "allInNamespace"  # every CR in the object's namespace
MAP_BY = (CR_SELECTOR, OBJECT_REF, ALL_IN_NAMESPACE)


@dataclass(frozen=True)
class RelatedResource:
    """Our addition (`relatedResources`): objects of another kind whose changes reconcile CRs.

    Only objects whose labels match `selector` count; `map_by` says which CRs they concern,
    reading the dotted `path` (of the CR for crSelector, of the object for objectRef).
    """

    gvk: GVK
    map_by: str
    path: tuple[str, ...] = ()
    selector: LabelSelector = field(default_factory=LabelSelector)

    def __str__(self) -> str:
        how = f"{self.map_by}={'.'.join(self.path)}" if self.path else self.map_by
        return f"{self.gvk.group_kind} by {how}"


@dataclass(frozen=True)
class Watch:
    """One validated watches.yaml entry. Paths are absolute; defaults are upstream's."""

    gvk: GVK
    role: str | None = None
    playbook: str | None = None
    vars: dict[str, Any] = field(default_factory=dict)
    max_runner_artifacts: int = DEFAULT_MAX_RUNNER_ARTIFACTS
    # Seconds; None means "use --reconcile-period". A negative value disables periodic requeue.
    reconcile_period: float | None = None
    manage_status: bool = True
    watch_dependent_resources: bool = True
    watch_cluster_scoped_resources: bool = False
    snake_case_parameters: bool = True
    watch_annotations_changes: bool = False
    # None means "not given in the file"; see `marks_spec_unsafe`.
    mark_unsafe: bool | None = None
    blacklist: tuple[GVK, ...] = ()
    finalizer: Finalizer | None = None
    selector: LabelSelector = field(default_factory=LabelSelector)
    # Our addition (`runTimeout`): seconds; None means "use --ansible-run-timeout".
    run_timeout: float | None = None
    # Our addition (`maxVerbosity`, 0..7): the most a CR's verbosity annotation may ask for (a
    # run's output can show task results: a Secret's data); None: the watch's own verbosity.
    max_verbosity: int | None = None
    # Our addition (`allowReservedVars`): the `ansible_*` variables a CR's spec may set.
    allow_reserved_vars: tuple[str, ...] = ()
    # Our addition (`relatedResources`): other kinds whose changes reconcile this kind's CRs.
    related: tuple[RelatedResource, ...] = ()
    # Our addition (`kstatusConditions`): kstatus's conditions beside upstream's (core.kstatus);
    # None: as --kstatus-conditions says.
    kstatus_conditions: bool | None = None
    # Our addition (`stallAfterFailures`): after this many failed runs in a row of one generation
    # the operator gives up until the CR changes (kstatus's Stalled); None: it retries for ever.
    stall_after_failures: int | None = None
    # Our addition (`hold`): every CR of the kind held for review (planned, not applied) unless
    # its hold annotation says "false" (core.annotations.hold).
    hold: bool = False

    @property
    def marks_spec_unsafe(self) -> bool:
        """Spec-derived strings are marked unsafe unless the watch says `markUnsafe: false`."""
        return self.mark_unsafe is not False

    @property
    def ansible_path(self) -> str:
        """What runs: the playbook if one is set (it wins over a role), else the role directory."""
        path = self.playbook or self.role
        if not path:
            raise ValueError(f"watch {self.gvk} has neither playbook nor role")
        return path

    @property
    def is_playbook(self) -> bool:
        return bool(self.playbook)

    def __hash__(self) -> int:
        # GVKs are unique within a watches file; hashing by it keeps Watch usable as a key
        # although `vars` and the selector hold dicts.
        return hash(self.gvk)

    def is_blacklisted(self, gvk: GVK) -> bool:
        """Dependent watches are not set up for blacklisted kinds (exact GVK match)."""
        return gvk in self.blacklist


@dataclass(frozen=True)
class RoleSearch:
    """Where a role is: its directory, None when it is nowhere, and the places looked in."""

    path: str | None
    looked_in: tuple[str, ...]


class Locator(Protocol):
    """Where a watches file's playbooks and roles are on disk (finding them is the caller's)."""

    def playbook(self, playbook: str) -> tuple[str, bool]:
        """The playbook's absolute path, and whether it exists."""
        ...

    def role(self, role: str) -> RoleSearch: ...


class WatchesError(Exception):
    """A problem in watches.yaml; `str()` is one line naming the file, entry and problem."""

    def __init__(
        self,
        path: str,
        problem: str,
        *,
        index: int | None = None,
        gvk: GVK | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.path = path
        self.problem = problem
        self.index = index
        self.gvk = gvk
        self.line = line
        self.column = column
        # A key or value quoted in the problem may hold line breaks: the message stays one line.
        super().__init__(self._format().replace("\r", "\\r").replace("\n", "\\n"))

    def _format(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        if self.index is None:
            return f"{where}: {self.problem}"
        entry = f"entry {self.index + 1}"  # counted from 1, as lines are
        if self.gvk is not None:
            entry += f" ({self.gvk})"
        return f"{where}: {entry}: {self.problem}"
