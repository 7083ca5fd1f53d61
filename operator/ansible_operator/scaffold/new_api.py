"""``ansible-operator new-api``: add a kind to a project, as ``operator-sdk create api`` does.

It writes a role with an argument spec, the watches entry, the CRD (through ``generate crds``),
a sample CR, an RBAC rule and a molecule scenario. Every check runs before the first write, so
bad input changes nothing; files that exist are never overwritten, and files that are extended
(watches.yaml, kustomizations, the RBAC role, the molecule variables) are edited as text, so
their comments and layout survive, then parsed again to prove the edit is what was meant.
"""

from __future__ import annotations

import argparse
import os
import re
import string
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ansible_operator import gocompat
from ansible_operator.core import GVK, WatchesError
from ansible_operator.project import load_watches
from ansible_operator.scaffold import argocd_health, crds, generate, project_file, yaml_text

TEMPLATES = Path(__file__).parent / "templates" / "new_api"
WATCH_MARKER = "# +kubebuilder:scaffold:watch"
CRD_MARKER = "# +kubebuilder:scaffold:crdkustomizeresource"
SAMPLES_MARKER = "# +kubebuilder:scaffold:manifestskustomizesamples"
# A kind's rules (docs/security.md): the operator watches and reads the kind, and patches it to
# add and remove a finalizer; it updates /status with the conditions, k8s_status patches it.
KIND_VERBS = ["get", "list", "watch", "patch"]
STATUS_VERBS = ["patch", "update"]
# molecule/common/: the scenarios' harness, the same files as this repository's molecule/common.
MOLECULE_COMMON = ("vars.yml", "create.yml", "destroy.yml", "operator_log.yml")

_KIND = re.compile(r"^[A-Z][A-Za-z0-9]{0,62}$")
_VERSION = re.compile(r"^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$")
_PLURAL = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


class NewApiError(Exception):
    """Bad input or a project new-api cannot extend; one line."""


class _Template(string.Template):
    delimiter = "@"  # Ansible and shell already use $ and {{ }}


@dataclass(frozen=True)
class NewApi:
    """The kind to add and every name derived from it."""

    group: str
    version: str
    kind: str
    plural: str
    playbook: bool
    role: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def role_name(self) -> str:
        return self.kind.lower()

    @property
    def sample_name(self) -> str:
        return f"{self.kind.lower()}-sample"

    @property
    def sample_file(self) -> str:
        return f"{self.group.split('.')[0]}_{self.version}_{self.kind.lower()}.yaml"

    @property
    def crd_file(self) -> str:
        return f"{self.group}_{self.plural}.yaml"

    def values(self) -> dict[str, str]:
        return {
            "kind": self.kind,
            "kind_lower": self.kind.lower(),
            "group": self.group,
            "version": self.version,
            "api_version": self.api_version,
            "plural": self.plural,
            "role_name": self.role_name,
            "sample_name": self.sample_name,
            "sample_file": self.sample_file,
            "crd_file": self.crd_file,
        }


def resolve(
    group: str,
    version: str,
    kind: str,
    *,
    domain: str | None,
    plural: str | None,
    playbook: bool,
    project: Path,
    role: bool = True,
    note: Callable[[str], None] | None = None,
) -> NewApi:
    """Validate the command line and derive the full group (see `add_parser` for the rules);
    `note` is told when the group is kept though --domain was given."""
    if not _KIND.match(kind):
        raise NewApiError(
            f"invalid kind {kind!r}: a kind is CamelCase, starts with an uppercase letter and has "
            "only letters and digits (for example Memcached)"
        )
    if not _VERSION.match(version):
        raise NewApiError(
            f"invalid version {version!r}: use v1, v2, v1beta1, v1alpha2, ... (a Kubernetes "
            "API version)"
        )
    full_group = group
    if domain and (group == domain or group.endswith(f".{domain}")):
        if note is not None:
            note(f"group {group} already ends with --domain {domain}: kept as it is")
    elif domain:
        full_group = f"{group}.{domain}"
    elif "." not in group:
        project_domain = _project_domain(project)
        if not project_domain:
            raise NewApiError(
                f"group {group!r} has no domain: give the full group (--group {group}.example.com)"
                " or --domain"
            )
        full_group = f"{group}.{project_domain}"
    problem = crds.validate_group(full_group)
    if problem:
        raise NewApiError(f"invalid group {full_group!r}: {problem}")
    chosen_plural = plural or crds.default_plural(kind)
    if not _PLURAL.match(chosen_plural):
        raise NewApiError(f"invalid plural {chosen_plural!r}: use a lowercase DNS label")
    return NewApi(full_group, version, kind, chosen_plural, playbook, role)


