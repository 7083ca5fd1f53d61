"""The memcached example's image, from Debian's package: the parts that need no mirror (finding
the loader, paths inside the unpacked tree, the one-line errors)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ansible_operator.devcluster import debian, example_images
from ansible_operator.devcluster.node_images import ImageError


def test_a_dynamic_program_names_its_loader_and_a_static_one_none():
    assert debian.elf_interpreter(Path(os.path.realpath(sys.executable)).read_bytes()) == (
        "/lib64/ld-linux-x86-64.so.2"
    )
    assert debian.elf_interpreter(example_images._static_busybox()) is None
    with pytest.raises(ImageError, match="not a 64-bit little-endian ELF program"):
        debian.elf_interpreter(b"#!/bin/sh\n")


def test_paths_inside_the_tree_follow_its_links_never_the_machines(tmp_path):
    root = tmp_path / "root"
    (root / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    (root / "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2").write_bytes(b"loader")
    (root / "lib").symlink_to("usr/lib")  # merged /usr
    (root / "lib64").mkdir()
    # Absolute, as Debian's is: on the machine it would name the machine's own loader.
    (root / "lib64/ld-linux-x86-64.so.2").symlink_to("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
    (root / "usr/lib/up").symlink_to("../../lib64/./ld-linux-x86-64.so.2")
    for path in (
        "/lib64/ld-linux-x86-64.so.2",
        "usr/lib/up",
        "/../../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
    ):
        assert debian.inside(root, path).read_bytes() == b"loader", path
    (root / "loop").symlink_to("/loop")
    with pytest.raises(ImageError, match="too many symbolic links"):
        debian.inside(root, "/loop")


def test_unpacking_says_in_one_line_what_is_missing_or_what_failed(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ImageError) as missing:
        debian.unpack(["memcached"], "bookworm", tmp_path / "root")
    assert str(missing.value) == (
        "unpacking Debian's packages needs mmdebstrap (apt-get install mmdebstrap)"
    )
    fake = tmp_path / "mmdebstrap"
    fake.write_text(
        "#!/bin/sh\necho 'I: reading' >&2\necho 'E: apt-get download failed' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    with pytest.raises(ImageError) as failed:
        debian.unpack(["memcached"], "bookworm", tmp_path / "root")
    assert str(failed.value) == (
        f"mmdebstrap of memcached from {debian.MIRROR} bookworm: E: apt-get download failed"
    )


def test_a_memcached_of_another_release_than_the_example_names_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("ANSIBLE_OPERATOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(debian, "unpack", lambda packages, suite, root: root.mkdir())
    monkeypatch.setattr(debian, "run", lambda root, program, *args: "memcached 1.6.19\n")
    with pytest.raises(ImageError) as refused:
        example_images._memcached(lambda message: None)
    assert str(refused.value) == (
        "Debian bookworm's memcached says 'memcached 1.6.19', not the 1.6.18 the example names"
    )
    assert not (tmp_path / "cache").exists(), "nothing is cached"
