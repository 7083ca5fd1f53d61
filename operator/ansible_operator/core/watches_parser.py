"""watches.yaml's text into `Watch`es, parsed and validated once at startup.

The text is read as upstream reads it (environment expansion, go-yaml's YAML 1.1,
case-insensitive keys, unknown keys ignored, scalars coerced to strings, the same defaults), and
every problem becomes a one-line `WatchesError` naming file, line, entry and GVK, in upstream's
wording. Deliberately safer than upstream: `$` expansion touches only defined, valid names.
Pure: the caller reads the file and says, through a `Locator`, where playbooks and roles are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ansible_operator.core import reserved_vars
from ansible_operator.core.annotations import MAX_VERBOSITY
from ansible_operator.core.selectors import LabelSelector
from ansible_operator.core.watches import (
    ALL_IN_NAMESPACE,
    DEFAULT_MAX_RUNNER_ARTIFACTS,
    GVK,
    MAP_BY,
    Finalizer,
    Locator,
    RelatedResource,
    Watch,
    WatchesError,
)
from ansible_operator.gocompat import parse_go_duration
from ansible_operator.gocompat import yaml as go_yaml


class _Problem(Exception):
    """A problem inside one entry; turned into a WatchesError with the entry's context."""

    gvk: GVK | None = None


# --- environment expansion -------------------------------------------------------------------

