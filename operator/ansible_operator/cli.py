"""The ``ansible-operator`` command: one sub-command per job, each in a module of its own.

``run`` keeps upstream's flag set and parses its own arguments; the other sub-commands are ours,
with operator-sdk's names beside them (``create api``, ``init --plugins=ansible``). A bad command
line is one line naming the closest valid word, exit code 1.
"""

from __future__ import annotations

import argparse
import difflib
import os
import platform
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from ansible_operator import __version__, completion
from ansible_operator.dev import command as dev_command
from ansible_operator.dev import runs_command
from ansible_operator.devcluster import bundle_validator, image_command
from ansible_operator.devcluster import command as devcluster_command
from ansible_operator.plan import command as plan_command
from ansible_operator.runner import RunnerError, find_ansible_runner, versions
from ansible_operator.scaffold import generate, helm_chart, olm, source
from ansible_operator.scaffold import init as init_command
from ansible_operator.scaffold import new_api as newapi

_GOARCH = {"x86_64": "amd64", "aarch64": "arm64"}


def git_commit(package_dir: Path = Path(__file__).parent) -> str:
    """The commit the package runs from: its git checkout's, else the one pip recorded."""
    checkout = package_dir.parent.parent  # operator/ansible_operator -> the checkout's root
    return source.commit(source.direct_url(), checkout)


def _version(_: argparse.Namespace) -> int:
    """Upstream's line, with the Python version where upstream names Go's, and the ansible-core
    and ansible-runner versions the runs use (as `ansible-operator run` would find them)."""
    from ansible_operator.devcluster import KUBERNETES_VERSION

    try:
        ansible = versions.probe(find_ansible_runner())
    except RunnerError as err:
        print(f"ansible-operator version: {err}", file=sys.stderr)
        return 1
    machine = platform.machine()
    print(
        f'ansible-operator version: "v{__version__}", commit: "{git_commit()}", '
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
    ("version",): ["ansible-operator version", "ansible-operator --version"],
    ("completion",): [
        "source <(ansible-operator completion bash)",
        "ansible-operator completion bash > /etc/bash_completion.d/ansible-operator",
    ],
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
    ("dev-image", "render"): [
        "ansible-operator dev-image render --tag registry.example.com/op:0.1.0 "
        "--output dist/install.yaml",
        "ansible-operator dev-image render --config manifests | ansible-operator generate bundle",
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
    ("plan",): [
        "ansible-operator plan",
        "ansible-operator plan Memcached/example -n default -o json",
        "ansible-operator plan -A --watches-file ../v2/watches.yaml",
    ],
    ("runs",): [
        "ansible-operator runs --url http://127.0.0.1:8383",
        "ansible-operator runs Memcached -n default",
        "ansible-operator runs show Memcached/example --follow",
        "ansible-operator runs show memcached.cache.example.com/example 3f9c --output json",
    ],
    ("new-api",): [
        "ansible-operator new-api --group cache --version v1alpha1 --kind Memcached",
        "ansible-operator new-api --group cache.example.com --version v1 --kind Backup "
        "--generate-playbook",
        "ansible-operator new-api --group cache --version v1 --kind Restore --generate-role=false",
    ],
    ("create", "api"): [
        "ansible-operator create api --group cache --version v1alpha1 --kind Memcached",
    ],
    ("generate", "crds"): [
        "ansible-operator generate crds",
        "ansible-operator generate crds --check",
    ],
    ("generate", "kustomize", "manifests"): ["ansible-operator generate kustomize manifests"],
    ("generate", "bundle"): [
        "ansible-operator dev-image render --config manifests --tag registry.example.com/op:0.1.0"
        " | ansible-operator generate bundle --version 0.1.0 --channels alpha",
    ],
    ("generate", "helm-chart"): [
        "make helm-chart IMG=registry.example.com/op:0.1.0 VERSION=0.1.0",
        "ansible-operator dev-image render --tag registry.example.com/op:0.1.0 --with prometheus"
        " --with network-policy | ansible-operator generate helm-chart --version 0.1.0",
    ],
    ("bundle", "validate"): [
        "ansible-operator bundle validate ./bundle",
        "ansible-operator bundle validate ./bundle --select-optional suite=operatorframework",
    ],
}


def closest(word: str, valid: Iterable[str]) -> str:
    """`` (did you mean X?)`` for the valid word nearest to `word`, or nothing."""
    match = difflib.get_close_matches(word, list(valid), n=1, cutoff=0.6)
    return f" (did you mean {match[0]}?)" if match else ""


class Parser(argparse.ArgumentParser):
    """argparse, with a bad command line said in one line (no usage block) and the closest
    valid command, flag or value suggested."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            if isinstance(action, argparse._SubParsersAction):
                what = "command"
            else:
                what = f"value for {'/'.join(action.option_strings) or action.dest}"
            choices = [str(c) for c in action.choices]
            raise argparse.ArgumentError(
                None, f"unknown {what} {value!r}{closest(str(value), choices)}"
            )

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        leaf = self._subparsers is None
        if leaf and args is not None:  # an unknown flag first, before what else is missing
            self._check_flags(args)
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and leaf:  # a command's own: said here, with its flags
            self.error(f"unexpected argument {extras[0]!r}")
        return parsed, extras

    def _check_flags(self, args: Sequence[str]) -> None:
        if any(a.nargs == argparse.REMAINDER for a in self._actions):
            return  # what follows is another program's
        known = self._option_string_actions
        for arg in args:
            if arg == "--":
                return
            name = arg.split("=", 1)[0]
            if name.startswith("--") and not any(option.startswith(name) for option in known):
                flags = [option for option in known if option.startswith("--")]
                self.error(f"unknown flag {name}{closest(name, flags)}")


class _VersionAction(argparse.Action):
    """``--version``: the ``version`` command's line."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        parser.exit(_version(argparse.Namespace()))


def _completion(args: argparse.Namespace) -> int:
    from ansible_operator.runtime import flag_names

    commands = completion.tree(
        build_parser(), {("run",): ["--help", *(f"--{name}" for name in flag_names())]}
    )
    print(completion.script(args.shell, "ansible-operator", commands), end="")
    return 0


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
    parser = Parser(prog="ansible-operator")
    parser.add_argument("--version", action=_VersionAction)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    subparsers.add_parser("run", help="run the operator (see 'ansible-operator run --help')")
    subparsers.add_parser("version", help="print the version").set_defaults(handler=_version)
    shells = subparsers.add_parser(
        "completion", help="a shell completion script (bash, or zsh through bashcompinit)"
    )
    shells.add_argument("shell", choices=completion.SHELLS)
    shells.set_defaults(handler=_completion)
    devcluster_command.add_parser(subparsers)
    image_command.add_parser(subparsers)
    dev_command.add_parser(subparsers)
    runs_command.add_parser(subparsers)
    plan_command.add_parser(subparsers)
    init_command.add_parser(subparsers)
    newapi.add_parser(subparsers)
    generated = generate.add_parser(subparsers)
    olm.add_parsers(generated)
    helm_chart.add_parser(generated)
    bundle_validator.add_parser(subparsers)
    _with_examples(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    if args_list[:1] == ["run"]:  # upstream's flag set, parsed by the run command itself
        from ansible_operator import runtime

        return runtime.main(args_list[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exit_:  # bad command lines exit 1, as upstream's cobra does
        return 1 if exit_.code == 2 else int(exit_.code or 0)
    try:
        return int(args.handler(args))
    except BrokenPipeError:  # the reader went away (`| head`): as a Go program, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return 1


if __name__ == "__main__":
    sys.exit(main())
