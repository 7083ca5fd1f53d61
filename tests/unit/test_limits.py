"""The one cut of text that leaves a run: within its size in UTF-8 bytes, saying how much went."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_operator.core.limits import CONDITION_MESSAGE_BYTES, EVENT_NOTE_BYTES, cap

NOTE = re.compile(r" \.\.\. \[cut: (\d+) more bytes\]\Z")


def test_the_limits_are_kubernetes_own() -> None:
    assert (CONDITION_MESSAGE_BYTES, EVENT_NOTE_BYTES) == (32768, 1024)


@pytest.mark.parametrize("size", [0, 1, 1023, 1024])
def test_a_text_that_fits_is_kept_as_it_is(size: int) -> None:
    text = "x" * size
    assert cap(text, 1024) is text


def test_a_long_text_keeps_its_start_and_says_how_many_bytes_were_cut() -> None:
    text = "ssh debug: " + "y" * 5000
    capped = cap(text, 1024)
    assert len(capped.encode()) == 1024
    match = NOTE.search(capped)
    assert match is not None, capped[-60:]
    kept = capped[: match.start()]
    assert text.startswith(kept)
    assert int(match[1]) == len(text) - len(kept)


def test_a_cut_never_splits_a_character() -> None:
    # 4-byte characters after one ASCII byte: no cut point falls on a character boundary by luck.
    for limit in range(64, 80):
        capped = cap("a" + "😀" * 100, limit)
        assert len(capped.encode()) <= limit
        kept = capped[: NOTE.search(capped).start()]  # type: ignore[union-attr]
        assert kept == "a" + "😀" * (len(kept) - 1)


def test_the_count_is_exact_when_it_has_fewer_digits_than_the_length() -> None:
    capped = cap("z" * 10000, 9990)  # 10000 has five digits, the 38 bytes cut two
    assert capped == "z" * 9962 + " ... [cut: 38 more bytes]"


def test_a_cap_too_small_for_its_note_is_refused() -> None:
    with pytest.raises(ValueError, match="a cap of 10 bytes leaves no room"):
        cap("text", 10)


@given(st.text(), st.integers(min_value=64, max_value=600))
def test_any_text_fits_its_cap_and_keeps_its_start_or_is_whole(text: str, limit: int) -> None:
    capped = cap(text, limit)
    data = text.encode("utf-8", "surrogatepass")
    assert len(capped.encode("utf-8", "surrogatepass")) <= limit
    if len(data) <= limit:
        assert capped == text
        return
    match = NOTE.search(capped)
    assert match is not None
    kept = capped[: match.start()]
    assert text.startswith(kept)
    assert int(match[1]) == len(data) - len(kept.encode("utf-8", "surrogatepass"))
