"""``ansible-operator dev-cluster`` run as a user runs it, for the tests of private clusters
(their lifecycle, feature gates, a real node)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def dev_cluster(*args: str, state_dir: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ansible_operator.cli", "dev-cluster", *args]
    return subprocess.run(
        [*command, "--state-dir", str(state_dir)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
