"""An OCI image archive of a few static programs, written without a registry or a container
engine.

The real node's sandbox ("pause") image is one Go binary, the etcd example's the etcd release's
three: each archive is a tar of the OCI image layout (``oci-layout``, ``index.json``,
``blobs/sha256/``) that ``ctr images import`` takes, the image named by the
``io.containerd.image.name`` annotation. Every timestamp is zero, so the same files always make
the same image.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar"


@dataclass(frozen=True)
class Link:
    """A symbolic link in an image, to ``target``."""

    target: str


def _file_tar(entries: Mapping[str, tuple[bytes, int] | Link]) -> bytes:
    """A tar of ``{path: (content, mode) or Link}``, owned by root, timestamps zero."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, entry in sorted(entries.items()):
            info = tarfile.TarInfo(path)
            info.mtime = 0
            if isinstance(entry, Link):
                info.type, info.linkname, info.mode = tarfile.SYMTYPE, entry.target, 0o777
                tar.addfile(info)
            else:
                info.size, info.mode = len(entry[0]), entry[1]
                tar.addfile(info, io.BytesIO(entry[0]))
    return out.getvalue()


def program_image(program: bytes, file_name: str, name: str) -> bytes:
    """The archive of an image named ``name`` (``localhost/x:tag``) holding ``program`` as
    ``/<file_name>``, its entrypoint."""
    return image({file_name: (program, 0o755)}, name, [f"/{file_name}"])


def image(files: Mapping[str, tuple[bytes, int] | Link], name: str, entrypoint: list[str]) -> bytes:
    """The archive of an image named ``name`` of one layer: ``files`` by their paths (without
    the leading slash), their content and mode or a link."""
    blobs: dict[str, tuple[bytes, int]] = {}

    def add(media_type: str, blob: bytes) -> dict[str, object]:
        """Keep ``blob`` in the archive; its descriptor (hashed once: a layer is megabytes)."""
        digest = hashlib.sha256(blob).hexdigest()
        blobs[f"blobs/sha256/{digest}"] = (blob, 0o644)
        return {"mediaType": media_type, "digest": f"sha256:{digest}", "size": len(blob)}

    layer = add(LAYER, _file_tar(files))
    config = add(
        CONFIG,
        json.dumps(
            {
                "architecture": "amd64",
                "os": "linux",
                "config": {"Entrypoint": entrypoint},
                # Uncompressed, the layer's digest is its diff ID.
                "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]},
            },
            sort_keys=True,
        ).encode(),
    )
    manifest = add(
        MANIFEST,
        json.dumps(
            {"schemaVersion": 2, "mediaType": MANIFEST, "config": config, "layers": [layer]},
            sort_keys=True,
        ).encode(),
    )
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                **manifest,
                "annotations": {
                    "io.containerd.image.name": name,
                    "org.opencontainers.image.ref.name": name.rpartition(":")[2],
                },
            }
        ],
    }
    return _file_tar(
        {
            "oci-layout": (json.dumps({"imageLayoutVersion": "1.0.0"}).encode(), 0o644),
            "index.json": (json.dumps(index, sort_keys=True).encode(), 0o644),
            **blobs,
        }
    )
