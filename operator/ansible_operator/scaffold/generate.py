"""``ansible-operator generate crds``: one CRD per watched kind, from its role's argument spec.

The plan is computed first (which kinds, which roles, what each file must contain) and only then
written, so ``--check`` and the drift test use exactly what a write would produce. Files are
compared as YAML data, not text: a CRD that says the same thing in another layout is up to date
and is left as it is.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ansible_operator.core import GVK, Watch, WatchesError, conversion
from ansible_operator.project import load_watches, resolve_role, role_api
from ansible_operator.scaffold import argocd_health, crd_versions, crds, manifest_yaml, samples

SPEC_FILES = role_api.SPEC_FILES
DEFAULT_OUTPUT = Path("config/crd/bases")
DEFAULT_SAMPLES = Path("config/samples")


class GenerateError(Exception):
    """A problem the user must fix; one line."""


@dataclass
class PlannedCrd:
    """One CRD file: where it goes, what it must hold, and where that came from."""

    path: Path
    crd: dict[str, Any]
    sources: list[str]  # argument spec files, as shown to the user
    current: Any = None  # what the file holds now (None: missing)
    manage_status: bool = True  # whether the runtime writes its conditions (the watches')

    @property
    def up_to_date(self) -> bool:
        return self.current == self.crd


@dataclass
class PlannedSample:
    """A sample CR file to change or that the API server would refuse: its text without the
    fields its CRD no longer has and with placeholders for those a CR must set, and what is
    still wrong with it."""

    path: Path
    text: str
    removed: list[str]  # `Kind/name: spec.field`, as shown to the user
    added: list[str] = field(default_factory=list)  # `Kind/name: spec.field (why)`
    invalid: list[str] = field(default_factory=list)  # `Kind/name: spec.field: why`
    changed: bool = True  # whether `text` differs from the file


@dataclass
class PlannedHealthChecks:
    """Argo CD's health checks (scaffold.argocd_health): where they go and what they hold."""

    path: Path
    shown: str  # the path, as shown to the user
    text: str
    current: str | None  # what the file holds now (None: missing)

    @property
    def up_to_date(self) -> bool:
        return self.current == self.text


@dataclass
class Plan:
    health_checks: PlannedHealthChecks | None = None  # None: no kind whose status is written
    crds: list[PlannedCrd] = field(default_factory=list)
    samples: list[PlannedSample] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # one line each: kind and why
    warnings: list[str] = field(default_factory=list)  # one line per argument spec file


# --- finding the role and its argument spec ------------------------------------------------


def _show(path: Path | str, base: Path) -> str:
    try:
        return os.path.relpath(path, base) if os.path.isabs(path) else str(path)
    except ValueError:
        return str(path)


def load_entry(role_dir: Path) -> tuple[Path, Mapping[str, Any]] | None:
    """The role's `main` argument spec entry point and its file, or None if it has none."""
    try:
        return role_api.load_entry(role_dir)
    except role_api.RoleApiError as err:
        raise GenerateError(str(err)) from None


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())