def _project_domain(project: Path) -> str | None:
    """The `domain` of an Operator SDK PROJECT file, when there is one."""
    try:
        return project_file.domain_of((project / "PROJECT").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None


# --- the plan of files ----------------------------------------------------------------------------


@dataclass
class Change:
    path: Path
    text: str
    created: bool
    check: Callable[[str], bool] | None = None  # does the new text say what it should?


def _render(name: str, api: NewApi) -> str:
    template = (TEMPLATES / name).read_text(encoding="utf-8")
    return _Template(template).substitute(api.values())


def _watch_entry(api: NewApi) -> str:
    target = (
        f"playbook: playbooks/{api.role_name}.yml" if api.playbook else f"role: {api.role_name}"
    )
    return f"- version: {api.version}\n  group: {api.group}\n  kind: {api.kind}\n  {target}\n"


def _watches_change(watches_file: Path, api: NewApi) -> Change:
    text = watches_file.read_text(encoding="utf-8")
    entry = _watch_entry(api)
    gap = "\n" if yaml_text.entries_spaced(text) else ""
    new = yaml_text.insert_before_marker(text, WATCH_MARKER, gap + entry)
    if new is None:
        new = (text.rstrip("\n") + "\n" + gap if text.strip() else "---\n") + entry
    expected = yaml.safe_load(entry)[0]
    try:
        data = yaml.safe_load(new)
    except yaml.YAMLError:
        data = None
    if not isinstance(data, list) or not data or data[-1] != expected:
        old = yaml.safe_load(text) or []
        if not isinstance(old, list):
            raise NewApiError(f"{watches_file}: top level must be a list of watches")
        new = "---\n" + yaml.safe_dump([*old, expected], sort_keys=False)
    return Change(watches_file, new, created=False)


def _kustomization_change(path: Path, marker: str, entry: str) -> Change | None:
    """`entry` added to a kustomization's resources, when the file exists and lacks it."""
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text) or {}
    if entry in (data.get("resources") or []):
        return None
    new = yaml_text.insert_before_marker(text, marker, f"  - {entry}") if marker in text else None
    if new is None:
        new = yaml_text.append_to_list(text, "resources", entry)
    if new is None:
        data.setdefault("resources", []).append(entry)
        new = yaml.safe_dump(data, sort_keys=False)
    return Change(
        path, new, created=False, check=lambda t: entry in (yaml.safe_load(t) or {})["resources"]
    )


def _rbac_rules(api: NewApi) -> list[dict[str, Any]]:
    return [
        {"apiGroups": [api.group], "resources": [api.plural], "verbs": list(KIND_VERBS)},
        {
            "apiGroups": [api.group],
            "resources": [f"{api.plural}/status"],
            "verbs": list(STATUS_VERBS),
        },
    ]


