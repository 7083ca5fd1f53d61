"""How GitOps tools read a CR, by their own code: kstatus (sigs.k8s.io/cli-utils, as Flux and
cli-utils compute it) and Argo CD's health check that `generate crds` writes (run by gopher-lua as
Argo CD runs it), through one small Go program (tests/e2e/kstatus); ``kstatus_check`` (in
conftest) is its command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ansible_operator.devcluster import gobuild
from ansible_operator.scaffold import argocd_health

from .tools import KSTATUS


def check_command(workdir: Path) -> list[str]:
    """The command that answers, for a CR, kstatus's status and the health check's."""

    def progress(message: str) -> None:
        print(f"[kstatus-check] {message}", file=sys.__stderr__, flush=True)

    script = workdir / "health.lua"
    script.write_text(argocd_health.LUA)
    return [str(gobuild.ensure(KSTATUS, progress=progress)), str(script)]


def verdict(tool: list[str], obj: dict) -> tuple[str, str]:
    """kstatus's status of ``obj`` (InProgress, Current, Failed, ...) and its message."""
    answer = both(tool, obj)["kstatus"]
    return answer["status"], answer["message"]


def argo(tool: list[str], obj: dict) -> tuple[str, str]:
    """Argo CD's health of ``obj`` (Progressing, Healthy, Degraded, ...) and its message."""
    answer = both(tool, obj)["argocd"]
    return answer["status"], answer["message"]


def both(tool: list[str], obj: dict) -> dict:
    done = subprocess.run(
        tool, input=json.dumps(obj) + "\n", capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)
