"""The Dockerfile's essentials, checked in a second before any build (tests/image builds it).

A small reader of Dockerfile syntax (continuation lines, comments, build stages, JSON and shell
forms) and assertions on what the image must be: multi-stage, non-root in the final stage, the
Go ansible-operator's entrypoint and layout, and every COPY source present in the build context.
"""

from __future__ import annotations

import fnmatch
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ansible_operator.scaffold import init

REPO = Path(__file__).resolve().parents[2]
ENTRYPOINT_TAIL = ["ansible-operator", "run", "--watches-file=./watches.yaml"]


@dataclass
class Instruction:
    keyword: str
    args: str
    line: int

    def words(self) -> list[str]:
        """JSON (exec) form as its list; shell form split like a shell would."""
        if self.args.startswith("["):
            return list(json.loads(self.args))
        return shlex.split(self.args)

    def flags_and_words(self) -> tuple[dict[str, str], list[str]]:
        words = self.args.split() if not self.args.startswith("[") else self.words()
        flags = {}
        while words and words[0].startswith("--"):
            name, _, value = words.pop(0)[2:].partition("=")
            flags[name] = value
        return flags, words


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


def parse(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Global ARGs (before the first FROM) and the build stages."""
    logical: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # comment lines inside a continued instruction are dropped
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1].rstrip() + " "
            continue
        logical.append((start, pending + stripped))
        pending = ""
    assert not pending, "the Dockerfile ends inside a continued instruction"

    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for number, text_line in logical:
        keyword, _, args = text_line.partition(" ")
        instruction = Instruction(keyword.upper(), args.strip(), number)
        if instruction.keyword == "FROM":
            words = instruction.args.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(words[0], name))
        elif not stages:
            assert instruction.keyword == "ARG", f"line {number}: only ARG may precede FROM"
            name, _, default = instruction.args.partition("=")
            global_args[name] = default
        else:
            stages[-1].instructions.append(instruction)
    return global_args, stages


@pytest.fixture(scope="module")
def context(tmp_path_factory) -> Path:
    """The build context of a project `ansible-operator init` wrote, with the dist/ that its
    `make image` fills with the runtime's wheel (the repository's Dockerfile is that template)."""
    project = tmp_path_factory.mktemp("init")
    for rel, text in init.files("fresh", "example.com").items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    (project / "dist").mkdir()
    return project


@pytest.fixture(scope="module")
def dockerfile(context) -> tuple[dict[str, str], list[Stage]]:
    return parse((context / "Dockerfile").read_text())


def final(stages: list[Stage]) -> Stage:
    return stages[-1]


def env_of(stage: Stage) -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction in stage.all("ENV"):
        for word in instruction.words():
            name, _, value = word.partition("=")
            env[name] = value
    return env


def dockerignored(path: str, context: Path = REPO) -> bool:
    """Whether .dockerignore keeps `path` (relative to `context`) out of the build context."""
    ignore = context / ".dockerignore"
    if not ignore.exists():
        return False
    excluded = False
    for raw in ignore.read_text().splitlines():
        rule = raw.strip()
        if not rule or rule.startswith("#"):
            continue
        negate = rule.startswith("!")
        pattern = rule.lstrip("!").rstrip("/")
        parts = Path(path).parts
        # a rule matches the path itself or any directory above it
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(fnmatch.fnmatch(p, pattern) for p in prefixes):
            excluded = not negate
    return excluded


# -- the parser, on its own ------------------------------------------------------------------


def test_parser_joins_continuations_and_splits_stages():
    text = (
        "ARG BASE=python:3.11-slim\n"
        "# comment\n"
        "FROM ${BASE} AS builder\n"
        "RUN a \\\n"
        "    # inside\n"
        "    && b\n"
        "FROM ${BASE}\n"
        'ENTRYPOINT ["x", "y"]\n'
    )
    args, stages = parse(text)
    assert args == {"BASE": "python:3.11-slim"}
    assert [(s.base, s.name) for s in stages] == [("${BASE}", "builder"), ("${BASE}", None)]
    assert stages[0].instructions[0].args == "a && b"
    assert stages[1].instructions[0].words() == ["x", "y"]


def test_dockerignore_rules_in_order():
    assert not dockerignored("roles/memcached/tasks/main.yml")
    assert not dockerignored("dist/ansible_operator_py-0.1.0-py3-none-any.whl")
    assert dockerignored(".venv/bin/python")
    assert dockerignored("operator/ansible_operator/cli.py")


# -- a generated project's Dockerfile (the repository's is its template) ------------------------


def test_multi_stage_with_named_builder(dockerfile):
    args, stages = dockerfile
    assert len(stages) >= 2
    names = {s.name for s in stages if s.name}
    sources = {
        i.flags_and_words()[0]["from"]
        for s in stages[1:]
        for i in s.all("COPY")
        if "from" in i.flags_and_words()[0]
    }
    assert sources, "the final stage copies nothing from a build stage"
    assert sources <= names
    for stage in stages:
        base = stage.base
        for name, default in args.items():
            base = base.replace("${" + name + "}", default)
        assert base in names or ":" in base, f"{stage.base}: pin the base image's tag"
        assert not base.endswith(":latest")


def test_final_stage_runs_as_non_root(dockerfile):
    _, stages = dockerfile
    users = final(stages).all("USER")
    assert users, "the final stage must set USER"
    user = users[-1].args.split(":")[0]
    assert user not in ("root", "0")
    last_user_line = users[-1].line
    assert all(i.line < last_user_line for i in final(stages).all("RUN")), "RUN after USER"


def test_entrypoint_is_ansible_operator_run(dockerfile):
    _, stages = dockerfile
    entrypoints = final(stages).all("ENTRYPOINT")
    assert len(entrypoints) == 1
    assert entrypoints[0].args.startswith("["), "exec form, so signals reach the operator"
    words = entrypoints[0].words()
    assert words[-3:] == ENTRYPOINT_TAIL
    assert not final(stages).all("CMD")


def test_upstream_layout_and_environment(dockerfile):
    _, stages = dockerfile
    stage = final(stages)
    env = env_of(stage)
    assert env["HOME"] == "/opt/ansible"
    assert env["ANSIBLE_GATHERING"] == "explicit"
    assert stage.all("WORKDIR")[-1].args == "/opt/ansible"
    # Writable only under /tmp (readOnlyRootFilesystem in config/manager)
    assert env["ANSIBLE_LOCAL_TEMP"].startswith("/tmp/")
    assert env["ANSIBLE_REMOTE_TEMP"].startswith("/tmp/")
    copied = {
        word.rstrip("/")
        for i in stage.all("COPY")
        if "from" not in i.flags_and_words()[0]
        for word in i.flags_and_words()[1][:-1]
    }
    for needed in ("watches.yaml", "roles", "playbooks"):
        assert any(c == needed or c.startswith(needed + "/") for c in copied), needed
    # operator_sdk.util comes with the package, in site-packages: the prune of the `ansible`
    # package's collections must keep it.
    runs = [i for stage in stages for i in stage.all("RUN")]
    (prune,) = [i for i in runs if "site-packages/ansible_collections" in i.args]
    assert "echo operator_sdk/util" in prune.args


def test_every_copy_source_is_in_the_build_context(dockerfile, context):
    _, stages = dockerfile
    checked = 0
    for stage in stages:
        for instruction in stage.all("COPY") + stage.all("ADD"):
            flags, words = instruction.flags_and_words()
            if "from" in flags:
                continue
            assert instruction.keyword == "COPY", f"line {instruction.line}: use COPY, not ADD"
            for source in words[:-1]:
                path = context / source
                assert path.exists(), f"line {instruction.line}: {source} is not in the context"
                assert not dockerignored(source.rstrip("/"), context), f"{source} is ignored"
                checked += 1
    assert checked >= 5
