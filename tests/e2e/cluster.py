"""The cluster the e2e tests run against: its kubeconfig, API clients and component pids.

A private one is started for the session unless ANSIBLE_OPERATOR_TEST_KUBECONFIG names the
kubeconfig of a cluster that is already running (for example the shared one or the one
``make run`` started), which is then used and left alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

EXISTING_CLUSTER_ENV = "ANSIBLE_OPERATOR_TEST_KUBECONFIG"


@dataclass(frozen=True)
class Cluster:
    kubeconfig: Path

    def api_client(self):  # a new client each call: tests may close theirs
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))

    def component_pid(self, name: str) -> int:
        """The pid of one control-plane process, for tests that disturb it on purpose."""
        state = json.loads((self.kubeconfig.parent / "state.json").read_text())
        return int(state["components"][name]["pid"])