def _playbook_roles(playbook: Path) -> list[str]:
    """Role names a playbook uses (`roles:`, import_role, include_role), in order."""
    try:
        plays = yaml.safe_load(playbook.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    names: list[str] = []

    def from_tasks(tasks: Any) -> None:
        for task in tasks if isinstance(tasks, list) else []:
            if not isinstance(task, dict):
                continue
            for key, value in task.items():
                short = str(key).rsplit(".", 1)[-1]
                if short in ("import_role", "include_role") and isinstance(value, dict):
                    if isinstance(value.get("name"), str):
                        names.append(value["name"])
                elif short == "block" or key in ("rescue", "always"):
                    from_tasks(value)

    for play in plays if isinstance(plays, list) else []:
        if not isinstance(play, dict):
            continue
        for role in play.get("roles") or []:
            name = role.get("role") or role.get("name") if isinstance(role, dict) else role
            if isinstance(name, str):
                names.append(name)
        for section in ("pre_tasks", "tasks", "post_tasks"):
            from_tasks(play.get(section))
    return names


def role_for(watch: Watch, project: Path, environ: Mapping[str, str]) -> tuple[str, Path] | None:
    """The role that defines a watch's spec: its role, else the role its playbook uses (or the
    one named like the kind under roles/)."""
    if watch.role:
        path = Path(watch.role)
        return path.name, path
    candidates: list[str] = []
    if watch.playbook:
        candidates += _playbook_roles(Path(watch.playbook))
    candidates.append(watch.gvk.kind.lower())
    for name in candidates:
        found = resolve_role(name, environ=environ, cwd=str(project))
        if found and any((Path(found) / f).is_file() for f in SPEC_FILES):
            return Path(found).name, Path(found)
    for name in candidates:
        found = resolve_role(name, environ=environ, cwd=str(project))
        if found:
            return Path(found).name, Path(found)
    return None


# --- existing CRDs -------------------------------------------------------------------------


def existing_crds(output_dir: Path) -> list[tuple[Path, Any]]:
    """Every YAML document in the output directory, with its file."""
    found: list[tuple[Path, Any]] = []
    if not output_dir.is_dir():
        return found
    for path in sorted(output_dir.iterdir()):
        if path.suffix not in (".yaml", ".yml") or not path.is_file():
            continue
        try:
            for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
                if doc is not None:
                    found.append((path, doc))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
            raise GenerateError(f"{path}: cannot read: {_one_line(err)}") from None
    return found


# --- the plan ------------------------------------------------------------------------------


def plan(
    watches_file: Path,
    output_dir: Path,
    *,
    environ: Mapping[str, str] | None = None,
    shown_base: Path | None = None,
    samples_dir: Path | None = None,
) -> Plan:
    """What `generate crds` writes, without writing anything (samples only with a directory)."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    project = watches_file.resolve().parent
    base = shown_base or Path.cwd()
    # A kind's role may come later (new-api --generate-role=false): its CRD is left as it is.
    not_there: dict[GVK, str] = {}

    def missing(err: WatchesError) -> None:
        if err.gvk is not None:
            not_there.setdefault(err.gvk, err.problem)

    try:
        watches = load_watches(watches_file, environ=env, cwd=project, missing=missing)
    except WatchesError as err:
        raise GenerateError(str(err)) from None
    on_disk = existing_crds(output_dir)

    by_kind: dict[tuple[str, str], list[tuple[Watch, str, Path, Mapping[str, Any]]]] = {}
    result = Plan()
    for watch in watches:
        gvk = watch.gvk
        there = watch.role is not None or (watch.playbook and Path(watch.playbook).exists())
        if gvk in not_there and not there:  # (a finalizer's missing role is not the spec's)
            result.skipped.append(f"{_kind(gvk)}: {not_there[gvk]}; its CRD is left as it is")
            continue
        problem = crds.validate_group(gvk.group)
        if problem:
            result.skipped.append(f"{_kind(gvk)}: no CRD ({problem})")
            continue
        role = role_for(watch, project, env)
        if role is None:
            result.skipped.append(f"{_kind(gvk)}: no role found to take the spec from")
            continue
        role_name, role_dir = role
        loaded = load_entry(role_dir)
        if loaded is None:
            result.skipped.append(
                f"{_kind(gvk)}: role {role_name} has no meta/argument_specs.yml (no CRD written)"
            )
            continue
        spec_path, entry = loaded
        by_kind.setdefault((gvk.group, gvk.kind), []).append((watch, role_name, spec_path, entry))

    unexpressed: dict[str, crds.Unexpressed] = {}
    for (group, kind), entries in by_kind.items():
        existing = next((doc for _, doc in on_disk if crds.describes(doc, group, kind)), None)
        names = crds.names_from(existing, kind)
        sources = [
            crds.VersionSource(
                version=watch.gvk.version,
                role_name=role_name,
                spec_path=_show(spec_path, base),
                entry=entry,
                camel_case=watch.snake_case_parameters,
                manage_status=watch.manage_status,
                allow_reserved_vars=watch.allow_reserved_vars,
            )
            for watch, role_name, spec_path, entry in entries
        ]
        declared = _declared_versions(entries, project, base)
        try:
            crd = crds.build_crd(
                group,
                names,
                sources + (declared.sources if declared else []),
                existing=existing,
                unexpressed=unexpressed,
                storage=declared.storage if declared else None,
                conversion=declared.stanza if declared else None,
            )
        except crds.CrdError as err:
            raise GenerateError(str(err)) from None
        sources += declared.sources if declared else []
        path = output_dir / f"{group}_{names.plural}.yaml"
        current = next((doc for p, doc in on_disk if p == path), None)
        result.crds.append(
            PlannedCrd(
                path=path,
                crd=crd,
                sources=[s.spec_path for s in sources],
                current=current,
                manage_status=all(s.manage_status for s in sources),
            )
        )
    result.warnings = [warning(spec, notes) for spec, notes in unexpressed.items() if notes]
    written = [w.gvk for w in watches if argocd_health.checked(w.gvk, w.manage_status)]
    if written:
        path = project / argocd_health.PATH
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        result.health_checks = PlannedHealthChecks(
            path=path,
            shown=_show(path, base),
            text=argocd_health.render(written),
            current=current,
        )
    if samples_dir is not None:
        result.samples = _revised_samples(samples_dir, result.crds, base)
    return result


def _declared_versions(
    entries: Sequence[tuple[Watch, str, Path, Mapping[str, Any]]], project: Path, base: Path
) -> crd_versions.Declared | None:
    """The other versions a kind's role declares in its conversion file, if it has one."""
    found = []
    for watch, role_name, spec_path, entry in entries:
        role_dir = spec_path.parent.parent
        shown = _show(role_dir / conversion.FILE, base)
        try:
            declared = crd_versions.declared(watch, role_name, role_dir, entry, shown)
        except role_api.RoleApiError as err:
            raise GenerateError(str(err)) from None
        if declared is not None:
            found.append((watch, shown, declared))
    if found and len(entries) > 1:
        watch, shown, _ = found[0]
        others = ", ".join(w.gvk.version for w, *_ in entries if w is not watch)
        raise GenerateError(
            f"{shown}: {watch.gvk.kind} declares its other versions there, and watches.yaml "
            f"has watches for {others} too: keep one watch, of the version the role is written for"
        )
    return found[0][2] if found else None


def warning(spec_path: str, notes: crds.Unexpressed) -> str:
    """One line for everything an argument spec says that its CRD cannot: each key, where, why."""
    by_key: dict[str, list[str]] = {}
    for key, where in dict.fromkeys(notes):  # a role serving two versions is read twice
        by_key.setdefault(key, []).append(where.split(": ", 1)[-1])
    parts = [
        f"{key} at {', '.join(places)} ({crds.UNEXPRESSED[key]})" for key, places in by_key.items()
    ]
    return f"{spec_path}: not expressed in the CRD, so not checked before a run: {'; '.join(parts)}"


def _revised_samples(
    samples_dir: Path, planned: list[PlannedCrd], base: Path
) -> list[PlannedSample]:
    """Sample files that set fields the planned CRDs no longer have, lack fields a CR must set,
    or that the API server would refuse."""
    schemas: dict[tuple[str, str], Mapping[str, Any]] = {}
    for p in planned:
        group, kind = p.crd["spec"]["group"], p.crd["spec"]["names"]["kind"]
        for version in p.crd["spec"]["versions"]:
            root = version["schema"]["openAPIV3Schema"]
            schemas[(f"{group}/{version['name']}", kind)] = root["properties"]["spec"]
    found = []
    paths = sorted(samples_dir.glob("*.yaml")) + sorted(samples_dir.glob("*.yml"))
    for path in paths if samples_dir.is_dir() else []:
        where = _show(path, base)
        try:
            text = path.read_text(encoding="utf-8")
            pruned, removed = samples.prune(text, schemas, where=where)
            filled, added = samples.fill(pruned, schemas, where=where)
            invalid = samples.invalid(filled, schemas)
        except (OSError, UnicodeDecodeError) as err:
            raise GenerateError(f"{path}: cannot read: {_one_line(err)}") from None
        except samples.SampleError as err:
            raise GenerateError(str(err)) from None
        if removed or added or invalid:
            found.append(
                PlannedSample(path, filled, removed, added, invalid, changed=filled != text)
            )
    return found


def _kind(gvk: GVK) -> str:
    return f"{gvk.kind}.{gvk.group}/{gvk.version}" if gvk.group else f"{gvk.kind} {gvk.version}"


def render(planned: PlannedCrd) -> str:
    """The file's text: a header naming the sources, then the CRD."""
    sources = ", ".join(planned.sources)
    header = (
        f"# Generated by `ansible-operator generate crds` from {sources}.\n"
        "# Edit the argument spec and generate again; names and scope may be edited here and are\n"
        "# kept, and so are printer columns you add (marked as added by hand).\n"
    )
    return header + "---\n" + manifest_yaml.dump(planned.crd)


def write(planned: PlannedCrd) -> None:
    _replace(planned.path, render(planned))


def _replace(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# --- the command ---------------------------------------------------------------------------


def add_parser(subparsers: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """`generate` and its `crds`; returns its sub-commands, for the others (scaffold.olm's)."""
    parser = subparsers.add_parser("generate", help="generate files from the project's roles")
    kinds = parser.add_subparsers(dest="what", required=True)
    crd_parser = kinds.add_parser(
        "crds",
        help="write each watched kind's CRD, its spec schema derived from the role's "
        "meta/argument_specs.yml, and Argo CD's health checks for the kinds "
        f"({argocd_health.PATH})",
    )
    crd_parser.add_argument(
        "--watches-file", type=Path, default=Path("watches.yaml"), help="default: ./watches.yaml"
    )
    crd_parser.add_argument(
        "--output-dir",
        type=Path,
        default=DEFAULT_OUTPUT,
        help=f"where the CRDs go (default: ./{DEFAULT_OUTPUT})",
    )
    crd_parser.add_argument(
        "--samples-dir",
        type=Path,
        default=DEFAULT_SAMPLES,
        help="sample CRs whose fields of removed options are deleted "
        f"(default: ./{DEFAULT_SAMPLES})",
    )
    crd_parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if any CRD on disk differs from what would be generated",
    )
    crd_parser.set_defaults(handler=run)
    return kinds


def run(args: argparse.Namespace) -> int:
    prog = "ansible-operator generate crds"
    try:
        result = plan(args.watches_file, args.output_dir, samples_dir=args.samples_dir)
    except GenerateError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 1
    stale = [p for p in result.crds if not p.up_to_date]
    changed = [s for s in result.samples if s.changed]
    invalid = [line for s in result.samples for line in s.invalid]
    health = result.health_checks
    stale_health = health if health is not None and not health.up_to_date else None
    if not args.check:
        for line in result.skipped:
            print(f"skipped {line}", file=sys.stderr)
        for line in result.warnings:
            print(f"warning: {line}", file=sys.stderr)
    else:
        if stale or changed or invalid or stale_health:
            said = summary(stale, result.samples, stale_health)
            print(f"{prog} --check: {said}", file=sys.stderr)
            return 1
        print(f"{len(result.crds)} CRDs up to date, every sample valid")
        return 0
    for planned in result.crds:
        state = "unchanged"
        if not planned.up_to_date:
            write(planned)
            state = "wrote" if planned.current is not None else "created"
        print(f"{state} {planned.path} (from {', '.join(planned.sources)})")
    if stale_health is not None:
        stale_health.path.parent.mkdir(parents=True, exist_ok=True)
        _replace(stale_health.path, stale_health.text)
        state = "wrote" if stale_health.current is not None else "created"
        print(f"{state} {stale_health.shown} (Argo CD's health checks)")
    for sample in changed:
        _replace(sample.path, sample.text)
        if sample.removed:
            print(f"pruned {sample.path}: removed {', '.join(sample.removed)} (no longer options)")
        if sample.added:
            print(f"filled {sample.path}: placeholders for {', '.join(sample.added)}")
    for sample in result.samples:
        for line in sample.invalid:
            print(f"{prog}: {sample.path}: {line}", file=sys.stderr)
    return 1 if invalid else 0


def summary(
    stale: list[PlannedCrd],
    stale_samples: Sequence[PlannedSample] = (),
    stale_health: PlannedHealthChecks | None = None,
) -> str:
    """One line naming each out-of-date CRD and its first difference, each sample that sets
    fields that are gone or lacks fields a CR must set, what the API server would refuse, and
    Argo CD's health checks when they are not the kinds' of watches.yaml."""
    parts = []
    if stale_health is not None:
        missing = stale_health.current is None
        parts.append(f"{stale_health.shown} is {'missing' if missing else 'out of date'}")
    for planned in stale:
        if planned.current is None:
            parts.append(f"{planned.path} is missing")
        else:
            where = crds.first_difference(planned.current, planned.crd)
            parts.append(f"{planned.path} differs at {where}")
    for sample in stale_samples:
        if sample.removed:
            parts.append(f"{sample.path} sets {', '.join(sample.removed)}, no longer options")
        if sample.added:
            parts.append(f"{sample.path} lacks {', '.join(sample.added)}")
        parts += [f"{sample.path}: {line}" for line in sample.invalid]
    sources = sorted({s for p in stale for s in p.sources})
    what = f"{len(stale)} CRD(s) out of date with {', '.join(sources)}" if stale else "samples"
    if not stale and stale_health is not None:
        what = "Argo CD's health checks"
    fixed = bool(stale) or stale_health is not None or any(s.changed for s in stale_samples)
    by_hand = any(s.invalid for s in stale_samples)
    todo = ["run 'ansible-operator generate crds'"] if fixed else []
    todo += ["fix what it cannot in the samples by hand" if fixed else "fix the samples"] * by_hand
    return f"{what}: {'; '.join(parts)}; {' and '.join(todo)}"