_ENV_REF = re.compile(r"\$(?:\$|\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def expand_env(text: str, environ: Mapping[str, str]) -> str:
    """Replace `${VAR}` and `$VAR` with values of defined variables; leave everything else.

    Undefined variables, invalid names (`${1}`, `${a-b}`), `$$`, `$1` and a lone `$` stay exactly
    as written (upstream rewrites several of these and so mangles `$` inside vars).
    """

    def replace(m: re.Match[str]) -> str:
        whole = m.group(0)
        if whole == "$$":
            return whole
        braced, bare = m.group(1), m.group(2)
        name = braced if braced is not None else bare
        if not _ENV_NAME.fullmatch(name):
            return whole
        return environ.get(name, whole)

    return _ENV_REF.sub(replace, text)


def _as_string(value: Any, name: str) -> str:
    try:
        return go_yaml.scalar_string(value, name)
    except ValueError as e:
        raise _Problem(str(e)) from None


def _as_bool(value: Any, name: str, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    shown = f" {value!r}" if isinstance(value, str | int | float) else ""
    raise _Problem(
        f"{name} must be a boolean (true/false, unquoted), got {go_yaml.type_name(value)}{shown}"
    )


def _as_int(value: Any, name: str) -> int:
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    shown = f" {value!r}" if isinstance(value, str | float) else ""
    raise _Problem(f"{name} must be an integer, got {go_yaml.type_name(value)}{shown}")


def _as_duration(value: Any, name: str) -> float | None:
    """A metav1.Duration: a quoted Go duration string; null means "not set"."""
    if value is None:
        return None
    if not isinstance(value, str):
        shown = f" {value!r}" if isinstance(value, int | float) else ""
        raise _Problem(
            f'{name} must be a Go duration string such as "30s" or "1h" (quoted), '
            f"got {go_yaml.type_name(value)}{shown}"
        )
    try:
        return parse_go_duration(value)
    except ValueError as e:
        raise _Problem(f"{name}: {e}") from None


def _as_vars(value: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Problem(f"{name} must be a mapping, got {go_yaml.type_name(value)}")
    try:
        result: dict[str, Any] = go_yaml.to_json(value, name)
    except ValueError as e:
        raise _Problem(str(e)) from None
    return result


def _as_reserved_vars(value: Any) -> tuple[str, ...]:
    """The `allowReservedVars` list: each an `ansible_*` variable name (anything else is allowed
    anyway, and an entry that allows nothing is refused rather than ignored)."""
    name = reserved_vars.WATCH_KEY
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Problem(f"{name} must be a list of variable names, got {go_yaml.type_name(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise _Problem(f"{name}[{i}] must be a variable name, got {go_yaml.type_name(item)}")
        if not reserved_vars.is_reserved(item):
            raise _Problem(
                f"{name}[{i}]: {item!r} is not a reserved variable: only ansible_* names other "
                f"than {reserved_vars.META_VAR} are refused, so only they can be allowed"
            )
    return tuple(value)


def _unknown_keys(raw: Mapping[Any, Any], known: Sequence[str]) -> list[str]:
    """The keys `_fields` ignores, as written: upstream drops them silently; we say so once."""
    lowered = {name.lower() for name in known}
    return [str(key) for key in raw if not (isinstance(key, str) and key.lower() in lowered)]


def _ignored_keys(raw: Mapping[Any, Any]) -> list[str]:
    """Unknown keys of an entry and of its finalizer (`finalizer.<key>`)."""
    ignored = _unknown_keys(raw, _WATCH_KEYS)
    for key, value in raw.items():
        if isinstance(key, str) and key.lower() == "finalizer" and isinstance(value, dict):
            ignored += [f"finalizer.{k}" for k in _unknown_keys(value, _FINALIZER_KEYS)]
    return ignored


def _fields(raw: Mapping[Any, Any], known: Sequence[str]) -> dict[str, Any]:
    """Pick known keys case-insensitively (Go encoding/json); later duplicates win, rest ignored."""
    by_lower = {name.lower(): name for name in known}
    picked: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(key, str) and key.lower() in by_lower:
            picked[by_lower[key.lower()]] = value
    return picked


# --- entries ----------------------------------------------------------------------------------

_WATCH_KEYS = (
    "group",
    "version",
    "kind",
    "playbook",
    "role",
    "vars",
    "maxRunnerArtifacts",
    "reconcilePeriod",
    "manageStatus",
    "watchDependentResources",
    "watchClusterScopedResources",
    "snakeCaseParameters",
    "watchAnnotationsChanges",
    "markUnsafe",
    "blacklist",
    "finalizer",
    "selector",
    "runTimeout",
    "maxVerbosity",
    reserved_vars.WATCH_KEY,
    "relatedResources",
    "kstatusConditions",
    "stallAfterFailures",
    "hold",
)
_GVK_KEYS = ("group", "version", "kind")
_FINALIZER_KEYS = ("name", "playbook", "role", "vars")
_RELATED_KEYS = ("group", "version", "kind", "selector", "mapBy")
_PATH_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")


@dataclass
class _Parsed:
    """An entry after type checks, with the problems of its playbooks and roles: each problem,
    and whether it is only a playbook or role that is not there (yet)."""

    watch: Watch
    path_problems: list[tuple[str, bool]]


def _parse_gvk_fields(fields: Mapping[str, Any], where: str) -> GVK:
    return GVK(
        group=_as_string(fields.get("group"), f"{where}group"),
        version=_as_string(fields.get("version"), f"{where}version"),
        kind=_as_string(fields.get("kind"), f"{where}kind"),
    )


def _parse_blacklist(value: Any) -> tuple[GVK, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Problem(f"blacklist must be a list, got {go_yaml.type_name(value)}")
    items = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise _Problem(f"blacklist[{i}] must be a mapping, got {go_yaml.type_name(item)}")
        items.append(_parse_gvk_fields(_fields(item, _GVK_KEYS), f"blacklist[{i}]."))
    return tuple(items)


def _as_path(value: Any, name: str) -> tuple[str, ...]:
    """A dotted field path (`spec.serviceMonitorSelector`): names of letters, digits, - and _."""
    if not isinstance(value, str):
        raise _Problem(f"{name} must be a dotted field path, got {go_yaml.type_name(value)}")
    segments = tuple(value.split("."))
    if not all(_PATH_SEGMENT.fullmatch(segment) for segment in segments):
        raise _Problem(
            f"{name}: {value!r} is not a dotted field path such as spec.serviceMonitorSelector "
            "(field names of letters, digits, '-' and '_', joined by '.')"
        )
    return segments


def _parse_map_by(value: Any, where: str) -> tuple[str, tuple[str, ...]]:
    """`mapBy`: exactly one of crSelector, objectRef (paths) and allInNamespace (true)."""
    name = f"{where}.mapBy"
    choices = ", ".join(MAP_BY)
    if not isinstance(value, dict):
        got = "nothing" if value is None else go_yaml.type_name(value)
        raise _Problem(f"{name} must be a mapping with one of {choices}, got {got}")
    unknown = _unknown_keys(value, MAP_BY)
    if unknown:
        raise _Problem(f"{name}: unknown key {unknown[0]!r} (one of {choices})")
    given = _fields(value, MAP_BY)
    if len(given) != 1:
        raise _Problem(f"{name} must have exactly one of {choices}, got {len(given)}")
    ((how, raw),) = given.items()
    if how == ALL_IN_NAMESPACE:
        if raw is not True:
            shown = " false" if raw is False else f" {raw!r}" if isinstance(raw, str) else ""
            raise _Problem(
                f"{name}.{how} must be true (unquoted), got {go_yaml.type_name(raw)}{shown}"
            )
        return how, ()
    return how, _as_path(raw, f"{name}.{how}")


def _parse_related(value: Any, own: GVK) -> tuple[RelatedResource, ...]:
    """`relatedResources`, ours: unlike the entry's own keys, nothing here is ignored."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Problem(f"relatedResources must be a list, got {go_yaml.type_name(value)}")
    related = []
    for i, item in enumerate(value):
        where = f"relatedResources[{i}]"
        if not isinstance(item, dict):
            raise _Problem(f"{where} must be a mapping, got {go_yaml.type_name(item)}")
        unknown = _unknown_keys(item, _RELATED_KEYS)
        if unknown:
            known = ", ".join(_RELATED_KEYS)
            raise _Problem(f"{where}: unknown key {unknown[0]!r} (known: {known})")
        fields = _fields(item, _RELATED_KEYS)
        gvk = _parse_gvk_fields(fields, f"{where}.")
        for part in ("version", "kind"):
            if not getattr(gvk, part):
                raise _Problem(f"{where}.{part} must not be empty")
        if (gvk.group, gvk.kind) == (own.group, own.kind):
            raise _Problem(
                f"{where}: {gvk.group_kind} is the watched kind itself, whose changes "
                "reconcile its CRs already"
            )
        try:
            selector = LabelSelector.parse(fields.get("selector"))
        except ValueError as e:
            raise _Problem(f"{where}.selector: {e}") from None
        how, path = _parse_map_by(fields.get("mapBy"), where)
        related.append(RelatedResource(gvk=gvk, map_by=how, path=path, selector=selector))
    return tuple(related)


def _ansible_path(
    raw_playbook: str, raw_role: str, locate: Locator
) -> tuple[str | None, str | None, tuple[str, bool] | None]:
    """Upstream's verifyAnsiblePath: the playbook (absolute), the role's directory (None when it
    is nowhere), and the problem: the playbook wins; then the role; one of them is required."""
    found = locate.role(raw_role) if raw_role else None
    role = found.path if found else None
    if raw_playbook:
        playbook, exists = locate.playbook(raw_playbook)
        return playbook, role, None if exists else (f"playbook: {playbook} was not found", True)
    if found is None:
        return None, None, ("must specify Role or Playbook", False)
    if role is None:
        looked = ", ".join(found.looked_in)
        return None, None, (f"role: {raw_role} was not found (looked in {looked})", True)
    return None, role, None


def _parse_finalizer(
    value: Any, locate: Locator
) -> tuple[Finalizer | None, list[tuple[str, bool]]]:
    """The finalizer and its problems."""
    if value is None:
        return None, []
    if not isinstance(value, dict):
        raise _Problem(f"finalizer must be a mapping, got {go_yaml.type_name(value)}")
    fields = _fields(value, _FINALIZER_KEYS)
    raw_playbook = _as_string(fields.get("playbook"), "finalizer.playbook")
    raw_role = _as_string(fields.get("role"), "finalizer.role")
    playbook, role, problem = _ansible_path(raw_playbook, raw_role, locate)
    finalizer = Finalizer(
        name=_as_string(fields.get("name"), "finalizer.name"),
        playbook=playbook,
        # Upstream keeps a role it did not find; it only matters when `vars` made the entry
        # valid anyway, and then the run fails as upstream's does.
        role=role or raw_role or None,
        vars=_as_vars(fields.get("vars"), "finalizer.vars"),
    )
    problems = [] if finalizer.name else [("finalizer must have name", False)]
    # A finalizer with vars but no (valid) playbook or role re-runs the main one.
    if problem and not finalizer.vars:
        problems.append(problem)
    return finalizer, problems


def _parse_entry(raw: Any, locate: Locator) -> _Parsed:
    if not isinstance(raw, dict):
        got = go_yaml.type_name(raw)
        raise _Problem(f"must be a mapping with group, version and kind, got {got}")
    fields = _fields(raw, _WATCH_KEYS)
    gvk = _parse_gvk_fields(fields, "")
    try:
        return _parse_fields(fields, gvk, locate)
    except _Problem as e:
        e.gvk = gvk
        raise


def _parse_fields(fields: Mapping[str, Any], gvk: GVK, locate: Locator) -> _Parsed:
    raw_playbook = _as_string(fields.get("playbook"), "playbook")
    raw_role = _as_string(fields.get("role"), "role")
    max_artifacts = _as_int(fields.get("maxRunnerArtifacts"), "maxRunnerArtifacts")
    reconcile_period = _as_duration(fields.get("reconcilePeriod"), "reconcilePeriod")
    run_timeout = _as_duration(fields.get("runTimeout"), "runTimeout")
    if run_timeout is not None and run_timeout < 0:
        raise _Problem(f"runTimeout must not be negative, got {fields.get('runTimeout')!r}")
    stall_after = None
    if fields.get("stallAfterFailures") is not None:
        stall_after = _as_int(fields["stallAfterFailures"], "stallAfterFailures")
        if stall_after < 1:
            raise _Problem(f"stallAfterFailures must be at least 1, got {stall_after}")
    max_verbosity = None
    if fields.get("maxVerbosity") is not None:
        max_verbosity = _as_int(fields["maxVerbosity"], "maxVerbosity")
        if not 0 <= max_verbosity <= MAX_VERBOSITY:
            raise _Problem(f"maxVerbosity must be 0 to {MAX_VERBOSITY}, got {max_verbosity}")
    mark_unsafe_raw = fields.get("markUnsafe")
    kstatus_raw = fields.get("kstatusConditions")
    try:
        selector = LabelSelector.parse(fields.get("selector"))
    except ValueError as e:
        raise _Problem(f"selector: {e}") from None
    finalizer, finalizer_problems = _parse_finalizer(fields.get("finalizer"), locate)
    playbook, role, problem = _ansible_path(raw_playbook, raw_role, locate)
    watch = Watch(
        gvk=gvk,
        role=role,
        playbook=playbook,
        vars=_as_vars(fields.get("vars"), "vars"),
        max_runner_artifacts=max_artifacts or DEFAULT_MAX_RUNNER_ARTIFACTS,
        reconcile_period=reconcile_period or None,
        manage_status=_as_bool(fields.get("manageStatus"), "manageStatus", True),
        watch_dependent_resources=_as_bool(
            fields.get("watchDependentResources"), "watchDependentResources", True
        ),
        watch_cluster_scoped_resources=_as_bool(
            fields.get("watchClusterScopedResources"), "watchClusterScopedResources", False
        ),
        snake_case_parameters=_as_bool(
            fields.get("snakeCaseParameters"), "snakeCaseParameters", True
        ),
        watch_annotations_changes=_as_bool(
            fields.get("watchAnnotationsChanges"), "watchAnnotationsChanges", False
        ),
        mark_unsafe=(
            None if mark_unsafe_raw is None else _as_bool(mark_unsafe_raw, "markUnsafe", False)
        ),
        kstatus_conditions=(
            None if kstatus_raw is None else _as_bool(kstatus_raw, "kstatusConditions", True)
        ),
        blacklist=_parse_blacklist(fields.get("blacklist")),
        finalizer=finalizer,
        selector=selector,
        run_timeout=run_timeout or None,
        max_verbosity=max_verbosity,
        stall_after_failures=stall_after,
        hold=_as_bool(fields.get("hold"), "hold", False),
        allow_reserved_vars=_as_reserved_vars(fields.get(reserved_vars.WATCH_KEY)),
        related=_parse_related(fields.get("relatedResources"), gvk),
    )
    return _Parsed(watch, ([problem] if problem else []) + finalizer_problems)


def parse_watches(
    text: str,
    *,
    source: str,
    environ: Mapping[str, str],
    locate: Locator,
    warn: Callable[[str], None] | None = None,
    missing: Callable[[WatchesError], None] | None = None,
) -> list[Watch]:
    """Expand, parse and validate the text of a watches file; raise WatchesError on the first
    problem.

    `source` names the file in messages; `environ` feeds `$VAR` expansion; `locate` says where
    each playbook and role is (finding them is the caller's I/O). `warn` is told of each key
    that is ignored (as upstream ignores unknown keys), once, naming the entry. `missing` (for
    the authoring tools, which add a kind before its role is written) is told of each playbook
    or role that is not found, and the entry is kept; without it, that is the entry's error.
    """
    try:
        data, lines = go_yaml.load(expand_env(text, environ))
    except go_yaml.YAMLSyntaxError as e:
        raise WatchesError(source, e.problem, line=e.line, column=e.column) from None
    if data is None:
        raise WatchesError(source, "no watches: expected a list of entries with group/version/kind")
    if not isinstance(data, list):
        raise WatchesError(
            source, f"top level must be a list of watches, got {go_yaml.type_name(data)}", line=1
        )

    def line_of(i: int) -> int | None:
        return lines[i] if i < len(lines) else None

    parsed: list[_Parsed] = []
    for i, raw in enumerate(data):
        try:
            entry = _parse_entry(raw, locate)
        except _Problem as e:
            raise WatchesError(source, str(e), index=i, gvk=e.gvk, line=line_of(i)) from None
        if not entry.watch.gvk.version:
            problem = f"invalid GVK: {entry.watch.gvk}: version must not be empty"
            raise WatchesError(source, problem, index=i, line=line_of(i))
        if not entry.watch.gvk.kind:
            problem = f"invalid GVK: {entry.watch.gvk}: kind must not be empty"
            raise WatchesError(source, problem, index=i, line=line_of(i))
        parsed.append(entry)
        if warn is not None:
            where = f"{source}:{line_of(i)}" if line_of(i) else source
            for key in _ignored_keys(raw):
                warn(f"{where}: entry {i + 1} ({entry.watch.gvk}): unknown key {key!r} ignored")

    seen: dict[GVK, int] = {}
    for i, entry in enumerate(parsed):
        gvk = entry.watch.gvk
        if gvk in seen:
            raise WatchesError(
                source,
                f"duplicate GVK: {gvk} (first defined in entry {seen[gvk] + 1})",
                index=i,
                gvk=gvk,
                line=line_of(i),
            )
        seen[gvk] = i
        for problem, not_there in entry.path_problems:
            error = WatchesError(source, problem, index=i, gvk=gvk, line=line_of(i))
            if not not_there or missing is None:
                raise error
            missing(error)
    return [entry.watch for entry in parsed]
