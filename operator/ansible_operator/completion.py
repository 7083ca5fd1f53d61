"""``ansible-operator completion bash|zsh``: a shell completion script for the command tree.

The script is static: every sub-command path and its flags are written into it when it is
generated, so a TAB costs the shell a ``case``, not a Python start. zsh runs the same script
through its ``bashcompinit``. Imports nothing of the package; the caller hands it the tree.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass, field

SHELLS = ("bash", "zsh")


@dataclass
class Node:
    """One command: its sub-commands and its flags."""

    commands: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)


def tree(
    parser: argparse.ArgumentParser, extra_flags: dict[tuple[str, ...], list[str]] | None = None
) -> dict[tuple[str, ...], Node]:
    """Every command path under `parser` (the root is ``()``) with its sub-commands and flags;
    `extra_flags` adds the flags of commands that parse their own arguments (``run``)."""
    found: dict[tuple[str, ...], Node] = {}

    def walk(sub: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        node = found.setdefault(path, Node())
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    node.commands.append(name)
                    walk(child, (*path, name))
            else:
                node.flags += [o for o in action.option_strings if o.startswith("--")]

    walk(parser, ())
    for path, flags in (extra_flags or {}).items():
        found.setdefault(path, Node()).flags = list(flags)
    return found


def bash(prog: str, commands: dict[tuple[str, ...], Node]) -> str:
    """The bash script: the words typed so far that name sub-commands make the path, and the
    path's sub-commands or (after a `-`) its flags are offered; anything else is a file."""
    func = "_" + prog.replace("-", "_")
    paths = [p for p in commands if p]
    known = "|".join(shlex.quote(" ".join(p)) for p in paths)
    cases = []
    for path, node in commands.items():
        words = shlex.quote(" ".join(node.commands))
        flags = shlex.quote(" ".join(node.flags))
        cases.append(f"        {shlex.quote(' '.join(path))}) words={words}; flags={flags} ;;")
    return "\n".join(
        [
            f"# {prog} completion for bash: source <({prog} completion bash)",
            f"{func}() {{",
            '    local cur="${COMP_WORDS[COMP_CWORD]}" path="" word words="" flags=""',
            '    for word in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do',
            '        case "${path:+$path }$word" in',
            f'            {known}) path="${{path:+$path }}$word" ;;',
            "        esac",
            "    done",
            '    case "$path" in',
            *cases,
            "    esac",
            '    if [[ "$cur" == -* ]]; then words="$flags"; fi',
            '    COMPREPLY=($(compgen -W "$words" -- "$cur"))',
            "}",
            f"complete -o default -F {func} {prog}",
            "",
        ]
    )


def zsh(prog: str, commands: dict[tuple[str, ...], Node]) -> str:
    """The bash script, run by zsh's bash completion emulation."""
    return (
        f"# {prog} completion for zsh: source <({prog} completion zsh)\n"
        "autoload -U +X bashcompinit && bashcompinit\n" + bash(prog, commands)
    )


def script(shell: str, prog: str, commands: dict[tuple[str, ...], Node]) -> str:
    return zsh(prog, commands) if shell == "zsh" else bash(prog, commands)
