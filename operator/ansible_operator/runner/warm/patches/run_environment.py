"""What preloaded modules read from the environment when imported, read again in a warm process.

The fork server imports ansible-runner and the Kubernetes client once, with the operator's
environment; a forked run (and a module task, with its task's environment) must see what a new
interpreter would have read from its own.
"""

from __future__ import annotations

import os
import sys


def reread() -> None:
    """Re-read what preloaded modules read from the environment when imported, now that this
    process has its run's (or task's) environment."""
    # load_kube_config()'s default file, and the copy kubernetes.config re-exports, which
    # load_config() looks for before falling back to the in-cluster loader.
    default = os.environ.get("KUBECONFIG", "~/.kube/config")
    for name in ("kubernetes.config.kube_config", "kubernetes.config"):
        if (loaded := sys.modules.get(name)) is not None:
            setattr(loaded, "KUBE_CONFIG_DEFAULT_LOCATION", default)  # noqa: B010
    runner_main = sys.modules.get("ansible_runner.__main__")
    if runner_main is not None:  # defaults of ansible-runner's command line
        for name, variable in (
            ("DEFAULT_ROLES_PATH", "ANSIBLE_ROLES_PATH"),
            ("DEFAULT_RUNNER_BINARY", "RUNNER_BINARY"),
            ("DEFAULT_RUNNER_PLAYBOOK", "RUNNER_PLAYBOOK"),
            ("DEFAULT_RUNNER_ROLE", "RUNNER_ROLE"),
            ("DEFAULT_RUNNER_MODULE", "RUNNER_MODULE"),
        ):
            setattr(runner_main, name, os.environ.get(variable))
