"""``ansible-operator bundle validate``: a bundle checked by operator-framework/api's validators.

operator-sdk cannot be built from the Go module proxy, but the validators its ``bundle
validate`` runs can: ``bundlevalidator/`` is a small Go program on
``github.com/operator-framework/api`` at the version its go.mod pins, built once into the same
per-user cache as the control-plane binaries (``gobuild``) and found there afterwards.
It runs the default validators and, with ``--select-optional suite=operatorframework``, that
optional suite. Findings are its lines (``error: ...``, ``warning: ...``); a bundle with an error
exits 1.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from ansible_operator.devcluster import binaries, gobuild

API_VERSION = "v0.34.0"  # github.com/operator-framework/api, as bundlevalidator/go.mod pins it
SUITE = "suite=operatorframework"  # the one optional selection operator-sdk's docs show


PROGRAM = gobuild.GoProgram(
    name="bundle-validator",
    pin=f"api-{API_VERSION}",
    title=f"the bundle validator (operator-framework/api {API_VERSION})",
    module=Path(__file__).parent / "bundlevalidator",
)


def validate(bundle_dir: Path, *, optional: bool, validator: Path) -> tuple[int, str]:
    """The validator's exit code and findings for one bundle directory."""
    cmd = [str(validator), *(["-optional"] if optional else []), str(bundle_dir)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bundle", help="OLM bundles (operator-sdk's bundle command)")
    actions = parser.add_subparsers(dest="action", required=True)
    check = actions.add_parser(
        "validate",
        help="validate a bundle directory with operator-framework/api's validators "
        "(built from Go modules on first use)",
    )
    check.add_argument("directory", type=Path, help="the bundle directory, e.g. ./bundle")
    check.add_argument(
        "--select-optional",
        metavar="SELECTOR",
        help=f"also run the optional validators of {SUITE} (the one selection offered)",
    )
    check.set_defaults(handler=_validate)


def _validate(args: argparse.Namespace) -> int:
    prog = "ansible-operator bundle validate"
    if args.select_optional not in (None, SUITE):
        print(f"{prog}: --select-optional {args.select_optional}: only {SUITE}", file=sys.stderr)
        return 1
    if not (args.directory / "manifests").is_dir():
        print(f"{prog}: {args.directory}: no manifests/ directory in it", file=sys.stderr)
        return 1
    try:
        validator = gobuild.ensure(PROGRAM)
    except binaries.BinariesError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 1
    rc, findings = validate(
        args.directory, optional=args.select_optional is not None, validator=validator
    )
    print(findings, end="")
    if rc == 0:
        print(f"{args.directory}: all validation tests have completed successfully")
    return rc
