"""Everything the warm runner changes in, or relies on of, other projects' private parts: one table.

Each `Patch` names what it touches, why, and the releases of each project it was tested on (a
release such as "2.18" stands for every 2.18.x). `check` compares the table with what is
installed: a patch tested on another release of any project it touches stays off, and a
load-bearing one off makes the warm runner run cold (client.py). The operator logs which and why
in one line and counts them in a metric (runtime/manager/operator.py). Turning a patch on for a new
release is adding that release here once the runner tests pass on it (`make test-runner` per
core); the tests read this table for what to expect.

The fork server gets the names that are off on its command line (`off`), so every process it
forks asks `on(name)`; `install(*names)` installs the patches that are on.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import platform
import sys
from collections.abc import Mapping
from dataclasses import dataclass

CORE = "ansible-core"
RUNNER = "ansible-runner"
PEXPECT = "pexpect"
JINJA = "jinja2"
KUBERNETES = "kubernetes"
PYTHON = "python"  # CPython's release; another implementation is never a tested one
COMPONENTS = (CORE, RUNNER, PEXPECT, JINJA, KUBERNETES)


@dataclass(frozen=True)
class Patch:
    name: str
    module: str  # under this package
    touches: tuple[str, ...]
    why: str
    tested: Mapping[str, tuple[str, ...]]  # project -> releases the runner tests passed on
    load_bearing: bool = False  # off: warm runs are not safe, the warm runner runs cold


PATCHES = (
    Patch(
        name="fork-exit",
        module="fork_exit",
        touches=("atexit._clear", "atexit._run_exitfuncs"),
        why="a forked run, zygote or module drops its parent's exit hooks and runs its own, "
        "as a new interpreter would",
        tested={PYTHON: ("3.12", "3.13")},
        load_bearing=True,
    ),
    Patch(
        name="runner-defaults",
        module="run_environment",
        touches=("ansible_runner.__main__.DEFAULT_* (read from the environment when imported)",),
        why="ansible-runner, imported once in the fork server, takes each run's environment",
        tested={RUNNER: ("2.4",)},
        load_bearing=True,
    ),
    Patch(
        name="kubeconfig-default",
        module="run_environment",
        touches=("kubernetes.config(.kube_config).KUBE_CONFIG_DEFAULT_LOCATION",),
        why="the Kubernetes client, imported once in the fork server, reads each run's (and "
        "task's) KUBECONFIG, as a new interpreter would",
        tested={KUBERNETES: ("37",)},
        load_bearing=True,
    ),
    Patch(
        name="playbook-in-process",
        module="playbook_in_process",
        touches=(
            "pexpect.spawn._spawn (its preexec_fn runs ansible-playbook's CLI)",
            "ptyprocess.PtyProcess.delayafterclose",
            "ansible.cli.playbook.main",
        ),
        why="a run's ansible-playbook is a fork of its ansible-runner, not a new interpreter",
        tested={PEXPECT: ("4.9",), CORE: ("2.18", "2.19", "2.20", "2.21")},
    ),
    Patch(
        name="zygote",
        module="zygote_state",
        touches=(
            "ansible.constants.config._config_file",
            "ansible.config.manager.find_ini_config_file",
            "ansible.constants.set_constant, ConfigManager.get_configuration_definitions",
            "ansible.utils.display.Display._set_column_width, _synchronize_textiowrapper",
            "ansible.utils.color, ansible.utils.vars (module state, reloaded)",
        ),
        why="a run's ansible-playbook starts from a controller imported once per kind of run",
        tested={CORE: ("2.18", "2.19", "2.20", "2.21")},
    ),
    Patch(
        name="parsed-yaml",
        module="parsed_yaml",
        touches=(
            "ansible.config.manager.ConfigManager._read_config_yaml_file",
            "ansible.utils.collection_loader._collection_finder._meta_yml_to_dict",
        ),
        why="Ansible's config definitions and routing metadata are parsed once, in the server",
        tested={CORE: ("2.18", "2.19", "2.20", "2.21")},
    ),
    Patch(
        name="module-exec",
        module="module_exec",
        touches=(
            "ansible.plugins.connection.local.Connection.exec_command",
            "the pipelined module command line (`&& sleep 0` appended up to 2.20 only); "
            "AnsiballZ opening its zip with "
            "zipfile.ZipFile(mode='a') and putting it first on sys.path",
            "ansible.module_utils._internal's controller hooks (2.19+)",
        ),
        why="a module task on localhost runs in a fork of its worker, not a new interpreter",
        tested={CORE: ("2.18", "2.19", "2.20", "2.21")},
    ),
    Patch(
        name="result-wait",
        module="result_wait",
        touches=(
            "ansible.plugins.strategy.StrategyBase.__init__ (its _results deque)",
            "StrategyBase._wait_on_pending_results",
            "ansible.plugins.strategy.time",
        ),
        why="the strategy takes task results as they arrive instead of polling every 1 ms",
        tested={CORE: ("2.18", "2.19", "2.20", "2.21")},
    ),
    Patch(
        name="code-cache",
        module="code_cache",
        touches=("ansible.utils.collection_loader._collection_finder.compile",),
        why="collection code is compiled once for all runs",
        tested={CORE: ("2.18", "2.19", "2.20", "2.21")},
    ),
    Patch(
        name="module-packages",
        module="module_packages",
        touches=(
            "ansible.executor.module_common._find_module_utils, _slurp, pkgutil, "
            "ir_files (2.21), _MODULE_UTILS_PATH",
            "its per-process cache: C.DEFAULT_LOCAL_TMP/ansiballz_cache, one file per packaging",
            "ansible.plugins.loader.module_utils_loader._get_paths",
        ),
        why="packaged modules (AnsiballZ) are kept across runs",
        tested={CORE: ("2.18", "2.19", "2.20", "2.21")},
    ),
    Patch(
        name="plugin-docs",
        module="plugin_docs",
        touches=(
            "ansible.plugins.loader.AnsibleLoader, ansible.utils.plugin_docs.AnsibleLoader",
            "ansible.module_utils._internal._datatag.AnsibleTagHelper.tags (2.19+)",
        ),
        why="plugin documentation is parsed once for all runs",
        tested={CORE: ("2.18", "2.19", "2.20", "2.21")},
    ),
    Patch(
        name="template-cache",
        module="template_cache",
        touches=(
            "ansible.template.AnsibleEnvironment.compile",
            "jinja2.utils._PassArg, Environment.overlay",
        ),
        why="templates are compiled once for all runs",
        tested={CORE: ("2.18",), JINJA: ("3.1",)},
    ),
)
BY_NAME = {patch.name: patch for patch in PATCHES}

off: frozenset[str] = frozenset()
"""The patches off in this process: set by the fork server from its command line."""


def on(name: str) -> bool:
    if name not in BY_NAME:
        raise KeyError(f"no patch named {name!r}")
    return name not in off


def install(*names: str) -> None:
    """Install the named patches that are on (each module's `install()`), in this order."""
    for name in names:
        if on(name):
            importlib.import_module(f"{__name__}.{BY_NAME[name].module}").install()


def installed() -> dict[str, str]:
    """The release of each project the patches touch, as this Python has them."""
    found = {}
    for component in COMPONENTS:
        try:
            found[component] = importlib.metadata.version(component)
        except importlib.metadata.PackageNotFoundError:
            continue
    if sys.implementation.name == "cpython":
        found[PYTHON] = platform.python_version()
    return found


def untested(patch: Patch, found: Mapping[str, str]) -> str | None:
    """Why `patch` must stay off with the `found` versions, or None if it was tested on them."""
    for component, releases in patch.tested.items():
        version = found.get(component)
        if version is None or not any(_is_release(version, release) for release in releases):
            return f"{component} {version or '(not installed)'}, tested on {', '.join(releases)}"
    return None


def check(found: Mapping[str, str]) -> dict[str, str]:
    """The patches that stay off with the `found` versions, and why, in table order."""
    reasons = {patch.name: untested(patch, found) for patch in PATCHES}
    return {name: why for name, why in reasons.items() if why is not None}


def tested_here(name: str) -> bool:
    """Whether the patch was tested on this Python's releases (for tests, and dev tools)."""
    return untested(BY_NAME[name], installed()) is None


def falls_back(off_names: Mapping[str, str] | frozenset[str]) -> bool:
    """Whether the warm runner must run cold with these patches off."""
    return any(BY_NAME[name].load_bearing for name in off_names)


def _is_release(version: str, release: str) -> bool:
    return version.split(".")[: release.count(".") + 1] == release.split(".")
