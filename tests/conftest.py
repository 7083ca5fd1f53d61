"""Which tests run on which ansible-core, and the guard that keeps the choice honest.

A test whose outcome depends on the ansible-core in use is marked ``ansible_core``: CI runs it on
every supported core (``make unit-ansible-core-C``, ``make e2e-ansible-core-C`` select ``-m
ansible_core``), every other test once, on the default core. In the in-process layers
(``tests/unit``, ``tests/runner``) an unmarked test may not reach Ansible: while it runs (setup,
call and teardown, forked children included) Ansible's packages are out of ``sys.modules`` and
importing one fails, and starting an Ansible command or the warm runner's fork server fails; at
collection, a test module holding something of Ansible's at its top level must mark its tests.
So a test that needs Ansible cannot be left out of the per-core runs by a forgotten marker.

``tests/runner`` runs Ansible by definition, so each of its tests says which it is: ``ansible_core``
when what it checks is the core's (its events, templating, decoders, module loading, the warm
runner's patches of it), or ``any_core(reason)`` when what it checks is the operator's own and
Ansible is only the workload (process trees, locks, rotation, the fork server's supervision): it
runs once, on the default core, and the reason says why the core cannot change its outcome. A
runner test with neither, or both, or no reason, fails at setup saying so.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import itertools
import os
import sys
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

MARKER = "ansible_core"
# A runner test whose outcome is the operator's own: once, on the default core.
ANY_CORE = "any_core"
RUNNER_LAYER = Path(__file__).parent / "runner"  # real ansible-runner runs: each test says which
# The layers whose tests run in this process; e2e and image tests run Ansible in the operators
# they start, and choose their per-core subset by the marker alone.
GUARDED_LAYERS = [Path(__file__).parent / "unit", RUNNER_LAYER]
ANSIBLE_PACKAGES = frozenset({"ansible", "ansible_runner", "ansible_collections"})
# What an unmarked test may not start: Ansible's commands, and Python modules that run Ansible
# (molecule is not here: `dev molecule`'s tests start a fake of it).
ANSIBLE_COMMANDS = frozenset(
    {
        "ansible",
        "ansible-playbook",
        "ansible-runner",
        "ansible-galaxy",
        "ansible-doc",
        "ansible-config",
        "ansible-inventory",
    }
)
ANSIBLE_PYTHON_MODULES = frozenset({"ansible_runner", "ansible_operator.runner.warm.server"})


class _Guard(importlib.abc.MetaPathFinder):
    """Refuses Ansible to the unmarked test under way, and remembers each refusal."""

    def __init__(self) -> None:
        self.test: str | None = None  # the unmarked test under way, when one is
        self.refused: list[str] = []

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        if self.test is not None and fullname.partition(".")[0] in ANSIBLE_PACKAGES:
            self._refuse(f"imports {fullname}")
        return None

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if self.test is None:
            return
        # subprocess.Popen: (executable, args, cwd, env); os.exec, os.posix_spawn: (path, args, env)
        if event in ("subprocess.Popen", "os.exec", "os.posix_spawn") and _runs_ansible(args[1]):
            self._refuse(f"starts {' '.join(_as_list(args[1]))}")

    def _refuse(self, what: str) -> None:
        message = (
            f"{self.test} {what}, so depends on the ansible-core in use: "
            f"mark it @pytest.mark.{MARKER} (tests/conftest.py)"
        )
        self.refused.append(message)
        raise ImportError(message)

    @contextlib.contextmanager
    def unmarked(self, test: str) -> Iterator[None]:
        hidden = {
            name: sys.modules.pop(name)
            for name in list(sys.modules)
            if name.partition(".")[0] in ANSIBLE_PACKAGES
        }
        self.test, self.refused = test, []
        try:
            yield
        finally:
            self.test = None
            sys.modules.update(hidden)
        if self.refused:
            raise pytest.fail.Exception(self.refused[0], pytrace=False)


def _as_list(argv: Any) -> list[str]:
    if isinstance(argv, str | bytes | os.PathLike):
        return [os.fsdecode(argv)]
    return [os.fsdecode(arg) if isinstance(arg, bytes | os.PathLike) else str(arg) for arg in argv]


def _runs_ansible(argv: Sequence[Any] | str) -> bool:
    words = _as_list(argv)
    if not words:
        return False
    if Path(words[0]).name in ANSIBLE_COMMANDS:
        return True
    return any(
        word == "-m" and module in ANSIBLE_PYTHON_MODULES
        for word, module in itertools.pairwise(words)
    )


_guard = _Guard()
# Why a test cannot run as marked: its module holds Ansible, or a runner test chose no cores.
_HELD = pytest.StashKey[str]()
sys.meta_path.insert(0, _guard)
sys.addaudithook(_guard.audit)


def _guarded(item: pytest.Item) -> bool:
    if item.get_closest_marker(MARKER) or item.get_closest_marker(ANY_CORE):
        return False  # (an any_core outside tests/runner fails at setup: _runner_choice_missing)
    return any(item.path.is_relative_to(layer) for layer in GUARDED_LAYERS)


def _holds_ansible(module: types.ModuleType) -> str | None:
    """The first global of a test module that comes from Ansible's packages, if any."""
    for name, value in vars(module).items():
        origin = value.__name__ if isinstance(value, types.ModuleType) else None
        origin = origin or getattr(value, "__module__", None)
        if isinstance(origin, str) and origin.partition(".")[0] in ANSIBLE_PACKAGES:
            return name
    return None


@pytest.hookimpl(tryfirst=True)  # the marks, before -m selects by them
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        unsure = _runner_choice_missing(item)
        if unsure is not None:
            item.stash[_HELD] = unsure
            continue
        module = getattr(item, "module", None)
        if module is None or not _guarded(item):
            continue
        held = _holds_ansible(module)
        if held is not None:
            item.stash[_HELD] = (
                f"{item.nodeid}: its module holds {held} from Ansible at the top level, so it "
                f"depends on the ansible-core in use: mark it @pytest.mark.{MARKER}"
            )


def _runner_choice_missing(item: pytest.Item) -> str | None:
    """Why a test's choice of cores is missing or wrong, if it is."""
    core, any_core = item.get_closest_marker(MARKER), item.get_closest_marker(ANY_CORE)
    if any_core is not None and not item.path.is_relative_to(RUNNER_LAYER):
        return f"{item.nodeid}: {ANY_CORE} is for tests/runner, whose tests run Ansible"
    if not item.path.is_relative_to(RUNNER_LAYER):
        return None
    if (core is None) == (any_core is None):
        return (
            f"{item.nodeid}: a runner test is marked either @pytest.mark.{MARKER} (its outcome "
            f"is the core's) or @pytest.mark.{ANY_CORE}(reason) (the operator's own), "
            "not both, not neither (tests/conftest.py)"
        )
    if any_core is not None and not (any_core.args or any_core.kwargs.get("reason")):
        return f"{item.nodeid}: @pytest.mark.{ANY_CORE} needs the reason the core cannot matter"
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    if _HELD in item.stash:  # once, at setup: the test cannot run as it is marked
        pytest.fail(item.stash[_HELD], pytrace=False)
    return (yield from _in_guard(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _in_guard(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    return (yield from _in_guard(item))


def _in_guard(item: pytest.Item) -> Iterator[None]:
    if not _guarded(item):
        return (yield)
    with _guard.unmarked(item.nodeid):
        return (yield)
