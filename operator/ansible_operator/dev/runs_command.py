"""The command line of ``ansible-operator runs`` (the command itself is ``runs``, imported
when it runs: its HTTP client would slow every other command's start)."""

from __future__ import annotations

import argparse
from pathlib import Path

OPERATOR_LABEL = "control-plane=controller-manager"  # config/manager's label on the Pods
OPERATOR_NAMESPACE_FROM = Path("config/default/kustomization.yaml")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "runs",
        help="the operator's Ansible runs: list them, show one as a task timeline, serve their "
        "web page",
        usage="ansible-operator runs [KIND[/NAME]] [flags]\n"
        "       ansible-operator runs show KIND/NAME [ID] [--follow] [flags]\n"
        "       ansible-operator runs ui [--address 127.0.0.1] [--port 0] [flags]",
    )
    parser.add_argument(
        "target",
        nargs="*",
        metavar="KIND[/NAME] | show KIND/NAME [ID] | ui",
        help="a kind (Memcached, memcached.cache.example.com), a CR of it; default: all. "
        "ui: serve the runs page of every replica, merged, on this machine until Ctrl-C",
    )
    parser.add_argument("-n", "--namespace", help="the CRs' namespace (default: any)")
    parser.add_argument(
        "-o", "--output", choices=["text", "json"], default="text", help="default: text"
    )
    parser.add_argument(
        "-f", "--follow", action="store_true", help="show: redraw a running run until it ends"
    )
    where = parser.add_argument_group(
        "where the operator is (default: its Pods in the cluster of your kubeconfig)"
    )
    where.add_argument(
        "--url",
        action="append",
        help="its metrics server, e.g. http://127.0.0.1:8383 (make run prints it); once per "
        "replica to merge several, each sent the --token",
    )
    where.add_argument(
        "--token",
        help="a bearer token for an operator run with --metrics-require-rbac (in the cluster: "
        "default, your kubeconfig's)",
    )
    where.add_argument(
        "--insecure-skip-tls-verify",
        action="store_true",
        help="with --url: accept any certificate (the operator's own is self-signed)",
    )
    where.add_argument("--kubeconfig", type=Path, help="default: $KUBECONFIG, else ~/.kube/config")
    where.add_argument(
        "--operator-namespace",
        help=f"where its Pods are (default: the namespace of {OPERATOR_NAMESPACE_FROM})",
    )
    where.add_argument(
        "--selector",
        default=OPERATOR_LABEL,
        help="the label selector of its Pods (default: %(default)s)",
    )
    page = parser.add_argument_group("runs ui: the runs page, served on this machine")
    page.add_argument("--address", help="the address it listens on (default: 127.0.0.1)")
    page.add_argument("--port", type=int, help="the port it listens on (default: 0, a free one)")
    parser.set_defaults(handler=_handler, operator_namespace_from=OPERATOR_NAMESPACE_FROM)


def _handler(args: argparse.Namespace) -> int:
    from ansible_operator.dev import runs

    return runs.main(args)
