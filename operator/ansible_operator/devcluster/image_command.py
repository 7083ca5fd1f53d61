"""``ansible-operator dev-image build|podman|deploy|undeploy``: the operator image without Docker.

``build`` installs podman, runc and mmdebstrap if they are missing (as root), makes the
Dockerfile's base image from Debian's mirror once, and builds the image into a private store.
``podman -- ARGS`` runs podman on that store with this machine's settings (run, save, push...).
``deploy`` and ``undeploy`` apply and delete ``config/default`` (or ``--config``) with the image
named, through kubectl, on the cluster ``target.choose`` picks, which they name; they and
``render`` (the manifests in one file or on standard output: ``make build-installer``, and
``config/manifests`` for ``make bundle``) need a kubectl (PATH's, else the cache's), not the
control plane.
User errors end in one line and exit code 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ansible_operator.devcluster import binaries, deploy, image, target, wheel
from ansible_operator.devcluster.cluster import DevCluster

# Said after a deploy to a cluster whose every Node is kwok's (the local cluster's): the Pod is
# reported Running, and a new user would wait for reconciles that never come.
NO_CONTAINER_RUNS = (
    "ansible-operator dev-image deploy: every Node of this cluster is kwok's, so no container runs"
    " (the Pod is reported Running, the operator in it reconciles nothing); `make run` runs the"
    " operator as a process against this cluster, and a local cluster started with"
    " `ansible-operator dev-cluster up --real-node` runs the image (after `dev-cluster load-image`)"
)


def _progress(message: str) -> None:
    print(f"[dev-image] {message}", file=sys.stderr, flush=True)


def _build_arg(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key, value


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dev-image", help="build and run the operator image here with podman (no Docker engine)"
    )
    actions = parser.add_subparsers(dest="action", required=True)
    build = actions.add_parser("build", help="build the Dockerfile of a project directory")
    build.add_argument("--tag", default="controller:latest", help="the image name (IMG)")
    build.add_argument("--context", type=Path, default=Path("."), help="the project directory")
    build.add_argument(
        "--file", default="Dockerfile", help="the Dockerfile, in the context (default: %(default)s)"
    )
    build.add_argument(
        "--build-arg", type=_build_arg, action="append", default=[], metavar="KEY=VALUE"
    )
    build.set_defaults(handler=_build)
    podman = actions.add_parser("podman", help="podman with the private store: podman -- ARGS")
    podman.add_argument("args", nargs=argparse.REMAINDER)
    podman.set_defaults(handler=_podman)
    for action, about in (("deploy", "apply"), ("undeploy", "delete")):
        sub = actions.add_parser(action, help=f"{about} config/default with the image named")
        sub.add_argument("--tag", default="controller:latest", help="the image name (IMG)")
        sub.add_argument("--project", type=Path, default=Path("."), help="the project directory")
        sub.add_argument(
            "--config",
            default="default",
            help="which kustomization of config/ (default; ha: three sharded replicas; crd: the "
            "CRDs only, as make install)",
        )
        sub.add_argument(
            "--kubeconfig",
            type=Path,
            help="the cluster's (default: $KUBECONFIG, else the current context of "
            "~/.kube/config, else the local dev cluster)",
        )
        sub.set_defaults(handler=_deploy)
    render = actions.add_parser(
        "render", help="config/default (or --config) with the image named, in one file"
    )
    render.add_argument("--tag", default="controller:latest", help="the image name (IMG)")
    render.add_argument("--project", type=Path, default=Path("."), help="the project directory")
    render.add_argument(
        "--config",
        default="default",
        help="which kustomization of config/ (default; manifests: the OLM bundle's input)",
    )
    render.add_argument(
        "--with",
        dest="also",
        action="append",
        default=[],
        metavar="PART",
        help="another kustomization of config/ rendered as part of it (prometheus, "
        "network-policy: what `make helm-chart` puts behind a value); repeatable",
    )
    render.add_argument(
        "--output", default="-", help="a file, or - for standard output (default: -)"
    )
    render.set_defaults(handler=_render)
    wheel_parser = actions.add_parser(
        "wheel", help="the installed ansible-operator-py as a wheel, for a project's image build"
    )
    wheel_parser.add_argument(
        "--output", type=Path, default=Path("dist"), help="its directory (default: %(default)s)"
    )
    wheel_parser.set_defaults(handler=_wheel)


def _build(args: argparse.Namespace) -> int:
    try:
        image.ensure_tools(_progress)
        podman = image.Podman.default()
        seconds = image.build(
            podman, args.context, args.tag, dict(args.build_arg), _progress, file=args.file
        )
        size = image.size_bytes(podman, args.tag)
    except image.ImageError as err:
        print(f"ansible-operator dev-image build: {err}", file=sys.stderr)
        return 1
    _progress(f"built {args.tag} in {seconds:.0f} s, {size / 2**20:.0f} MiB")
    print(args.tag)
    return 0


def _podman(args: argparse.Namespace) -> int:
    rest = args.args[1:] if args.args[:1] == ["--"] else args.args
    try:
        image.ensure_tools(_progress)
    except image.ImageError as err:
        print(f"ansible-operator dev-image podman: {err}", file=sys.stderr)
        return 1
    return image.passthrough(image.Podman.default(), rest)


def _deploy(args: argparse.Namespace) -> int:
    try:
        cluster = target.choose(args.kubeconfig)
        print(cluster.describe(), file=sys.stderr)
        kubeconfig = cluster.kubeconfig or DevCluster(None).kubeconfig
        kubectl = binaries.kubectl()
        manifests = deploy.render(kubectl, args.project, args.tag, args.config)
        act = deploy.apply if args.action == "deploy" else deploy.delete
        print(act(kubectl, kubeconfig, manifests), end="")
        if args.action == "deploy" and deploy.no_container_runs(kubectl, kubeconfig):
            print(NO_CONTAINER_RUNS, file=sys.stderr)
    except (binaries.BinariesError, deploy.DeployError, target.TargetError) as err:
        print(f"ansible-operator dev-image {args.action}: {err}", file=sys.stderr)
        return 1
    return 0


def _render(args: argparse.Namespace) -> int:
    try:
        kubectl = binaries.kubectl()
        manifests = deploy.render(kubectl, args.project, args.tag, args.config, tuple(args.also))
    except (binaries.BinariesError, deploy.DeployError) as err:
        print(f"ansible-operator dev-image render: {err}", file=sys.stderr)
        return 1
    if args.output == "-":
        print(manifests, end="")
        return 0
    output = Path(args.output)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(manifests, encoding="utf-8")
    except OSError as err:
        print(f"ansible-operator dev-image render: {output}: {err.strerror}", file=sys.stderr)
        return 1
    print(output)
    return 0


def _wheel(args: argparse.Namespace) -> int:
    try:
        print(wheel.build(args.output))
    except (wheel.WheelError, OSError) as err:
        print(f"ansible-operator dev-image wheel: {err}", file=sys.stderr)
        return 1
    return 0
