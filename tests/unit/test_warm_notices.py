"""What the warm runner's processes do the slower way reaches the operator (runner/warm/notices):
each way is told as a notice, read back after a run, logged once per reason and counted."""

from __future__ import annotations

import logging
import sys

import pytest
from prometheus_client import generate_latest

from ansible_operator.runner.warm import notices, server, zygote
from ansible_operator.runner.warm.client import WarmRunner
from ansible_operator.runner.warm.patches import parsed_yaml

from .test_runnables import operator as probed_operator


@pytest.fixture
def told(tmp_path, monkeypatch) -> notices.Reader:
    """Notices go to a file of the test's, as in a fork server; read back with the operator's
    reader."""
    monkeypatch.setattr(notices, "path", str(tmp_path / "notices.jsonl"))
    return notices.Reader(notices.path)


def test_notices_are_read_once_each_and_a_line_being_written_waits(told) -> None:
    notices.tell("zygote-misfit", "one")
    notices.tell("patch-failed", "two", patch="parsed-yaml")
    assert told.read() == [
        notices.Notice("zygote-misfit", "one"),
        notices.Notice("patch-failed", "two", "parsed-yaml"),
    ]
    assert told.read() == []
    with open(told.file, "ab") as file:
        file.write(b'{"reason": "zygote-error", "detail": "half')
    assert told.read() == []
    with open(told.file, "ab") as file:
        file.write(b'"}\n{"reason": "made up", "detail": "x"}\nnot json\n')
    assert told.read() == [notices.Notice("zygote-error", "half")]


def test_a_reason_not_in_the_table_is_a_bug() -> None:
    with pytest.raises(KeyError):
        notices.tell("went-cold-somehow", "x")


def test_outside_a_fork_server_a_notice_is_a_line_on_stderr(monkeypatch, capsys) -> None:
    monkeypatch.setattr(notices, "path", None)
    notices.tell("preload-failed", "yaml: ImportError()")
    assert capsys.readouterr().err == "[warm runner] preload-failed: yaml: ImportError()\n"


def test_a_module_whose_import_breaks_is_told_and_an_absent_one_is_not(
    told, tmp_path, monkeypatch
) -> None:
    (tmp_path / "preload_raises.py").write_text("raise RuntimeError('broken on import')\n")
    (tmp_path / "preload_lacks.py").write_text("import preload_dependency_absent\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    names = ("preload_absent", "preload_raises", "preload_lacks", "json")
    monkeypatch.setattr(server, "PRELOAD", names)
    monkeypatch.setattr(server, "self_check", lambda: None)
    monkeypatch.setattr(server.patches, "install", lambda *names: None)
    monkeypatch.setattr(server.patches, "off", frozenset({"module-exec"}))  # not in this process
    server.preload()
    assert [(n.reason, n.detail.split(":")[0]) for n in told.read()] == [
        ("preload-failed", "preload_raises"),
        ("preload-failed", "preload_lacks"),
    ]
    for name in names[1:3]:
        sys.modules.pop(name, None)


def test_a_parsed_yaml_hook_that_fails_is_told_with_its_patch(told, monkeypatch) -> None:
    def moved() -> None:
        raise AttributeError("this ansible-core moved _meta_yml_to_dict")

    monkeypatch.setattr(parsed_yaml, "_install_config_definitions", lambda: None)
    monkeypatch.setattr(parsed_yaml, "_install_routing", moved)
    parsed_yaml.install()
    [notice] = told.read()
    assert notice.reason == "patch-failed" and notice.patch == "parsed-yaml"
    assert "moved _meta_yml_to_dict" in notice.detail


def test_a_zygote_check_that_fails_is_told_and_taken_as_not_fitting(told, monkeypatch) -> None:
    def broken() -> str | None:
        raise AttributeError("an ansible-core that moved what adopt() redoes")

    monkeypatch.setattr(zygote, "adopt", broken)
    assert zygote.fits() is False
    [notice] = told.read()
    assert notice.reason == "zygote-error" and "moved what adopt() redoes" in notice.detail
    monkeypatch.setattr(zygote, "adopt", lambda: "the ansible.cfg found differs")
    assert zygote.fits() is False
    assert told.read() == [notices.Notice("zygote-misfit", "the ansible.cfg found differs")]
    monkeypatch.setattr(zygote, "adopt", lambda: None)
    assert zygote.fits() is True
    assert told.read() == []


def test_the_operator_says_each_reason_once_and_counts_every_notice(
    caplog: pytest.LogCaptureFixture,
) -> None:
    operator = probed_operator(probed=True)  # its own WarmRunner, wired by the manager
    runner = operator.runner
    assert isinstance(runner, WarmRunner)
    with caplog.at_level(logging.WARNING):
        runner.on_notice(notices.Notice("zygote-misfit", "the ansible.cfg found differs"))
        runner.on_notice(notices.Notice("zygote-misfit", "/x/ansible.cfg changed"))
        runner.on_notice(notices.Notice("patch-failed", "parsed-yaml: moved", "parsed-yaml"))
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Warm runner:")]
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"Warm runner: {notices.REASONS['zygote-misfit']}")
    assert "(the ansible.cfg found differs)" in lines[0]
    metrics = generate_latest(operator.metrics.registry).decode()
    assert 'ansible_operator_warm_fallbacks_total{reason="zygote-misfit"} 2.0' in metrics
    assert 'ansible_operator_warm_fallbacks_total{reason="patch-failed"} 1.0' in metrics
    assert 'ansible_operator_warm_patch_off{patch="parsed-yaml"} 1.0' in metrics
