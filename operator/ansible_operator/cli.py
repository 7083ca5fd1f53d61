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


# Each command's examples, shown at the end of its --help (init's are its own epilog).
EXAMPLES: dict[tuple[str, ...], list[str]] = {
    (): ["ansible-operator init --domain example.com", "ansible-operator run --help"],
    ("version",): ["ansible-operator version"],
    ("dev-cluster",): [
        "ansible-operator dev-cluster up",
        "KUBECONFIG=$(ansible-operator dev-cluster kubeconfig) kubectl get nodes",
        "ansible-operator dev-cluster down",
    ],
    ("dev-image", "build"): [
        "ansible-operator dev-image build --tag registry.example.com/op:0.1.0",
        "ansible-operator dev-image build --build-arg ANSIBLE='ansible>=12,<13'",
    ],
    ("dev-image", "podman"): ["ansible-operator dev-image podman -- images"],
    ("dev-image", "deploy"): ["ansible-operator dev-image deploy --tag controller:latest"],
    ("dev-image", "undeploy"): ["ansible-operator dev-image undeploy --tag controller:latest"],
    ("dev-image", "bundle"): [
        "ansible-operator dev-image bundle --tag registry.example.com/op:0.1.0",
        "kubectl apply -f dist/install.yaml",
    ],
    ("dev-image", "wheel"): ["ansible-operator dev-image wheel --output dist"],
    ("dev", "run"): ["ansible-operator dev run", "ansible-operator dev run --namespace demo"],
    ("dev", "molecule"): [
        "ansible-operator dev molecule",
        "ansible-operator dev molecule memcached",
    ],
    ("dev", "operator"): [
        "ansible-operator dev operator start --dir /tmp/op --namespace demo",
        "ansible-operator dev operator stop --dir /tmp/op",
    ],
    ("new-api",): [
        "ansible-operator new-api --group cache --version v1alpha1 --kind Memcached",
        "ansible-operator new-api --group cache.example.com --version v1 --kind Backup "
        "--generate-playbook",
        "ansible-operator new-api --group cache --version v1 --kind Restore --generate-role=false",
    ],
    ("generate", "crds"): [
        "ansible-operator generate crds",
        "ansible-operator generate crds --check",
    ],
}


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Each option's default at the end of its help, unless the help already names it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        quiet: tuple[object, ...] = (None, False, [], argparse.SUPPRESS)
        if "default" in text or action.default in quiet or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


def _with_examples(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> None:
    """The help formatter and examples on `parser` and every sub-command under it."""
    parser.formatter_class = _HelpFormatter
    if parser.epilog is None and path in EXAMPLES:
        parser.epilog = "examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES[path])
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                _with_examples(sub, (*path, name))


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
    _with_examples(parser)
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
