"""Which cluster ``make run``, ``install`` and ``deploy`` talk to, as operator-sdk's do: the one
kubectl would use (``--kubeconfig``, ``KUBECONFIG``, the current context of ``~/.kube/config``)
when there is one, else the local dev cluster. Each says which, in one line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml


class TargetError(Exception):
    """A kubeconfig named that is not there; one line."""


@dataclass(frozen=True)
class Target:
    kubeconfig: Path | None  # None: the local dev cluster
    why: str  # "the current context 'kind-x' of ~/.kube/config", ...

    @property
    def local(self) -> bool:
        return self.kubeconfig is None

    def describe(self) -> str:
        if self.kubeconfig is None:
            return f"cluster: the local dev cluster ({self.why})"
        return f"cluster: {self.why}"


def _context(path: Path) -> str | None:
    """The current context a kubeconfig names, or None (unreadable, or none set)."""
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    context = config.get("current-context") if isinstance(config, dict) else None
    return context if isinstance(context, str) and context else None


def choose(kubeconfig: Path | None = None, environ: Mapping[str, str] | None = None) -> Target:
    """The cluster to use: `kubeconfig` when given, then the first file of ``KUBECONFIG``, then
    ``~/.kube/config`` when it has a current context; else the local dev cluster."""
    env = os.environ if environ is None else environ
    if kubeconfig is not None:
        if not kubeconfig.is_file():
            raise TargetError(f"--kubeconfig={kubeconfig}: no such file")
        return Target(kubeconfig, f"--kubeconfig={kubeconfig} (context {_context(kubeconfig)})")
    if env.get("KUBECONFIG"):
        for part in env["KUBECONFIG"].split(os.pathsep):
            if part and Path(part).is_file():
                path = Path(part)
                return Target(path, f"$KUBECONFIG {path} (context {_context(path)})")
        raise TargetError(f"KUBECONFIG={env['KUBECONFIG']}: no such file")
    home = env.get("HOME")
    default = Path(home) / ".kube" / "config" if home else None
    if default is not None and default.is_file():
        context = _context(default)
        if context is not None:
            return Target(default, f"the current context {context} of {default}")
        return Target(None, f"{default} has no current context")
    return Target(None, "no KUBECONFIG and no ~/.kube/config")
