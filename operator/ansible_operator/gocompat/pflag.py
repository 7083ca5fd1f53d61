"""spf13/pflag's reading of a command line, with its error messages, before any value is parsed.

pflag decides what is a flag and what is its value from the flag set alone: `--name=value`,
`--name value` (the next argument, even when it starts with `-`), a bare `--name` for a boolean,
`--` ends the flags, and a single dash is a shorthand (none of which upstream's `run` defines).
`tokenise` does that and nothing else: values stay text, as given.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


class FlagError(ValueError):
    """pflag's one-line message for a command line it cannot read."""


@dataclass(frozen=True)
class Tokens:
    """A command line as pflag reads it."""

    values: tuple[tuple[str, str], ...]  # (flag name, value as text), in the order given
    positionals: tuple[str, ...]
    help: bool  # -h or --help was given


def tokenise(argv: Sequence[str], flags: Mapping[str, bool]) -> Tokens:
    """Read `argv` against `flags` (name without dashes → whether it is a boolean)."""
    values: list[tuple[str, str]] = []
    positionals: list[str] = []
    wants_help = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            positionals.extend(argv[i:])
            break
        if arg in ("-h", "--help"):
            wants_help = True
            continue
        if arg.startswith("--"):
            name, has_value, value = arg[2:].partition("=")
            if not name or name.startswith(("-", "=")):
                raise FlagError(f"bad flag syntax: {arg}")
            if name not in flags:
                match = difflib.get_close_matches(name, list(flags), n=1, cutoff=0.6)
                hint = f" (did you mean --{match[0]}?)" if match else ""
                raise FlagError(f"unknown flag: --{name}{hint}")
            if not has_value:
                if flags[name]:
                    value = "true"
                elif i < len(argv):
                    value = argv[i]
                    i += 1
                else:
                    raise FlagError(f"flag needs an argument: --{name}")
            values.append((name, value))
        elif arg.startswith("-") and len(arg) > 1:
            raise FlagError(f"unknown shorthand flag: {arg[1]!r} in {arg}")
        else:
            positionals.append(arg)
    return Tokens(tuple(values), tuple(positionals), wants_help)
