"""``generate kustomize manifests`` and ``generate bundle``: operator-sdk's two steps to an OLM
bundle, for an Ansible project.

``generate kustomize manifests`` writes the base ClusterServiceVersion,
``config/manifests/bases/<project>.clusterserviceversion.yaml`` (brought up to date, the
author's edits kept: ``csv``), from the kinds ``generate crds`` plans (the
one place watches.yaml is read), each role's objects (``role_objects``) and the project's name.
``generate bundle`` reads what kustomize renders of ``config/manifests`` on standard input, as
operator-sdk's does (``make bundle`` pipes it), and writes ``bundle/`` and ``bundle.Dockerfile``
(``bundle``). Bad input is one line, exit code 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from ansible_operator.scaffold import bundle, csv, generate, manifest_yaml, role_objects

DEFAULT_MANIFESTS = Path("config/manifests")


class OlmError(Exception):
    """A problem the user must fix; one line."""


def project_name(project: Path) -> str:
    """The PROJECT file's projectName, else the directory's name."""
    try:
        data = yaml.safe_load((project / "PROJECT").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        data = None
    name = data.get("projectName") if isinstance(data, dict) else None
    return str(name) if name else project.resolve().name


def base_path(manifests_dir: Path, name: str) -> Path:
    return manifests_dir / "bases" / f"{name}.clusterserviceversion.yaml"


def updated_base(project: Path, manifests_dir: Path, name: str) -> dict[str, Any]:
    """The base CSV as `generate kustomize manifests` leaves it."""
    try:
        planned = generate.plan(
            project / "watches.yaml", project / generate.DEFAULT_OUTPUT, shown_base=project
        )
    except generate.GenerateError as err:
        raise OlmError(str(err)) from None
    crds = [p.crd for p in planned.crds]
    own_kinds = {c["spec"]["names"]["kind"] for c in crds}
    entries = []
    for p in planned.crds:
        role_dirs = {(project / source).parents[1] for source in p.sources}
        made = sorted(
            {r for d in role_dirs for r in role_objects.made_by(d, own_kinds)},
            key=lambda r: (r.kind, r.version),
        )
        entries += csv.owned(p.crd, manage_status=p.manage_status, resources=made)
    path = base_path(manifests_dir, name)
    try:
        existing = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise OlmError(f"{path}: cannot read: {' '.join(str(err).split())}") from None
    if existing is not None and not isinstance(existing, dict):
        raise OlmError(f"{path}: not a ClusterServiceVersion")
    return csv.update_base(existing, name, entries, crds)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# --- the commands ---------------------------------------------------------------------------


def add_parsers(kinds: argparse._SubParsersAction) -> None:
    """`kustomize manifests` and `bundle`, under `generate`."""
    kustomize = kinds.add_parser("kustomize", help="kustomize bases (operator-sdk's)")
    what = kustomize.add_subparsers(dest="kustomize_what", required=True)
    manifests = what.add_parser(
        "manifests",
        help="write or update config/manifests/bases/<project>.clusterserviceversion.yaml, "
        "keeping what you edited in it",
    )
    manifests.add_argument(
        "--output-dir", type=Path, default=DEFAULT_MANIFESTS, help="default: %(default)s"
    )
    manifests.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    manifests.set_defaults(handler=_manifests)

    made = kinds.add_parser(
        "bundle",
        help="an OLM bundle (bundle/, bundle.Dockerfile) from the rendered config/manifests "
        "on standard input",
    )
    made.add_argument("--version", help="the CSV's semantic version (default: the base's)")
    made.add_argument("--channels", default="alpha", help="comma-separated (default: alpha)")
    made.add_argument("--default-channel", help="the package's default channel")
    made.add_argument("--package", help="the package name (default: the project's name)")
    made.add_argument(
        "--output-dir", type=Path, default=Path("bundle"), help="default: %(default)s"
    )
    made.add_argument(
        "--overwrite",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="replace the bundle's manifests and metadata (default: true)",
    )
    made.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    made.set_defaults(handler=_bundle)


def _manifests(args: argparse.Namespace) -> int:
    project = Path(".")
    name = project_name(project)
    path = base_path(args.output_dir, name)
    try:
        base = updated_base(project, args.output_dir, name)
    except OlmError as err:
        print(f"ansible-operator generate kustomize manifests: {err}", file=sys.stderr)
        return 1
    _write(path, manifest_yaml.dump(base))
    if not args.quiet:
        print(f"wrote {path}")
    return 0


def _bundle(args: argparse.Namespace) -> int:
    prog = "ansible-operator generate bundle"
    try:
        options = _options(args)
        if sys.stdin.isatty():
            raise OlmError(
                "reads the rendered config/manifests on standard input: "
                "ansible-operator dev-image render --config manifests | " + prog
            )
        documents = list(yaml.safe_load_all(sys.stdin.read()))
        made = bundle.make(documents, options)
    except (OlmError, bundle.BundleError) as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 1
    except yaml.YAMLError as err:
        print(f"{prog}: standard input is not YAML: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    out: Path = args.output_dir
    for sub in ("manifests", "metadata"):
        if (out / sub).exists():
            if not args.overwrite:
                print(f"{prog}: {out / sub} exists (--overwrite to replace it)", file=sys.stderr)
                return 1
            shutil.rmtree(out / sub)
    for relative, text in made.files.items():
        _write(out / relative, text)
    _write(Path("bundle.Dockerfile"), made.dockerfile)
    if not args.quiet:
        print(f"wrote {out}/ ({len(made.files)} files) and bundle.Dockerfile")
    return 0


def _options(args: argparse.Namespace) -> bundle.Options:
    channels = tuple(c.strip() for c in args.channels.split(",") if c.strip())
    if not channels:
        raise OlmError("--channels: at least one channel")
    if args.default_channel and args.default_channel not in channels:
        raise OlmError(f"--default-channel {args.default_channel} is not one of --channels")
    version = bundle.check_version(args.version) if args.version else None
    return bundle.Options(
        package=args.package or project_name(Path(".")),
        version=version,
        channels=channels,
        default_channel=args.default_channel,
    )
