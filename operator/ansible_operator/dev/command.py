"""``ansible-operator dev run|molecule|operator``: the development loop's commands.

``make run`` and ``make molecule`` are one line each calling ``dev run`` and ``dev molecule``;
molecule's ``create.yml`` and ``destroy.yml`` call ``dev operator start`` and ``stop``. User
errors end in one line and exit code 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

from ansible_operator.dev import launcher, molecule


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dev", help="the development loop: run the project, its molecule scenarios, an operator"
    )
    commands = parser.add_subparsers(dest="dev_command", required=True)

    run = commands.add_parser(
        "run",
        help="the CRDs and samples, and the operator in the foreground, on your cluster or the "
        "local one",
    )
    run.add_argument("--namespace", default="default", help="for the samples; the one watched")
    where = run.add_mutually_exclusive_group()
    where.add_argument(
        "--kubeconfig",
        type=Path,
        help="the cluster's (default: $KUBECONFIG, else the current context of ~/.kube/config, "
        "else the local cluster, started if need be)",
    )
    where.add_argument(
        "--local", action="store_true", help="the local cluster, whatever KUBECONFIG says"
    )
    run.add_argument("--project", type=Path, default=Path("."), help="default: .")
    run.set_defaults(handler=_run)

    mol = commands.add_parser(
        "molecule", help="molecule test of every scenario, or of those named, on a local cluster"
    )
    mol.add_argument("scenarios", nargs="*", help="default: every molecule/*/molecule.yml")
    mol.add_argument("--jobs", type=int, default=2, help="scenarios at a time (default: 2)")
    mol.add_argument("--project", type=Path, default=Path("."), help="default: .")
    mol.set_defaults(handler=_molecule)

    op = commands.add_parser(
        "operator",
        help="start an operator in the background (recorded in --dir), or stop it",
    )
    op.add_argument("action", choices=["start", "stop", "running"])
    op.add_argument("--dir", type=Path, required=True, help="its log, TMPDIR and state file")
    op.add_argument("--kubeconfig", type=Path, help="start: the cluster's")
    op.add_argument("--namespace", help="start: the namespace it watches")
    op.add_argument("--project", type=Path, default=Path("."), help="start: default: .")
    op.set_defaults(handler=_operator)


def _fail(command: str, message: str) -> int:
    print(f"ansible-operator dev {command}: {message}", file=sys.stderr, flush=True)
    return 1


def _project(path: Path) -> Path | None:
    project = path.resolve()
    return project if (project / "watches.yaml").is_file() else None


def _no_kinds(watches: Path) -> bool:
    """Whether a watches file is still as `init` wrote it (dev run checks the rest)."""
    try:
        return yaml.safe_load(watches.read_text(encoding="utf-8")) is None
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False


def _run(args: argparse.Namespace) -> int:
    project = _project(args.project)
    if project is None:
        return _fail("run", f"no watches.yaml in {args.project.resolve()}")
    if _no_kinds(project / "watches.yaml"):
        return _fail(
            "run", "watches.yaml has no kinds yet: add one with `ansible-operator new-api`"
        )
    # Imported here: its API client (aiohttp) would double the start-up of `dev operator`, which
    # molecule's create.yml and destroy.yml call several times per scenario.
    from ansible_operator.dev import run as dev_run

    return dev_run.run(project, args.namespace, args.kubeconfig, args.local)


def _molecule(args: argparse.Namespace) -> int:
    if args.jobs < 1:
        return _fail("molecule", f"--jobs must be 1 or more, not {args.jobs}")
    return molecule.run(args.project.resolve(), args.scenarios, args.jobs, os.environ)


def _operator(args: argparse.Namespace) -> int:
    directory: Path = args.dir.resolve()
    if args.action == "running":
        return 0 if launcher.running_detached(directory) is not None else 1
    if args.action == "stop":
        launcher.stop_detached(directory)
        return 0
    project = _project(args.project)
    if project is None:
        return _fail("operator start", f"no watches.yaml in {args.project.resolve()}")
    if args.kubeconfig is None or not args.kubeconfig.is_file() or not args.namespace:
        return _fail(
            "operator start",
            f"--kubeconfig must name a running cluster's kubeconfig ({args.kubeconfig}) and "
            "--namespace the namespace to watch",
        )
    if launcher.running_detached(directory) is not None:
        return _fail("operator start", f"an operator recorded in {directory} is running already")
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    config = launcher.LaunchConfig(
        workdir=project,
        project=project,
        kubeconfig=args.kubeconfig.resolve(),
        namespaces=[args.namespace],
        log=directory / "operator.log",
        args=["--watches-file=./watches.yaml"],
        own_tmp_dir=True,
        clean_environment=True,  # nothing of molecule's ANSIBLE_* settings leaks into the runs
    )
    try:
        state = launcher.start_detached(config, directory)
    except launcher.LaunchError as err:
        return _fail("operator start", str(err))
    print(f"operator pid {state.pid}, metrics port {state.metrics_port}, log {state.log}")
    return 0
