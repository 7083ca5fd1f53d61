"""watches.yaml: which role or playbook reconciles which kind, loaded and validated once at startup.

The file is read as upstream reads it (environment expansion, YAML 1.1, case-insensitive keys,
unknown keys ignored, scalars coerced to strings, the same defaults and role search order), and
every problem becomes a one-line `WatchesError` naming file, line, entry and GVK, in upstream's
wording. Deliberately safer than upstream: `$` expansion touches only defined, valid names.
"""

from __future__ import annotations

import math
import os
import re
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml

from ansible_operator.core import reserved_vars
from ansible_operator.core.selectors import LabelSelector
from ansible_operator.gocompat.durations import parse_go_duration

DEFAULT_MAX_RUNNER_ARTIFACTS = 20
DEFAULT_COLLECTIONS_ROOT = "/usr/share/ansible/collections"


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
    # Our addition (`allowReservedVars`): the `ansible_*` variables a CR's spec may set.
    allow_reserved_vars: tuple[str, ...] = ()

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


# --- YAML -------------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """PyYAML's YAML 1.1, with plain scalars typed the way go-yaml v2 types them.

    Timestamps stay strings, `12:30` is not a base-60 number, and `1e6` is a float.
    """


_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_GO_YAML_INT = re.compile(r"^[-+]?(?:0b[01_]+|0[0-7_]+|(?:0|[1-9][0-9_]*)|0x[0-9a-fA-F_]+)$")
_GO_YAML_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_Loader.yaml_implicit_resolvers = {
    first: [
        (tag, rx)
        for tag, rx in resolvers
        if tag not in ("tag:yaml.org,2002:timestamp", _INT_TAG, _FLOAT_TAG)
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _first in "-+0123456789.":
    _Loader.yaml_implicit_resolvers.setdefault(_first, [])[:0] = [
        (_INT_TAG, _GO_YAML_INT),
        (_FLOAT_TAG, _GO_YAML_FLOAT),
    ]


def _parse_yaml(text: str, path: str) -> tuple[Any, list[int]]:
    """Return the document and, for a top-level list, the 1-based line of each item."""
    try:
        loader = _Loader(text)  # the reader refuses control characters already here
    except yaml.YAMLError as e:
        raise WatchesError(path, f"invalid YAML: {' '.join(str(e).split())}") from None
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = e.problem or e.context or "syntax error"
        raise WatchesError(
            path,
            f"invalid YAML: {problem}",
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
        ) from None
    except yaml.YAMLError as e:
        raise WatchesError(path, f"invalid YAML: {' '.join(str(e).split())}") from None
    finally:
        loader.dispose()
    lines: list[int] = []
    if isinstance(node, yaml.SequenceNode):
        lines = [item.start_mark.line + 1 for item in node.value]
    return data, lines


# --- value coercion (Go encoding/json semantics) ----------------------------------------------


def _go_float32_str(value: float) -> str:
    """Go's strconv.FormatFloat(v, 'g', -1, 32), which sigs.k8s.io/yaml uses for string fields."""
    if math.isnan(value):
        return "NaN"
    try:
        f32 = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        f32 = math.inf if value > 0 else -math.inf
    if math.isinf(f32):
        return "+Inf" if f32 > 0 else "-Inf"
    if f32 == 0:
        return "-0" if math.copysign(1.0, f32) < 0 else "0"
    # Shortest decimal that round-trips through float32.
    for precision in range(1, 10):
        text = f"{f32:.{precision - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == f32:
            break
    mantissa, exp_text = text.split("e")
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    exp = int(exp_text)
    if exp < -4 or exp >= 6:  # %e form; shortest formatting uses an exponent threshold of 6
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    point = exp + 1  # digits before the decimal point
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


