"""pflag's reading of a command line: values as given, booleans without one, `--`, errors."""

from __future__ import annotations

import pytest

from ansible_operator.gocompat.pflag import FlagError, Tokens, tokenise

FLAGS = {"name": False, "on": True, "watches-file": False}


@pytest.mark.parametrize(
    ("argv", "tokens"),
    [
        ([], Tokens((), (), False)),
        (["--name=x"], Tokens((("name", "x"),), (), False)),
        (["--name", "x"], Tokens((("name", "x"),), (), False)),
        # The next argument is the value, even when it looks like a flag.
        (["--name", "--on"], Tokens((("name", "--on"),), (), False)),
        (["--name="], Tokens((("name", ""),), (), False)),
        (["--on"], Tokens((("on", "true"),), (), False)),
        # A boolean never takes the next argument: it is a positional.
        (["--on", "false"], Tokens((("on", "true"),), ("false",), False)),
        (["--on=false"], Tokens((("on", "false"),), (), False)),
        (["--name=1", "--name=2"], Tokens((("name", "1"), ("name", "2")), (), False)),
        (["a", "--on", "b"], Tokens((("on", "true"),), ("a", "b"), False)),
        (["--on", "--", "--name", "x"], Tokens((("on", "true"),), ("--name", "x"), False)),
        (["-"], Tokens((), ("-",), False)),
        (["-h"], Tokens((), (), True)),
        (["--name=x", "--help"], Tokens((("name", "x"),), (), True)),
    ],
)
def test_tokenise(argv: list[str], tokens: Tokens) -> None:
    assert tokenise(argv, FLAGS) == tokens


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nope"], "unknown flag: --nope"),
        (["--watches"], "unknown flag: --watches (did you mean --watches-file?)"),
        (["-v"], "unknown shorthand flag: 'v' in -v"),
        (["---x"], "bad flag syntax: ---x"),
        (["--=x"], "bad flag syntax: --=x"),
        (["--name"], "flag needs an argument: --name"),
    ],
)
def test_errors(argv: list[str], message: str) -> None:
    with pytest.raises(FlagError) as excinfo:
        tokenise(argv, FLAGS)
    assert str(excinfo.value) == message
