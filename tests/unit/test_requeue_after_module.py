"""The operator_sdk.util.requeue_after module run as Ansible runs a module (args file in argv).

Playbook runs go through the action plugin of the same name (covered by tests/runner); the module
file must still work on its own, e.g. for `ansible -m operator_sdk.util.requeue_after`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

MODULE = (
    Path(__file__).resolve().parents[2]
    / "operator/ansible_collections/operator_sdk/util/plugins/modules/requeue_after.py"
)


def run_module(tmp_path: Path, args: dict[str, object]) -> dict[str, object]:
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    done = subprocess.run(
        [sys.executable, str(MODULE), str(args_file)], capture_output=True, text=True, timeout=60
    )
    return json.loads(done.stdout)


@pytest.mark.parametrize("time", ["30s", "1h30m", "500ms", ""])
def test_valid_time_is_returned_as_period(tmp_path: Path, time: str) -> None:
    result = run_module(tmp_path, {"time": time})
    assert result["period"] == time and result["changed"] is False
    assert "failed" not in result


@pytest.mark.parametrize("time", ["1.5s", "soon", "-5s"])
def test_invalid_time_fails(tmp_path: Path, time: str) -> None:
    result = run_module(tmp_path, {"time": time})
    assert result["failed"] is True
    assert str(result["msg"]).startswith("invalid time input")


def test_time_is_required(tmp_path: Path) -> None:
    result = run_module(tmp_path, {})
    assert result["failed"] is True and "time" in str(result["msg"])