def _as_string(value: Any, name: str) -> str:
    """A string field: YAML numbers and booleans become their text, null becomes ""."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float32_str(value)
    raise _Problem(f"{name} must be a string, got {_type_name(value)}")


def _as_bool(value: Any, name: str, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    shown = f" {value!r}" if isinstance(value, str | int | float) else ""
    raise _Problem(
        f"{name} must be a boolean (true/false, unquoted), got {_type_name(value)}{shown}"
    )


def _as_int(value: Any, name: str) -> int:
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    shown = f" {value!r}" if isinstance(value, str | float) else ""
    raise _Problem(f"{name} must be an integer, got {_type_name(value)}{shown}")


def _as_duration(value: Any, name: str) -> float | None:
    """A metav1.Duration: a quoted Go duration string; null means "not set"."""
    if value is None:
        return None
    if not isinstance(value, str):
        shown = f" {value!r}" if isinstance(value, int | float) else ""
        raise _Problem(
            f'{name} must be a Go duration string such as "30s" or "1h" (quoted), '
            f"got {_type_name(value)}{shown}"
        )
    try:
        return parse_go_duration(value)
    except ValueError as e:
        raise _Problem(f"{name}: {e}") from None


def _key_string(key: Any, where: str) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return _go_float32_str(key)
    raise _Problem(f"{where}: unsupported mapping key {key!r}")


def _jsonable(value: Any, where: str) -> Any:
    """Deep-copy a YAML value into JSON types (string keys), as sigs.k8s.io/yaml converts it."""
    if isinstance(value, dict):
        return {
            (k := _key_string(key, where)): _jsonable(item, f"{where}.{k}")
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_jsonable(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        raise _Problem(f"{where}: {value!r} cannot be represented in JSON")
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise _Problem(f"{where}: unsupported YAML value of type {type(value).__name__}")


def _as_vars(value: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Problem(f"{name} must be a mapping, got {_type_name(value)}")
    result: dict[str, Any] = _jsonable(value, name)
    return result


def _as_reserved_vars(value: Any) -> tuple[str, ...]:
    """The `allowReservedVars` list: each an `ansible_*` variable name (anything else is allowed
    anyway, and an entry that allows nothing is refused rather than ignored)."""
    name = reserved_vars.WATCH_KEY
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Problem(f"{name} must be a list of variable names, got {_type_name(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise _Problem(f"{name}[{i}] must be a variable name, got {_type_name(item)}")
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


# --- role and playbook paths ------------------------------------------------------------------


def _path_list(value: str, environ: Mapping[str, str], cwd: str) -> list[str]:
    """Split a colon-separated search path; relative entries are taken from `cwd`."""
    home = environ.get("HOME")
    entries = []
    for entry in value.split(":"):
        if home and (entry == "~" or entry.startswith("~/")):
            entry = home + entry[1:]
        entries.append(os.path.normpath(os.path.join(cwd, entry)))
    return entries


def role_candidates(role: str, *, environ: Mapping[str, str], cwd: str) -> list[str]:
    """Where upstream looks for a role, in order; the first path that exists wins."""
    if os.path.isabs(role):
        return [role]
    candidates: list[str] = []
    parts = role.split(".")
    if len(parts) == 3:  # an FQCN: namespace.collection.role
        collections = environ.get("ANSIBLE_COLLECTIONS_PATH", "")
        if not collections:
            collections = DEFAULT_COLLECTIONS_ROOT
            home = environ.get("HOME")
            if home:
                collections += ":" + os.path.join(home, ".ansible/collections")
        namespace, collection, name = parts
        for entry in _path_list(collections, environ, cwd):
            candidates.append(
                os.path.join(entry, "ansible_collections", namespace, collection, "roles", name)
            )
    roles_path = environ.get("ANSIBLE_ROLES_PATH", "")
    if roles_path:
        for entry in _path_list(roles_path, environ, cwd):
            candidates.append(os.path.normpath(os.path.join(entry, role)))
            candidates.append(os.path.normpath(os.path.join(entry, "roles", role)))
    candidates.append(os.path.normpath(os.path.join(cwd, "roles", role)))
    return candidates


def resolve_role(role: str, *, environ: Mapping[str, str], cwd: str) -> str | None:
    """The first existing candidate path for `role`, or None."""
    for candidate in role_candidates(role, environ=environ, cwd=cwd):
        if os.path.exists(candidate):
            return candidate
    return None


def _role_not_found(role: str, environ: Mapping[str, str], cwd: str) -> str:
    """Upstream's problem for a role that is nowhere, with the places it was looked for."""
    looked = ", ".join(role_candidates(role, environ=environ, cwd=cwd))
    return f"role: {role} was not found (looked in {looked})"


def _playbook_path(playbook: str, cwd: str) -> str:
    return playbook if os.path.isabs(playbook) else os.path.normpath(os.path.join(cwd, playbook))


