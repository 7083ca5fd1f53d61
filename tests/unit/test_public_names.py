"""The import rule `make lint` adds to the layers: another layer's names come from its package
(`__all__`), never from its modules (tests/public_names.py)."""

from __future__ import annotations

import runpy
import textwrap
from pathlib import Path

import pytest

CHECK = runpy.run_path(str(Path(__file__).parent.parent / "public_names.py"))
violations = CHECK["violations"]
main = CHECK["main"]


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A package `pkg` with a `core` layer exporting GVK, a `runtime` layer and a top module."""
    root = tmp_path / "pkg"
    files = {
        "__init__.py": "",
        "core/__init__.py": (
            "from pkg.core import conditions\nfrom pkg.core.watches import GVK\n"
            '__all__ = ["GVK", "conditions"]\n'
        ),
        "core/watches.py": "class GVK: ...\nclass Hidden: ...\n",
        "core/conditions.py": "RUNNING = 'Running'\n",
        "core/other.py": "from pkg.core.watches import Hidden\n",  # inside its own package
        "runtime/__init__.py": "",
        "watchfile.py": "PUBLIC = 1\n_PRIVATE = 2\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _check(package: Path, code: str) -> list[str]:
    (package / "runtime" / "user.py").write_text(textwrap.dedent(code))
    return [line.split(": ", 1)[1] for line in violations(package)]


@pytest.mark.parametrize(
    "code",
    [
        "from pkg.core import GVK\n",
        "from pkg.core import conditions\n",  # a namespace the package lists
        "import pkg.core\n",
        "from pkg.watchfile import PUBLIC\n",
        "from pkg import core\n",
        "from pkg.runtime import user\n",  # its own layer
    ],
)
def test_public_names_pass(package: Path, code: str) -> None:
    assert _check(package, code) == []


@pytest.mark.parametrize(
    ("code", "problem"),
    [
        (
            "from pkg.core.watches import GVK\n",
            "pkg.core.watches is private to pkg.core: import from pkg.core",
        ),
        (
            "def later():\n    import pkg.core.watches\n",
            "pkg.core.watches is private to pkg.core: import from pkg.core",
        ),
        ("from pkg.core import Hidden\n", "pkg.core.__all__ does not list Hidden"),
        ("from pkg.core import watches\n", "pkg.core.__all__ does not list watches"),
        ("from pkg.watchfile import _PRIVATE\n", "pkg.watchfile._PRIVATE is private"),
    ],
)
def test_reaching_into_another_layer_fails(package: Path, code: str, problem: str) -> None:
    assert _check(package, code) == [problem]


def test_main_prints_each_violation_with_its_place_and_exits_1(
    package: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _check(package, "import os\n\nfrom pkg.core.watches import GVK\n")
    assert main([str(package)]) == 1
    assert capsys.readouterr().out == (
        f"{package}/runtime/user.py:3: pkg.core.watches is private to pkg.core: "
        "import from pkg.core\n"
    )
    _check(package, "from pkg.core import GVK\n")
    assert main([str(package)]) == 0
