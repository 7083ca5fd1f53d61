"""`--help` of every command shows examples, and the default of every option that has one."""

from __future__ import annotations

import argparse

import pytest

from ansible_operator import cli


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from _leaves(sub, (*path, name))


COMMANDS = dict(_leaves(cli.build_parser()))


def _help(capsys, argv: list[str]) -> str:
    try:
        code = cli.main([*argv, "--help"])
    except SystemExit as exit_:  # `run` parses its own flags: argparse exits after the help
        code = exit_.code or 0
    assert code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("path", sorted(set(COMMANDS) - {("run",)}), ids=" ".join)
def test_help_has_examples_and_defaults(path, capsys):
    out = _help(capsys, list(path))
    examples = out.split("\nexamples:\n", 1)
    assert len(examples) == 2, f"no examples in {' '.join(path)} --help"
    assert examples[1].strip().startswith("ansible-operator") or "ansible-operator" in examples[1]
    for action in COMMANDS[path]._actions:
        if action.option_strings and action.default not in (None, False, [], argparse.SUPPRESS):
            options = " ".join(examples[0].split("\noptions:\n", 1)[1].split())  # unwrapped
            option = action.option_strings[-1]
            shown = options.split(f"{option} ", 1)[1].split(" --", 1)[0]
            assert "default" in shown, f"{' '.join(path)} {option}: no default in its help"


def test_run_help_has_examples_and_defaults(capsys):
    out = _help(capsys, ["run"])
    assert "\nexamples:\n  ansible-operator run" in out
    assert "(default ./watches.yaml)" in " ".join(out.split())
