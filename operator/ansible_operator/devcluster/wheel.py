"""The installed ansible-operator-py as a wheel again, for a generated project's image build.

A project made by ``ansible-operator init`` has no copy of this source tree: its Dockerfile
installs the runtime from a wheel in ``dist/``. pip keeps no copy of the wheel it installed, so
this packs the installed files back into one, from the distribution's RECORD (every file pip
wrote, minus the console scripts, which pip writes anew from entry_points.txt, and the
installer's own notes). An editable install has no installed files to pack: refused.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import zipfile
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "ansible-operator-py"
# What pip adds to a .dist-info when it installs; not part of the wheel.
_INSTALLER_FILES = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}


class WheelError(Exception):
    """The installed package cannot be packed; one line."""


def build(output: Path, distribution: str = DISTRIBUTION) -> Path:
    """Write the wheel of the installed `distribution` into `output`; its path."""
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        raise WheelError(f"{distribution} is not installed in this Python") from None
    direct_url = json.loads(dist.read_text("direct_url.json") or "{}")
    if (direct_url.get("dir_info") or {}).get("editable"):
        raise WheelError(
            f"{distribution} is an editable install (a source tree): build its wheel there "
            "with `python -m build --wheel`"
        )
    files = [f for f in dist.files or [] if _packed(str(f))]
    if not files:
        raise WheelError(f"{distribution} has no RECORD of its installed files")
    version = dist.version
    stem = f"{distribution.replace('-', '_')}-{version}"
    info = f"{stem}.dist-info"
    output.mkdir(parents=True, exist_ok=True)
    target = output / f"{stem}-py3-none-any.whl"
    records: list[tuple[str, str, str]] = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as wheel:
        for file in sorted(files, key=str):
            data = Path(str(file.locate())).read_bytes()
            wheel.writestr(str(file), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            records.append((str(file), f"sha256={digest.decode()}", str(len(data))))
        record = io.StringIO()
        writer = csv.writer(record, lineterminator="\n")
        writer.writerows([*records, (f"{info}/RECORD", "", "")])
        wheel.writestr(f"{info}/RECORD", record.getvalue())
    return target


def _packed(name: str) -> bool:
    """Whether an installed file belongs in the wheel."""
    parts = name.split("/")
    if parts[0] == ".." or "__pycache__" in parts or name.endswith(".pyc"):
        return False  # console scripts (outside site-packages) and byte code
    return not (parts[0].endswith(".dist-info") and parts[-1] in _INSTALLER_FILES)
