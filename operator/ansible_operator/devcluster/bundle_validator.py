"""``ansible-operator bundle validate``: a bundle checked by operator-framework/api's validators.

operator-sdk cannot be built from the Go module proxy, but the validators its ``bundle
validate`` runs can: ``bundlevalidator/`` is a small Go program on
``github.com/operator-framework/api`` at the version its go.mod pins, built once into the same
per-user cache as the control-plane binaries (``binaries.cache_root``) and found there afterwards.
It runs the default validators and, with ``--select-optional suite=operatorframework``, that
optional suite. Findings are its lines (``error: ...``, ``warning: ...``); a bundle with an error
exits 1.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from ansible_operator.devcluster import binaries

SOURCE_DIR = Path(__file__).parent / "bundlevalidator"
API_VERSION = "v0.34.0"  # github.com/operator-framework/api, as bundlevalidator/go.mod pins it
SUITE = "suite=operatorframework"  # the one optional selection operator-sdk's docs show


def path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the validator of this pin and this source lives in the cache (a changed source is
    built again)."""
    digest = hashlib.sha256()
    for item in sorted(SOURCE_DIR.iterdir()):
        if item.is_file():
            digest.update(item.name.encode() + b"\0" + item.read_bytes())
    name = f"bundle-validator_api-{API_VERSION}_{digest.hexdigest()[:12]}"
    return binaries.cache_root(environ) / "bin" / name


def ensure(
    environ: Mapping[str, str] | None = None, progress: binaries.Progress | None = None
) -> Path:
    """The cached validator, built from bundlevalidator/ first when it is not there."""
    env = dict(os.environ if environ is None else environ)
    out = path(env)
    if out.is_file():
        return out
    if shutil.which("go", path=env.get("PATH")) is None:
        raise binaries.BinariesError(
            "go was not found on PATH: the bundle validator is built from Go modules "
            f"(github.com/operator-framework/api {API_VERSION}) on first use"
        )
    say = progress or (lambda m: print(m, file=sys.stderr, flush=True))
    say(f"building the bundle validator (operator-framework/api {API_VERSION}) from Go modules...")
    started = time.monotonic()
    out.parent.mkdir(parents=True, exist_ok=True)
    env.update(GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS="-mod=readonly")
    with tempfile.TemporaryDirectory(prefix="ansible-operator-bundlevalidator-") as tmp:
        for item in SOURCE_DIR.iterdir():
            if item.is_file():
                shutil.copy(item, Path(tmp) / item.name)
        partial = out.with_name(out.name + ".partial")
        cmd = ["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(partial), "."]
        rc, output = binaries.run_with_ticker(cmd, Path(tmp), env, "the bundle validator", say)
        if rc != 0:
            last = output.splitlines()[-1] if output else f"exit code {rc}"
            raise binaries.BinariesError(f"building the bundle validator failed ({last})")
        os.replace(partial, out)
    say(f"built the bundle validator into {out} in {time.monotonic() - started:.0f}s")
    return out


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
        validator = ensure()
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
