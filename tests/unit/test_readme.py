"""The README a new user reads top-down: what it is, the contributors' two commands labelled, a
short quickstart (tests/e2e/test_quickstart.py runs it), the example operators, and links to
docs/ for the rest; every link of the README and of the pages it moved to docs/ resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
MOVED = ["contributing", "deploying", "differences", "local-cluster", "performance", "plan",
         "projects", "running"]  # fmt: skip


def sections(text: str) -> list[str]:
    return re.findall(r"^## (.+)$", text, re.MULTILINE)


def test_the_readme_reads_top_down():
    assert sections(README) == ["Quickstart", "The example operators", "Read on"]
    intro = README.split("\n\n", 2)[1]
    assert len(re.findall(r"[.!?](\s|$)", intro)) == 3, "what it is, in three sentences"
    head = README.split("## Quickstart", 1)[0]
    assert "**Working on this repository itself?**" in head
    assert "\nmake run " in head and "\nmake test " in head


def test_the_quickstart_is_short_and_tested():
    block = re.search(r"<!-- quickstart[^>]*-->\n```sh\n(.*?)```", README, re.DOTALL)
    assert block, "the quickstart block"
    lines = block.group(1).splitlines()
    assert 10 <= len(lines) <= 16
    assert (REPO / "tests/e2e/test_quickstart.py").is_file()


@pytest.mark.parametrize("page", ["README.md", *(f"docs/{name}.md" for name in MOVED)])
def test_links_resolve(page):
    path = REPO / page
    text = path.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^(https?:|#|mailto:)", target):
            continue
        assert (path.parent / target.split("#")[0]).exists(), f"{page}: broken link {target}"


def test_the_readme_links_every_moved_page():
    for name in MOVED:
        assert f"(docs/{name}.md)" in README, name


def test_the_differences_table_is_whole():
    table = (REPO / "docs/differences.md").read_text(encoding="utf-8")
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    assert rows[0] == "| upstream | here | why |"
    assert len(rows) > 20
    assert "| upstream | here | why |" not in README
