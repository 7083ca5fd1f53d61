"""The ``ansible-operator`` command: one sub-command per job, each in a module of its own.

``run`` keeps upstream's flag set and parses its own arguments; the other sub-commands are ours.
"""

from __future__ import annotations

import argparse
import platform
import sys

from ansible_operator import __version__
from ansible_operator.dev import command as dev_command
from ansible_operator.devcluster import command as devcluster_command
from ansible_operator.devcluster import image_command
from ansible_operator.runner import RunnerError, find_ansible_runner, versions
from ansible_operator.scaffold import generate
from ansible_operator.scaffold import init as init_command
from ansible_operator.scaffold import new_api as newapi

_GOARCH = {"x86_64": "amd64", "aarch64": "arm64"}


def _version(_: argparse.Namespace) -> int:
    """Upstream's line, with the Python version where upstream names Go's, and the ansible-core
    and ansible-runner versions the runs use (as `ansible-operator run` would find them)."""
    from ansible_operator.devcluster.binaries import KUBERNETES_VERSION

    try:
        ansible = versions.probe(find_ansible_runner())
    except RunnerError as err:
        print(f"ansible-operator version: {err}", file=sys.stderr)
        return 1
    machine = platform.machine()
    print(
        f'ansible-operator version: "v{__version__}", commit: "unknown", '
        f'kubernetes version: "{KUBERNETES_VERSION}", '
        f'python version: "{platform.python_version()}", '
        f'ansible-core version: "{ansible.core}", '
        f'ansible-runner version: "{ansible.runner}", '
        f'GOOS: "{platform.system().lower()}", GOARCH: "{_GOARCH.get(machine, machine)}"'
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ansible-operator")
    subparsers = parser.add_subparsers(dest="command", required=True)
    subparsers.add_parser("run", help="run the operator (see 'ansible-operator run --help')")
    subparsers.add_parser("version", help="print the version").set_defaults(handler=_version)
    devcluster_command.add_parser(subparsers)
    image_command.add_parser(subparsers)
    dev_command.add_parser(subparsers)
    init_command.add_parser(subparsers)
    newapi.add_parser(subparsers)
    generate.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    if args_list[:1] == ["run"]:  # upstream's flag set, parsed by the run command itself
        from ansible_operator.runtime import manager

        return manager.main(args_list[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exit_:  # bad command lines exit 1, as upstream's cobra does
        return 1 if exit_.code == 2 else int(exit_.code or 0)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
