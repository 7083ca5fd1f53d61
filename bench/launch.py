"""An operator process for a bench: one watch (a kind and a role of the e2e tests' group) in one
namespace, started by the project's launcher and ready."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml
from tests.e2e import crds

from ansible_operator.dev import launcher

REPO = Path(__file__).resolve().parents[1]


def start_operator(
    workdir: Path,
    kubeconfig: Path,
    namespace: str,
    kind: str,
    role: Path,
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
) -> launcher.OperatorProcess:
    workdir.mkdir()
    watches = [{"group": crds.GROUP, "version": crds.VERSION, "kind": kind, "role": str(role)}]
    (workdir / "watches.yaml").write_text(yaml.safe_dump(watches))
    config = launcher.LaunchConfig(
        workdir=workdir,
        project=REPO,
        kubeconfig=kubeconfig,
        namespaces=[namespace],
        log=workdir / "operator.log",
        args=args,
        env=env or {},
    )
    return launcher.start(config, ready=True)
