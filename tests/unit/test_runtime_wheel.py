"""`ansible-operator dev-image wheel`: the installed package packed back into a wheel that pip
installs as it was (files, metadata, a valid RECORD); an editable install is refused."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import sys
import zipfile
from pathlib import Path

import pytest

from ansible_operator import cli
from ansible_operator.devcluster import wheel

DIST_INFO = "fake_runtime-1.2.3.dist-info"


def installed(site: Path, *, editable: bool = False) -> None:
    """A distribution `fake-runtime` as pip leaves it in site-packages."""
    files = {
        "fake_runtime/__init__.py": "VALUE = 1\n",
        "fake_runtime/data/template.yaml": "a: 1\n",
        "fake_runtime/__pycache__/__init__.cpython-311.pyc": "bytecode",
        f"{DIST_INFO}/METADATA": "Metadata-Version: 2.1\nName: fake-runtime\nVersion: 1.2.3\n",
        f"{DIST_INFO}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{DIST_INFO}/entry_points.txt": "[console_scripts]\nfake = fake_runtime:main\n",
        f"{DIST_INFO}/INSTALLER": "pip\n",
        f"{DIST_INFO}/direct_url.json": json.dumps(
            {"url": "file:///src", "dir_info": {"editable": editable}}
        ),
    }
    for name, text in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)
    rows = [(name, "", "") for name in files] + [("../../../bin/fake", "", "")]
    rows.append((f"{DIST_INFO}/RECORD", "", ""))
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    (site / DIST_INFO / "RECORD").write_text(out.getvalue())


@pytest.fixture
def site(tmp_path, monkeypatch) -> Path:
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    return site


def test_the_wheel_holds_the_installed_files_and_a_valid_record(site, tmp_path):
    installed(site)
    path = wheel.build(tmp_path / "dist", "fake-runtime")
    assert path.name == "fake_runtime-1.2.3-py3-none-any.whl"
    with zipfile.ZipFile(path) as whl:
        names = sorted(whl.namelist())
        assert names == sorted(
            [
                "fake_runtime/__init__.py",
                "fake_runtime/data/template.yaml",
                f"{DIST_INFO}/METADATA",
                f"{DIST_INFO}/WHEEL",
                f"{DIST_INFO}/entry_points.txt",
                f"{DIST_INFO}/RECORD",
            ]
        )
        record = list(csv.reader(io.StringIO(whl.read(f"{DIST_INFO}/RECORD").decode())))
        for name, digest, size in record:
            if name.endswith("RECORD"):
                assert digest == size == ""
                continue
            data = whl.read(name)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert digest == f"sha256={expected.decode()}" and int(size) == len(data), name
        assert whl.read("fake_runtime/__init__.py") == b"VALUE = 1\n"


def test_an_editable_install_is_refused(site, tmp_path):
    installed(site, editable=True)
    with pytest.raises(wheel.WheelError, match="editable install"):
        wheel.build(tmp_path / "dist", "fake-runtime")
    assert not (tmp_path / "dist").exists()


def test_the_command_says_so_in_one_line(tmp_path, capsys):
    # This repository's own virtualenv has the package as an editable install.
    assert cli.main(["dev-image", "wheel", "--output", str(tmp_path / "dist")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ansible-operator dev-image wheel: ") and err.count("\n") == 1
