"""``ansible-operator dev-cluster up|down|status|kubeconfig|build``.

Progress goes to stderr and results to stdout, so ``export KUBECONFIG=$(ansible-operator
dev-cluster kubeconfig)`` works. User errors end in one line and exit code 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ansible_operator.devcluster import binaries, example_images, gobuild, node
from ansible_operator.devcluster.cluster import ClusterError, DevCluster


def _progress(message: str) -> None:
    print(f"[dev-cluster] {message}", file=sys.stderr, flush=True)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dev-cluster",
        help="a local Kubernetes control plane (etcd, kube-apiserver, controller-manager, "
        "scheduler, kwok) as plain processes",
    )
    parser.add_argument(
        "action",
        choices=["up", "down", "status", "kubeconfig", "build", "load-image", "example-images"],
        help="what to do",
    )
    parser.add_argument(
        "images",
        nargs="*",
        metavar="IMAGE",
        help="with 'load-image': images in podman's store to copy into the real node",
    )
    parser.add_argument(
        "--real-node",
        action="store_true",
        help="with 'up' and 'build': add a node that runs containers (containerd and a kubelet; "
        "needs root and Debian's containerd, runc and containernetworking-plugins)",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        help="where the cluster keeps its files (default: $ANSIBLE_OPERATOR_DEV_CLUSTER_DIR or "
        "~/.local/state/ansible-operator/dev-cluster)",
    )
    parser.add_argument(
        "--bin-dir",
        type=Path,
        help=f"take every binary from this directory (default: ${binaries.BIN_DIR_ENV}, then "
        "PATH when versions match, then the build cache)",
    )
    parser.add_argument(
        "--feature-gates",
        default="",
        type=_feature_gates,
        help="with 'up': the API server's feature gates, e.g. ShardedListAndWatch=true "
        "(sharded watches, Kubernetes 1.36 alpha); a running cluster with other gates is refused",
    )
    parser.set_defaults(handler=run)


def _feature_gates(value: str) -> str:
    """``Name=true|false`` pairs joined by commas, as kube-apiserver takes them ("": none)."""
    for pair in value.split(",") if value else []:
        name, sep, setting = pair.partition("=")
        if not (name.isalnum() and sep and setting in ("true", "false")):
            raise argparse.ArgumentTypeError(
                f"{value!r}: expected Name=true or Name=false, comma-separated"
            )
    return value


def run(args: argparse.Namespace) -> int:
    cluster = DevCluster(args.state_dir, progress=_progress)
    try:
        if args.images and args.action != "load-image":
            raise ClusterError(f"{args.action} takes no images: {' '.join(args.images)}")
        if args.real_node and args.action not in ("up", "build"):
            raise ClusterError(f"--real-node goes with up or build, not {args.action}")
        names = binaries.needed(args.real_node)
        if args.action == "build":
            print(binaries.build(names, progress=_progress))
            for program in (*node.PROGRAMS, *example_images.ETCD_TOOLS) if args.real_node else ():
                gobuild.ensure(program, progress=_progress)
        elif args.action == "up":
            started = time.monotonic()
            bins = binaries.ensure(args.bin_dir, progress=_progress, names=names)
            _progress(f"binaries from {bins.source}")
            kubeconfig = cluster.up(
                bins, feature_gates=args.feature_gates, real_node=args.real_node
            )
            _progress(f"up in {time.monotonic() - started:.1f}s; kubeconfig: {kubeconfig}")
            print(kubeconfig)
        elif args.action == "down":
            if not cluster.down():
                _progress(f"no cluster recorded in {cluster.layout.state_dir}")
        elif args.action == "load-image":
            if not args.images:
                raise ClusterError("load-image needs the images to load, e.g. localhost/op:1")
            for image in args.images:
                cluster.load_image(image)
        elif args.action == "example-images":
            cluster.load_example_images()
        elif args.action == "kubeconfig":
            if not cluster.kubeconfig.exists():
                raise ClusterError(f"no cluster in {cluster.layout.state_dir}; run 'up' first")
            print(cluster.kubeconfig)
        else:
            return _print_status(cluster)
    except (binaries.BinariesError, ClusterError) as err:
        print(f"ansible-operator dev-cluster {args.action}: {err}", file=sys.stderr)
        return 1
    return 0


def _print_status(cluster: DevCluster) -> int:
    statuses = cluster.status()
    if not statuses:
        print(f"no cluster in {cluster.layout.state_dir}")
        return 1
    for s in statuses:
        state = "healthy" if s.healthy else ("running, not healthy" if s.running else "dead")
        print(f"{s.name:<24} pid {s.pid:<8} {state}")
        if not s.running:
            print(f"  last lines of {s.log}:")
            print("\n".join("    " + line for line in s.log_tail.splitlines()))
    return 0 if all(s.healthy for s in statuses) else 1