def _rbac_change(path: Path, api: NewApi) -> Change | None:
    """The kind's rules added to the operator's (Cluster)Role, which is created if missing."""
    created = not path.is_file()
    text = _render("rbac_role.yaml", api) if created else path.read_text(encoding="utf-8")
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    roles = [d for d in docs if isinstance(d, dict) and d.get("kind") in ("Role", "ClusterRole")]
    if not roles:
        raise NewApiError(f"{path}: no Role or ClusterRole to add the rule for {api.kind} to")
    named = [r for r in roles if (r.get("metadata") or {}).get("name") == "manager-role"]
    role = (named or roles)[0]
    missing = [rule for rule in _rbac_rules(api) if rule not in (role.get("rules") or [])]
    if not missing:
        return None

    def has_rules(new_text: str) -> bool:
        for doc in yaml.safe_load_all(new_text):
            if isinstance(doc, dict) and doc.get("kind") == role.get("kind"):
                same = (doc.get("metadata") or {}).get("name") == (role.get("metadata") or {}).get(
                    "name"
                )
                if same and all(rule in (doc.get("rules") or []) for rule in missing):
                    return True
        return False

    new: str | None = None
    if len(docs) == 1 and yaml_text.last_key(text) == "rules":
        new = text
        for rule in missing:
            rule_text = yaml.safe_dump(rule, sort_keys=False, default_flow_style=None)
            new = yaml_text.append_to_list(new, "rules", rule_text) if new is not None else None
    if new is None or not has_rules(new):
        role.setdefault("rules", [])
        role["rules"] = [*(role["rules"] or []), *missing]
        new = "---\n" + "---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs)
    return Change(path, new, created=created, check=has_rules)


def _molecule_vars_change(path: Path, api: NewApi) -> Change | None:
    """The kind added to `watched_kinds` of the shared molecule variables (for clean-up)."""
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict) or not isinstance(data.get("watched_kinds", ""), list | None):
        return None  # absent, or derived from watches.yaml (a template string)
    item = {"api_version": api.api_version, "kind": api.kind}
    if item in (data.get("watched_kinds") or []):
        return None
    new = yaml_text.append_to_list(text, "watched_kinds", _watched_kind(api))
    if new is None:
        return None

    def has_kind(new_text: str) -> bool:
        return item in (yaml.safe_load(new_text)["watched_kinds"] or [])

    return Change(path, new, created=False, check=has_kind)


def _watched_kind(api: NewApi) -> str:
    return f"{{api_version: {api.api_version}, kind: {api.kind}}}"


def _project_file_change(path: Path, api: NewApi) -> Change | None:
    """The kind added to the resources of the PROJECT file, when there is one."""
    if not path.is_file():
        return None
    try:
        new = project_file.with_resource(
            path.read_text(encoding="utf-8"), api.group, api.version, api.kind
        )
    except project_file.ProjectFileError as err:
        raise NewApiError(str(err)) from None
    return Change(path, new, created=False)


