"""An OCI image archive of one static program, written without a registry or a container engine.

The real node's sandbox ("pause") image is one Go binary: its archive is a tar of the OCI image
layout (``oci-layout``, ``index.json``, ``blobs/sha256/``) that ``ctr images import`` takes, the
image named by the ``io.containerd.image.name`` annotation. Every timestamp is zero, so the same
binary always makes the same image.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar"


def _file_tar(entries: dict[str, tuple[bytes, int]]) -> bytes:
    """A tar of ``{path: (content, mode)}``, owned by root, timestamps zero."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, (content, mode) in sorted(entries.items()):
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(content), mode, 0
            tar.addfile(info, io.BytesIO(content))
    return out.getvalue()


def _descriptor(media_type: str, blob: bytes) -> dict[str, object]:
    return {
        "mediaType": media_type,
        "digest": "sha256:" + hashlib.sha256(blob).hexdigest(),
        "size": len(blob),
    }


def program_image(program: Path, name: str) -> bytes:
    """The archive of an image named ``name`` (``localhost/x:tag``) holding ``program`` as
    ``/<its file name>``, its entrypoint."""
    target = program.name
    layer = _file_tar({target: (program.read_bytes(), 0o755)})
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Entrypoint": [f"/{target}"]},
            "rootfs": {"type": "layers", "diff_ids": [_descriptor(LAYER, layer)["digest"]]},
        },
        sort_keys=True,
    ).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST,
            "config": _descriptor(CONFIG, config),
            "layers": [_descriptor(LAYER, layer)],
        },
        sort_keys=True,
    ).encode()
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                **_descriptor(MANIFEST, manifest),
                "annotations": {
                    "io.containerd.image.name": name,
                    "org.opencontainers.image.ref.name": name.rpartition(":")[2],
                },
            }
        ],
    }
    blobs = {
        f"blobs/sha256/{hashlib.sha256(blob).hexdigest()}": (blob, 0o644)
        for blob in (layer, config, manifest)
    }
    return _file_tar(
        {
            "oci-layout": (json.dumps({"imageLayoutVersion": "1.0.0"}).encode(), 0o644),
            "index.json": (json.dumps(index, sort_keys=True).encode(), 0o644),
            **blobs,
        }
    )
