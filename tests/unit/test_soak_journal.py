"""The soak's journal (tests/soak/journal.py): overlapping runs of one CR are found from the
order of the lines alone; runs of different CRs may interleave freely."""

from __future__ import annotations

import pytest

from tests.soak import journal


def lines(*rows: str) -> list[journal.Entry]:
    """Entries from `what uid run` rows, at generation 1 and pid 100."""
    text = ""
    for row in rows:
        what, uid, run = row.split()
        text += f"{what} {uid} 1 {run} 100 1.5\n"
    return journal.parse(text)


def test_runs_of_one_cr_one_after_another_do_not_overlap() -> None:
    entries = lines("start a r1", "end a r1", "start a r2", "end a r2")
    assert journal.overlaps(entries) == []


def test_runs_of_different_crs_may_interleave() -> None:
    entries = lines("start a r1", "start b r2", "end a r1", "end b r2")
    assert journal.overlaps(entries) == []


def test_a_run_ending_after_the_next_run_of_its_cr_started_overlaps() -> None:
    entries = lines("start a r1", "start a r2", "end a r1", "end a r2")
    assert journal.overlaps(entries) == [
        "CR a: run r1 (pid 100, generation 1) ended after run r2 (pid 100) had started"
    ]


def test_a_killed_run_is_cut_short_not_an_overlap() -> None:
    entries = lines("start a r1", "start a r2", "end a r2")
    assert journal.overlaps(entries) == []
    assert journal.unfinished(entries) == 1


def test_an_end_without_a_start_is_reported() -> None:
    assert len(journal.overlaps(lines("end a r1"))) == 1


def test_a_garbled_line_is_named() -> None:
    with pytest.raises(ValueError, match="journal line 2"):
        journal.parse("start a 1 r1 100 1.5\nstart a 1 r2\n")
