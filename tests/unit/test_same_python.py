"""Which interpreter is the warm runner's own (``runner.warm.modules.same_python``): the same
file in the same virtualenv, however the virtualenv's directory is reached."""

from __future__ import annotations

import sys
from pathlib import Path

from ansible_operator.runner.warm.modules import same_python


def venv(root: Path) -> Path:
    """A virtualenv's bin/ as venv makes it: python a link to the base interpreter."""
    (root / "bin").mkdir(parents=True)
    (root / "bin/python").symlink_to(sys.executable)
    (root / "bin/python3").symlink_to("python")
    return root / "bin"


def test_a_venv_reached_through_a_link_is_the_same_python(tmp_path: Path) -> None:
    real = venv(tmp_path / ".venv-py3.12")
    (tmp_path / ".venv").symlink_to(".venv-py3.12")
    assert same_python(str(tmp_path / ".venv/bin/python"), str(real / "python"))
    assert same_python(str(real / "python3"), str(tmp_path / ".venv/bin/python"))


def test_another_venv_on_the_same_base_is_not(tmp_path: Path) -> None:
    one, other = venv(tmp_path / "one"), venv(tmp_path / "other")
    assert not same_python(str(one / "python"), str(other / "python"))
    assert not same_python("python", str(one / "python"))  # not a path: not known
