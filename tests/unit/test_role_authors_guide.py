"""The role author's guide stays true: its blocks parse, its commands exist, its examples are
the example roles' own text, and its tables say what the operator's code does.

Ansible's syntax check of the guide's task examples is in tests/runner/test_guide_tasks.py.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import shlex
import textwrap

import pytest
import yaml

from ansible_operator import cli
from ansible_operator.core.extravars import build_extra_vars, extravars_document
from ansible_operator.core.watches import GVK, Watch
from ansible_operator.gocompat.strcase import to_snake
from ansible_operator.runtime.config.flags import build_run_settings
from tests.guide import GUIDE, REPO, Block, blocks, is_task_list

BLOCKS = blocks()
YAML = [b for b in BLOCKS if b.lang == "yaml"]
SHELL = [b for b in BLOCKS if b.lang in ("sh", "console")]
CLAIMED = [b for b in BLOCKS if b.claim is not None]

# Programs the guide may show; each has a check below, or is a plain shell/kubectl step.
MOLECULE_COMMANDS = {"test", "create", "converge", "idempotence", "verify", "destroy", "syntax"}
UNCHECKED_PROGRAMS = {"kubectl", "export"}


def ids(items: list[Block]) -> list[str]:
    return [b.where for b in items]


def test_the_guide_has_every_kind_of_block():
    assert len(YAML) >= 8 and SHELL and len(CLAIMED) >= 8


class AnsibleYaml(yaml.SafeLoader):
    """YAML as Ansible reads it, for the blocks that show `!unsafe` (a run's extra vars)."""


AnsibleYaml.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


@pytest.mark.parametrize("block", YAML, ids=ids(YAML))
def test_yaml_blocks_parse(block: Block):
    documents = list(yaml.load_all(block.text, Loader=AnsibleYaml))
    assert documents and all(d is not None for d in documents), block.where


# -- examples come from the example roles -------------------------------------------------------


def is_excerpt(block: str, source: str) -> bool:
    """Whether `block`'s lines appear, consecutively and at one indentation, in `source`."""
    wanted = textwrap.dedent(block).strip("\n").splitlines()
    lines = source.splitlines()
    for start in range(len(lines) - len(wanted) + 1):
        first = lines[start]
        indent = first[: len(first) - len(first.lstrip(" "))]
        if all(
            (lines[start + j].strip() == "" if not w.strip() else lines[start + j] == indent + w)
            for j, w in enumerate(wanted)
        ):
            return True
    return False


@pytest.mark.parametrize("block", CLAIMED, ids=ids(CLAIMED))
def test_examples_appear_in_the_file_they_name(block: Block):
    assert block.claim is not None
    source = REPO / block.claim
    assert source.is_file(), f"{block.where}: {block.claim} does not exist"
    assert is_excerpt(block.text, source.read_text(encoding="utf-8")), (
        f"{block.where}: not an excerpt of {block.claim}"
    )


def test_excerpts_are_checked_line_for_line():
    source = "a:\n  - name: x\n    b: 1\n"
    assert is_excerpt("- name: x\n  b: 1\n", source)
    assert not is_excerpt("- name: x\n  b: 2\n", source)
    assert not is_excerpt("- name: x\nb: 1\n", source)


@pytest.mark.parametrize("block", YAML, ids=ids(YAML))
def test_task_examples_are_taken_from_a_file(block: Block):
    """No invented tasks: every list of tasks in the guide names the file it comes from."""
    if is_task_list(yaml.load(block.text, Loader=AnsibleYaml)):
        assert block.claim is not None, f"{block.where}: a task example without 'from `path`'"


def test_example_roles_are_all_shown():
    claimed_roles = {b.claim.split("/")[1] for b in CLAIMED if b.claim.startswith("roles/")}
    assert claimed_roles >= {"at", "foo", "memfin", "nginx"}


# -- the tables and the variables say what the code does ---------------------------------------


def marked(marker: str) -> Block:
    found = [b for b in BLOCKS if b.marker == marker]
    assert len(found) == 1, f"one block marked {marker!r} expected, found {len(found)}"
    return found[0]


def test_the_extra_vars_example_is_what_the_operator_builds():
    cr = yaml.safe_load(marked("extravars-example: cr").text)
    shown = marked("extravars-example: vars").text
    watch = Watch(gvk=GVK.from_api_version(cr["apiVersion"], cr["kind"]))
    assert extravars_document(build_extra_vars(cr, watch, finalizing=False)) == shown


def snake_case_rows() -> list[tuple[str, str]]:
    text = GUIDE.read_text(encoding="utf-8")
    table = text.split("<!-- snake-case-table -->", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\| `([^`]+)` \| `([^`]*)` \|$", table, re.MULTILINE)


def test_the_snake_case_table_is_the_operators_conversion():
    rows = snake_case_rows()
    assert len(rows) >= 10
    wrong = [(field, var, to_snake(field)) for field, var in rows if to_snake(field) != var]
    assert not wrong, f"(field, guide says, operator gives): {wrong}"


def heading_anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_lead_somewhere():
    text = GUIDE.read_text(encoding="utf-8")
    anchors = {heading_anchor(h) for h in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        path, _, anchor = target.partition("#")
        if path:
            assert (GUIDE.parent / path).exists(), f"broken link {target}"
        else:
            assert anchor in anchors, f"broken anchor #{anchor}"


def test_the_readme_and_the_scaffolded_role_readme_point_at_the_guide():
    assert "(docs/role-authors-guide.md)" in (REPO / "README.md").read_text(encoding="utf-8")
    template = REPO / "operator/ansible_operator/scaffold/templates/new_api/role/README.md"
    assert "role-authors-guide.md" in template.read_text(encoding="utf-8")


# -- commands ------------------------------------------------------------------------------------


def command_lines(block: Block) -> list[str]:
    """The commands of a sh block (every line, `\\` continued), or of a console block (`$ `)."""
    joined = block.text.replace("\\\n", " ")
    if block.lang == "console":
        return [line[2:] for line in joined.splitlines() if line.startswith("$ ")]
    return [line for line in joined.splitlines() if line.strip()]


def simple_commands(line: str) -> list[list[str]]:
    """The words of each command on a line: `$(...)` substitutions and `&&`, `|`, `;` lists
    split into commands of their own; comments and leading VAR=value assignments dropped."""
    inner = re.findall(r"\$\(([^()]*)\)", line)
    words = shlex.split(re.sub(r"\$\(([^()]*)\)", "SUBSTITUTED", line), comments=True)
    commands: list[list[str]] = [[]]
    for word in words:
        if word in ("&&", "||", "|", ";"):
            commands.append([])
        else:
            commands[-1].append(word)
    for sub in inner:
        commands.extend(simple_commands(sub))
    result = []
    for command in commands:
        while command and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", command[0]):
            command = command[1:]
        if command:
            result.append(command)
    return result


GUIDE_COMMANDS = [
    (block, words)
    for block in SHELL
    for line in command_lines(block)
    for words in simple_commands(line)
]


def subcommand_path(words: list[str]) -> list[str]:
    """The leading words of an ansible-operator command line that name (sub-)commands."""
    if words[:1] == ["run"]:
        return ["run"]
    path: list[str] = []
    parser = cli.build_parser()
    for word in words:
        choices = next(
            (a.choices for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"),
            None,
        )
        if not choices or word not in choices:
            break
        path.append(word)
        parser = choices[word]
    return path


def make_targets() -> set[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z0-9_.-]+):", text, re.MULTILINE))


@functools.cache
def help_problem(path: tuple[str, ...]) -> str | None:
    """What `ansible-operator <path> --help` printed on stderr if its exit code was not 0
    (the command's own `main`, in this process: `run --help` exits through argparse)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main([*path, "--help"])
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
    return None if code == 0 and "usage:" in out.getvalue() else f"exit {code}: {err.getvalue()}"


def check_ansible_operator(words: list[str]) -> None:
    path = subcommand_path(words)
    assert path, f"no ansible-operator command in {words}"
    problem = help_problem(tuple(path))
    assert problem is None, f"ansible-operator {' '.join(path)} --help: {problem}"
    if path == ["run"]:
        build_run_settings(words[1:], environ={})  # SettingsError on an unknown flag or value
        return
    try:
        cli.build_parser().parse_args(words)
    except SystemExit as exit_:
        raise AssertionError(f"ansible-operator refuses {words}") from exit_


def check_command(words: list[str]) -> None:
    program = words[0].rsplit("/", 1)[-1]
    if program == "ansible-operator":
        check_ansible_operator(words[1:])
    elif program == "make":
        targets = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
        assert set(targets) <= make_targets(), f"no such make target in {words}"
    elif program == "molecule":
        assert words[1] in MOLECULE_COMMANDS, f"molecule {words[1]}?"
        scenario = words[words.index("-s") + 1]
        assert (REPO / "molecule" / scenario / "molecule.yml").is_file(), f"no scenario {scenario}"
    else:
        assert program in UNCHECKED_PROGRAMS, f"the guide runs {program}, which this test knows not"


@pytest.mark.parametrize(
    "words", [w for _, w in GUIDE_COMMANDS], ids=[f"{b.where}:{w[0]}" for b, w in GUIDE_COMMANDS]
)
def test_commands_exist_and_take_their_flags(words: list[str]):
    check_command(words)


@pytest.mark.parametrize(
    "words",
    [
        ["ansible-operator", "new-api", "--kind-of", "X"],
        ["ansible-operator", "no-such-command"],
        ["ansible-operator", "run", "--no-such-flag"],
        ["make", "no-such-target"],
        ["molecule", "verify", "-s", "no-such-scenario"],
        ["curl", "http://example.com"],
    ],
)
def test_a_wrong_command_is_caught(words: list[str]):
    with pytest.raises((AssertionError, ValueError)):
        check_command(words)


def test_command_lines_are_split_into_commands():
    line = "export K=$(ansible-operator dev-cluster kubeconfig) && make molecule  # comment"
    assert simple_commands(line) == [
        ["export", "K=SUBSTITUTED"],
        ["make", "molecule"],
        ["ansible-operator", "dev-cluster", "kubeconfig"],
    ]