def plan(project: Path, watches_file: Path, api: NewApi) -> list[Change]:
    """Every file new-api writes, checked against what exists; nothing is written here."""
    if not watches_file.is_file():
        raise NewApiError(
            f"{watches_file} not found: run new-api in the project's root (where watches.yaml is)"
            " or give --watches-file"
        )
    try:
        empty = yaml.safe_load(watches_file.read_text(encoding="utf-8")) is None
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        empty = False  # load_watches says what is wrong with it
    try:
        # A kind added with --generate-role=false has no role yet: not this command's concern.
        watches = [] if empty else load_watches(watches_file, cwd=project, missing=lambda _: None)
    except WatchesError as err:
        raise NewApiError(str(err)) from None
    for i, watch in enumerate(watches):
        gvk = watch.gvk
        if (gvk.group, gvk.version, gvk.kind) == (api.group, api.version, api.kind):
            raise NewApiError(
                f"{api.kind}.{api.group}/{api.version} is already in {watches_file} (entry {i + 1})"
            )

    changes: list[Change] = []
    role_dir = project / "roles" / api.role_name
    new_files = {project / "config/samples" / api.sample_file: "sample.yaml"}
    if api.role:
        new_files.update(
            {
                role_dir / "tasks/main.yml": "role/tasks/main.yml",
                role_dir / "defaults/main.yml": "role/defaults/main.yml",
                role_dir / "meta/main.yml": "role/meta/main.yml",
                role_dir / "meta/argument_specs.yml": "role/meta/argument_specs.yml",
                role_dir / "README.md": "role/README.md",
            }
        )
    if api.playbook:
        new_files[project / "playbooks" / f"{api.role_name}.yml"] = "playbook.yml"
    scenario = project / "molecule" / api.role_name
    new_files.update(
        {
            scenario / "molecule.yml": "molecule/molecule.yml",
            scenario / "converge.yml": "molecule/converge.yml",
            scenario / "verify.yml": "molecule/verify.yml",
            scenario / "tasks" / f"{api.role_name}_test.yml": "molecule/tasks/test.yml",
        }
    )
    common = project / "molecule/common"
    if not common.exists():
        for name in MOLECULE_COMMON:  # the harness this repository's scenarios use, as it is
            text = (TEMPLATES / "molecule/common" / name).read_text(encoding="utf-8")
            changes.append(Change(common / name, text, created=True))
    for directory in (role_dir, scenario) if api.role else (scenario,):
        if directory.exists():
            raise NewApiError(f"{_rel(directory, project)} already exists; new-api creates it")
    for path, template in new_files.items():
        if path.exists():
            raise NewApiError(f"{_rel(path, project)} already exists; new-api does not overwrite")
        changes.append(Change(path, _render(template, api), created=True))

    crd_path = project / "config/crd/bases" / api.crd_file
    if crd_path.exists():
        raise NewApiError(f"{_rel(crd_path, project)} already exists; new-api does not overwrite")
    changes.append(_crd_change(crd_path, api, project))

    watches_change = _watches_change(watches_file, api)
    changes += [watches_change, _health_checks_change(project, watches_change.text)]
    for maybe in (
        _kustomization_change(
            project / "config/crd/kustomization.yaml", CRD_MARKER, f"bases/{api.crd_file}"
        ),
        _kustomization_change(
            project / "config/samples/kustomization.yaml", SAMPLES_MARKER, api.sample_file
        ),
        _rbac_change(project / "config/rbac/role.yaml", api),
        _molecule_vars_change(project / "molecule/common/vars.yml", api),
        _project_file_change(project / "PROJECT", api),
    ):
        if maybe is not None:
            changes.append(maybe)
    for change in changes:
        if change.check is not None and not change.check(change.text):
            raise NewApiError(f"{_rel(change.path, project)}: could not add {api.kind} to it")
    return changes


def _health_checks_change(project: Path, watches_text: str) -> Change:
    """Argo CD's health checks, as `generate crds` writes them, with the new kind's."""
    watched = [
        (
            GVK(str(entry.get("group") or ""), str(entry.get("version") or ""), entry["kind"]),
            entry.get("manageStatus") is not False,
        )
        for entry in yaml.safe_load(watches_text) or []
        if isinstance(entry, dict) and isinstance(entry.get("kind"), str)
    ]
    path = project / argocd_health.PATH
    text = argocd_health.render(
        gvk for gvk, managed in watched if argocd_health.checked(gvk, managed)
    )
    return Change(path, text, created=not path.exists())


def _rel(path: Path, base: Path) -> str:
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _crd_change(path: Path, api: NewApi, project: Path) -> Change:
    """The CRD from the new role's argument spec, written as `generate crds` writes it."""
    spec_rel = f"roles/{api.role_name}/meta/argument_specs.yml"
    entry = yaml.safe_load(_render("role/meta/argument_specs.yml", api))["argument_specs"]["main"]
    source = crds.VersionSource(
        version=api.version, role_name=api.role_name, spec_path=spec_rel, entry=entry
    )
    names = crds.Names.for_kind(api.kind, api.plural)
    planned = generate.PlannedCrd(
        path=path, crd=crds.build_crd(api.group, names, [source]), sources=[spec_rel]
    )
    return Change(path, generate.render(planned), created=True)


def apply(project: Path, watches_file: Path, api: NewApi) -> list[str]:
    """Write everything (all checks are done first); the lines to report, one per file."""
    changes = plan(project, watches_file, api)
    report = []
    for change in changes:
        _write(change.path, change.text)
        report.append(f"{'created' if change.created else 'updated'} {_rel(change.path, project)}")
    return report