def _ansible_path_problem(
    playbook: str | None, raw_role: str, role_found: bool, environ: Mapping[str, str], cwd: str
) -> tuple[str, bool] | None:
    """Upstream's verifyAnsiblePath: the playbook wins; then the role; one of them is required.
    The problem, and whether it is only a playbook or role that is not there (yet)."""
    if playbook:
        return None if os.path.exists(playbook) else (f"playbook: {playbook} was not found", True)
    if raw_role:
        return None if role_found else (_role_not_found(raw_role, environ, cwd), True)
    return "must specify Role or Playbook", False


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
    reserved_vars.WATCH_KEY,
)
_GVK_KEYS = ("group", "version", "kind")
_FINALIZER_KEYS = ("name", "playbook", "role", "vars")


@dataclass
class _Parsed:
    """An entry after type checks, before path validation."""

    watch: Watch
    raw_role: str
    finalizer_raw_role: str
    finalizer_role_found: bool
    environ: Mapping[str, str]  # where the roles were looked for, for the problems' messages
    cwd: str


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
        raise _Problem(f"blacklist must be a list, got {_type_name(value)}")
    items = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise _Problem(f"blacklist[{i}] must be a mapping, got {_type_name(item)}")
        items.append(_parse_gvk_fields(_fields(item, _GVK_KEYS), f"blacklist[{i}]."))
    return tuple(items)


def _parse_finalizer(
    value: Any, environ: Mapping[str, str], cwd: str
) -> tuple[Finalizer | None, str, bool]:
    """The finalizer, its role as written, and whether that role was found."""
    if value is None:
        return None, "", False
    if not isinstance(value, dict):
        raise _Problem(f"finalizer must be a mapping, got {_type_name(value)}")
    fields = _fields(value, _FINALIZER_KEYS)
    raw_playbook = _as_string(fields.get("playbook"), "finalizer.playbook")
    raw_role = _as_string(fields.get("role"), "finalizer.role")
    role: str | None = None
    found = False
    if raw_role:
        role = resolve_role(raw_role, environ=environ, cwd=cwd)
        found = role is not None
        if role is None:
            # Upstream keeps the unresolved value; it only matters when `vars` made the entry
            # valid anyway, and then the run fails as upstream's does.
            role = raw_role
    finalizer = Finalizer(
        name=_as_string(fields.get("name"), "finalizer.name"),
        playbook=_playbook_path(raw_playbook, cwd) if raw_playbook else None,
        role=role,
        vars=_as_vars(fields.get("vars"), "finalizer.vars"),
    )
    return finalizer, raw_role, found


def _parse_entry(raw: Any, environ: Mapping[str, str], cwd: str) -> _Parsed:
    if not isinstance(raw, dict):
        raise _Problem(f"must be a mapping with group, version and kind, got {_type_name(raw)}")
    fields = _fields(raw, _WATCH_KEYS)
    gvk = _parse_gvk_fields(fields, "")
    try:
        return _parse_fields(fields, gvk, environ, cwd)
    except _Problem as e:
        e.gvk = gvk
        raise


def _parse_fields(
    fields: Mapping[str, Any], gvk: GVK, environ: Mapping[str, str], cwd: str
) -> _Parsed:
    raw_playbook = _as_string(fields.get("playbook"), "playbook")
    raw_role = _as_string(fields.get("role"), "role")
    max_artifacts = _as_int(fields.get("maxRunnerArtifacts"), "maxRunnerArtifacts")
    reconcile_period = _as_duration(fields.get("reconcilePeriod"), "reconcilePeriod")
    run_timeout = _as_duration(fields.get("runTimeout"), "runTimeout")
    if run_timeout is not None and run_timeout < 0:
        raise _Problem(f"runTimeout must not be negative, got {fields.get('runTimeout')!r}")
    mark_unsafe_raw = fields.get("markUnsafe")
    try:
        selector = LabelSelector.parse(fields.get("selector"))
    except ValueError as e:
        raise _Problem(f"selector: {e}") from None
    finalizer, finalizer_raw_role, finalizer_role_found = _parse_finalizer(
        fields.get("finalizer"), environ, cwd
    )
    watch = Watch(
        gvk=gvk,
        role=(resolve_role(raw_role, environ=environ, cwd=cwd) if raw_role else None),
        playbook=_playbook_path(raw_playbook, cwd) if raw_playbook else None,
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
        blacklist=_parse_blacklist(fields.get("blacklist")),
        finalizer=finalizer,
        selector=selector,
        run_timeout=run_timeout or None,
        allow_reserved_vars=_as_reserved_vars(fields.get(reserved_vars.WATCH_KEY)),
    )
    return _Parsed(
        watch=watch,
        raw_role=raw_role,
        finalizer_raw_role=finalizer_raw_role,
        finalizer_role_found=finalizer_role_found,
        environ=environ,
        cwd=cwd,
    )


