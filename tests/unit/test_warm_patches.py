"""The warm runner's patches table (runner/warm/patches): an untested release turns a patch off,
a load-bearing one off makes the warm runner run cold, and the operator says so in one line and
a metric; the fork server refuses to serve once it has imported what reads Ansible's settings."""

from __future__ import annotations

import importlib
import logging
import os
import pkgutil

import pytest
from prometheus_client import generate_latest

from ansible_operator.core.watches import GVK, Watch
from ansible_operator.kube.config import Credentials
from ansible_operator.runner.versions import AnsibleVersions
from ansible_operator.runner.warm import patches, server
from ansible_operator.runner.warm.client import WarmRunner
from ansible_operator.runtime.config.flags import build_run_settings
from ansible_operator.runtime.manager.operator import Inputs, Operator
from tests.unit.fake_api import FakeApi

TESTED = {
    patches.CORE: "2.18.19",
    patches.RUNNER: "2.4.3",
    patches.PEXPECT: "4.9.0",
    patches.JINJA: "3.1.6",
    patches.KUBERNETES: "37.0.2",
    patches.PYTHON: "3.12.1",
}


def test_every_patch_module_is_in_the_table_and_every_entry_has_its_module() -> None:
    modules = {info.name for info in pkgutil.iter_modules(patches.__path__)}
    assert modules == {patch.module for patch in patches.PATCHES}
    for patch in patches.PATCHES:
        assert importlib.import_module(f"{patches.__name__}.{patch.module}").__doc__
        assert patch.touches and patch.why and patch.tested
        assert set(patch.tested) <= {*patches.COMPONENTS, patches.PYTHON}


def test_on_the_releases_everything_was_tested_on_nothing_is_off() -> None:
    assert patches.check(TESTED) == {}


def test_an_unknown_ansible_core_turns_off_what_touches_it_and_runs_stay_warm() -> None:
    off = patches.check({**TESTED, patches.CORE: "2.99.0"})
    assert list(off) == [p.name for p in patches.PATCHES if patches.CORE in p.tested]
    assert off["result-wait"] == "ansible-core 2.99.0, tested on 2.18, 2.19, 2.20, 2.21"
    assert not patches.falls_back(off)


def test_a_patch_tested_on_some_cores_only_is_off_on_the_others() -> None:
    off = patches.check({**TESTED, patches.CORE: "2.20.10"})
    assert set(off) == {"template-cache"}
    assert off["template-cache"] == "ansible-core 2.20.10, tested on 2.18"


@pytest.mark.parametrize(
    ("component", "version", "patch"),
    [
        (patches.RUNNER, "2.5.0", "runner-defaults"),
        (patches.KUBERNETES, "36.1.0", "kubeconfig-default"),
        (patches.PYTHON, "3.99.0", "fork-exit"),
    ],
)
def test_an_unknown_release_under_a_load_bearing_patch_makes_the_warm_runner_cold(
    component: str, version: str, patch: str
) -> None:
    runner = WarmRunner(installed={**TESTED, component: version})
    assert patch in runner.patches_off
    assert runner.cold
    runner.start()
    assert runner.server.process is None  # no fork server: runs are cold


def test_a_project_not_installed_counts_as_untested() -> None:
    found = {k: v for k, v in TESTED.items() if k != patches.PEXPECT}
    assert patches.check(found) == {"playbook-in-process": "pexpect (not installed), tested on 4.9"}


def test_the_fork_server_refuses_once_it_imported_what_reads_ansible_settings() -> None:
    server.self_check(["yaml", "ansible.module_utils.basic"])
    with pytest.raises(SystemExit, match=r"imported ansible\.constants, ansible\.plugins\.loader"):
        server.self_check(["ansible.constants", "ansible.plugins.loader"])


def test_the_operator_says_which_patches_are_off_in_one_line_and_a_metric(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = build_run_settings(
        ["--metrics-bind-address=0", "--health-probe-bind-address=0"],
        {"PATH": os.environ.get("PATH", "")},
    )
    runner = WarmRunner(installed={**TESTED, patches.RUNNER: "2.5.0"})
    watch = Watch(gvk=GVK("test.example.com", "v1", "Thing"), role="/roles/thing")
    ansible = AnsibleVersions(core="2.18.19", runner="2.5.0", playbook="/x")
    with caplog.at_level(logging.WARNING):
        operator = Operator(
            Inputs(settings, [watch], Credentials(server="https://127.0.0.1:1", insecure=True)),
            client=FakeApi(),  # type: ignore[arg-type]
            runner=runner,
            ansible=ansible,
        )
    [line] = [r.getMessage() for r in caplog.records if "patches off" in r.getMessage()]
    assert "runner-defaults (ansible-runner 2.5.0, tested on 2.4)" in line
    assert "runs cold" in line
    metrics = generate_latest(operator.metrics.registry).decode()
    assert 'ansible_operator_warm_patch_off{patch="runner-defaults"} 1.0' in metrics
    assert 'ansible_operator_warm_patch_off{patch="*"} 1.0' in metrics
