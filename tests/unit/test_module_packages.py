"""Whether a file the packaging of a kept module read is unchanged (module_packages.unchanged):
by its stat signature when that can be trusted, else by its content; and a real collection
module packaged once for later runs."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest

from ansible_operator.runner.warm import cachedir, patches
from ansible_operator.runner.warm.patches import module_packages
from ansible_operator.runner.warm.patches.module_packages import NO_PACKAGE, recorded, unchanged


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


@pytest.mark.ansible_core
def test_a_package_that_could_not_be_imported_is_valid_while_it_stays_missing():
    assert module_packages._valid([["ansible_collections.nowhere.none", NO_PACKAGE, None]])
    assert not module_packages._valid([["json", NO_PACKAGE, None]])  # there now


@pytest.mark.skipif(
    not patches.tested_here("module-packages"), reason="not tested here (patches.PATCHES)"
)
@pytest.mark.ansible_core
def test_a_collection_module_is_packaged_once_for_every_later_run(tmp_path, monkeypatch):
    """kubernetes.core.k8s, as the memcached role runs it: its module_utils packages without an
    __init__.py and its optional import of a collection that is not installed (cloud.common)
    are still as recorded in a later run, which takes the kept package."""
    from ansible import constants
    from ansible.executor import module_common
    from ansible.parsing.dataloader import DataLoader
    from ansible.plugins.loader import init_plugin_loader, module_loader
    from ansible.template import Templar

    init_plugin_loader()
    monkeypatch.setattr(cachedir, "directory", str(tmp_path / "kept"))
    monkeypatch.setattr(module_common, "_find_module_utils", module_common._find_module_utils)
    packaged = []
    finder = module_common.recursive_finder
    monkeypatch.setattr(
        module_common, "recursive_finder", lambda *a, **k: packaged.append(1) or finder(*a, **k)
    )
    module_packages.install()
    path = module_loader.find_plugin_with_context("kubernetes.core.k8s").plugin_resolved_path

    def run(number: int) -> None:
        """One run's packaging, in a local tmp of its own (a new ansible-playbook's)."""
        monkeypatch.setattr(constants, "DEFAULT_LOCAL_TMP", str(tmp_path / f"run-{number}"))
        module_common.modify_module(
            module_name="k8s",
            module_path=path,
            module_args={},
            templar=Templar(loader=DataLoader()),
            task_vars={"ansible_python_interpreter": sys.executable},
            module_compression="ZIP_DEFLATED",
        )

    run(1)
    [entry] = (tmp_path / "kept" / "modules").iterdir()
    kept = entry.stat().st_ino
    run(2)
    run(3)
    assert len(packaged) == 1, "later runs take the kept package"
    assert entry.stat().st_ino == kept  # read, not written again