# --- the command ----------------------------------------------------------------------------------


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """``new-api``, and ``create api``: the same command under operator-sdk's name."""
    _add_arguments(
        subparsers.add_parser(
            "new-api",
            help="add a kind: role with an argument spec, watches entry, CRD, sample, RBAC rule "
            "and molecule scenario (like operator-sdk create api)",
            description=DESCRIPTION,
        )
    )
    create = subparsers.add_parser("create", help="operator-sdk's name: create api is new-api")
    what = create.add_subparsers(dest="create_what", required=True, metavar="api")
    _add_arguments(what.add_parser("api", help="new-api", description=DESCRIPTION))


DESCRIPTION = (
    "Add a kind to the operator project in the current directory. The group is "
    "the full API group (cache.example.com); a group without a dot gets --domain, or the "
    "domain of an Operator SDK PROJECT file, appended; --domain is appended to a group that "
    "does not already end with it (--group cache --domain example.com)."
)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--group", required=True, help="API group, e.g. cache.example.com")
    parser.add_argument("--version", required=True, help="API version, e.g. v1alpha1")
    parser.add_argument("--kind", required=True, help="kind, CamelCase, e.g. Memcached")
    parser.add_argument(
        "--domain",
        help="appended to --group unless it already ends with it (as operator-sdk's init --domain)",
    )
    parser.add_argument(
        "--plural",
        help="resource plural (default: the kind's English plural as kubebuilder makes it, "
        "e.g. Policy: policies)",
    )
    parser.add_argument(
        "--generate-role",
        type=parse_bool,
        nargs="?",
        const=True,
        default=True,
        metavar="true|false",
        help="write roles/<kind>/ (default: true; --generate-role=false when you write the role: "
        "the watch names roles/<kind>, which generate crds skips until it exists)",
    )
    parser.add_argument(
        "--generate-playbook",
        type=parse_bool,
        nargs="?",
        const=True,
        default=False,
        metavar="true|false",
        help="also write playbooks/<kind>.yml and point the watch at it instead of the role "
        "(default: false)",
    )
    parser.add_argument(
        "--watches-file", type=Path, default=Path("watches.yaml"), help="default: ./watches.yaml"
    )
    parser.set_defaults(handler=run)


def parse_bool(text: str) -> bool:
    """Upstream's boolean flag values (`--generate-role=false`): Go's, as its flag library
    parses them."""
    try:
        return gocompat.parse_bool(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def run(args: argparse.Namespace) -> int:
    watches_file: Path = args.watches_file
    project = watches_file.resolve().parent
    try:
        api = resolve(
            args.group,
            args.version,
            args.kind,
            domain=args.domain,
            plural=args.plural,
            playbook=args.generate_playbook,
            project=project,
            role=args.generate_role,
            note=lambda line: print(f"note: {line}", file=sys.stderr),
        )
    except NewApiError as err:
        print(f"ansible-operator new-api: {err}", file=sys.stderr)
        return 1
    return run_resolved(project, watches_file, api)


def run_resolved(project: Path, watches_file: Path, api: NewApi) -> int:
    """Add `api` to the project; the command's output and exit code."""
    try:
        report = apply(project, watches_file, api)
    except NewApiError as err:
        print(f"ansible-operator new-api: {err}", file=sys.stderr)
        return 1
    for line in report:
        print(line)
    role = f"roles/{api.role_name}"
    write = (
        f"write {role}/tasks/main.yml and meta/argument_specs.yml"
        if api.role
        else f"write the role {role}/ (tasks/main.yml, meta/argument_specs.yml)"
    )
    print(
        f"next: {write}, run 'ansible-operator generate crds', and replace the FIXME in "
        f"molecule/{api.role_name}/tasks/{api.role_name}_test.yml",
        file=sys.stderr,
    )
    return 0