def _validate(parsed: _Parsed) -> list[tuple[str, bool]]:
    """Upstream's Watch.Validate, in its order: each problem, and whether it is only a playbook
    or role that is not there (yet)."""
    watch = parsed.watch
    problems = []
    problem = _ansible_path_problem(
        watch.playbook, parsed.raw_role, watch.role is not None, parsed.environ, parsed.cwd
    )
    if problem:
        problems.append(problem)
    finalizer = watch.finalizer
    if finalizer is not None:
        if not finalizer.name:
            problems.append(("finalizer must have name", False))
        problem = _ansible_path_problem(
            finalizer.playbook,
            parsed.finalizer_raw_role,
            parsed.finalizer_role_found,
            parsed.environ,
            parsed.cwd,
        )
        # A finalizer with vars but no (valid) playbook or role re-runs the main one.
        if problem and not finalizer.vars:
            problems.append(problem)
    return problems


def load_watches(
    path: str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    warn: Callable[[str], None] | None = None,
    missing: Callable[[WatchesError], None] | None = None,
) -> list[Watch]:
    """Read, expand, parse and validate a watches file; raise WatchesError on the first problem.

    `environ` (default `os.environ`) feeds `$VAR` expansion and the role search paths
    (`ANSIBLE_ROLES_PATH`, `ANSIBLE_COLLECTIONS_PATH`, `HOME`); `cwd` (default the process's)
    anchors relative playbooks and `roles/<role>`. `warn` is told of each key that is ignored
    (as upstream ignores unknown keys), once, naming the entry. `missing` (for the authoring
    tools, which add a kind before its role is written) is told of each playbook or role that is
    not found, and the entry is kept; without it, that is the entry's error.
    """
    shown = os.fspath(path)
    env: Mapping[str, str] = os.environ if environ is None else environ
    base = os.path.abspath(os.getcwd() if cwd is None else os.fspath(cwd))
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise WatchesError(shown, "cannot read: not valid UTF-8") from None
    except OSError as e:
        raise WatchesError(shown, f"cannot read: {e.strerror or e}") from None

    data, lines = _parse_yaml(expand_env(text, env), shown)
    if data is None:
        raise WatchesError(shown, "no watches: expected a list of entries with group/version/kind")
    if not isinstance(data, list):
        raise WatchesError(
            shown, f"top level must be a list of watches, got {_type_name(data)}", line=1
        )

    def line_of(i: int) -> int | None:
        return lines[i] if i < len(lines) else None

    parsed: list[_Parsed] = []
    for i, raw in enumerate(data):
        try:
            entry = _parse_entry(raw, env, base)
        except _Problem as e:
            raise WatchesError(shown, str(e), index=i, gvk=e.gvk, line=line_of(i)) from None
        if not entry.watch.gvk.version:
            problem = f"invalid GVK: {entry.watch.gvk}: version must not be empty"
            raise WatchesError(shown, problem, index=i, line=line_of(i))
        if not entry.watch.gvk.kind:
            problem = f"invalid GVK: {entry.watch.gvk}: kind must not be empty"
            raise WatchesError(shown, problem, index=i, line=line_of(i))
        parsed.append(entry)
        if warn is not None:
            where = f"{shown}:{line_of(i)}" if line_of(i) else shown
            for key in _ignored_keys(raw):
                warn(f"{where}: entry {i + 1} ({entry.watch.gvk}): unknown key {key!r} ignored")

    seen: dict[GVK, int] = {}
    for i, entry in enumerate(parsed):
        gvk = entry.watch.gvk
        if gvk in seen:
            raise WatchesError(
                shown,
                f"duplicate GVK: {gvk} (first defined in entry {seen[gvk] + 1})",
                index=i,
                gvk=gvk,
                line=line_of(i),
            )
        seen[gvk] = i
        for problem, not_there in _validate(entry):
            error = WatchesError(shown, problem, index=i, gvk=gvk, line=line_of(i))
            if not not_there or missing is None:
                raise error
            missing(error)
    return [entry.watch for entry in parsed]
