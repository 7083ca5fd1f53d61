"""Whether a file the packaging of a kept module read is unchanged (module_packages.unchanged):
by its stat signature when that can be trusted, else by its content."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from ansible_operator.runner.warm.patches import module_packages
from ansible_operator.runner.warm.patches.module_packages import recorded, unchanged


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _old(path: Path) -> None:
    """Its mtime well before the racy window; its ctime is now, so record with no window."""
    os.utime(path, (1_000_000_000, 1_000_000_000))


def test_a_file_with_its_recorded_signature_is_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(module_packages, "RACY_SECONDS", -60.0)  # trust even a fresh ctime
    util = tmp_path / "util.py"
    util.write_bytes(b"A = 1\n")
    path, digest, signature = recorded(str(util), _sha(b"A = 1\n"))
    assert signature is not None

    def no_read(path: str) -> str:
        raise AssertionError("read although its signature is the recorded one")

    monkeypatch.setattr(module_packages, "_digest", no_read)
    assert unchanged(path, digest, signature)


def test_a_changed_size_or_content_is_seen(tmp_path, monkeypatch):
    monkeypatch.setattr(module_packages, "RACY_SECONDS", -60.0)
    util = tmp_path / "util.py"
    util.write_bytes(b"A = 1\n")
    path, digest, signature = recorded(str(util), _sha(b"A = 1\n"))
    util.write_bytes(b"A = 22\n")
    assert not unchanged(path, digest, signature)
    # Same size, its signature not trusted (changed within the racy window): read, and seen.
    monkeypatch.setattr(module_packages, "RACY_SECONDS", 2.0)
    util.write_bytes(b"A = 1\n")
    path, digest, signature = recorded(str(util), _sha(b"A = 1\n"))
    assert signature is None
    util.write_bytes(b"A = 2\n")
    assert not unchanged(path, digest, signature)


def test_a_recently_changed_file_is_recorded_without_a_signature(tmp_path):
    util = tmp_path / "util.py"
    util.write_bytes(b"A = 1\n")
    assert recorded(str(util), _sha(b"A = 1\n"))[2] is None  # its ctime is now
    _old(util)
    assert recorded(str(util), _sha(b"A = 1\n"))[2] is None  # utime changed the ctime


@pytest.mark.parametrize(
    ("make", "digest", "expected"),
    [
        (lambda p: None, None, True),  # missing, recorded missing
        (lambda p: p.mkdir(), "directory", True),
        (lambda p: p.mkdir(), None, False),  # appeared
        (lambda p: p.write_bytes(b"x"), None, False),  # appeared
    ],
)
def test_missing_files_and_directories(tmp_path, make, digest, expected):
    path = tmp_path / "thing"
    make(path)
    assert unchanged(str(path), digest, None) is expected
