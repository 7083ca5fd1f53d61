"""The images the etcd example's roles name, made here for the real node (no registry is
reachable): ``dev-cluster example-images``.

- ``gcr.io/etcd-development/etcd:v3.6.8``: the etcd release the local cluster itself runs, with
  its ``etcdctl`` and ``etcdutl`` built from Go modules (``etcdtools/``), in ``/usr/local/bin``
  as the release image has them; the same release, so no stand-in.
- ``busybox:1.36``, the restore's shell: a stand-in, Debian's static busybox (1.35 in Debian 12,
  package ``busybox-static``) as ``/bin/busybox`` and ``/bin/sh``.

Each is one layer of static programs, written as an OCI archive (``oci``) and imported into the
node's containerd.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

from ansible_operator.devcluster import binaries, gobuild, oci
from ansible_operator.devcluster.node import NodeLayout
from ansible_operator.devcluster.node_images import ImageError, import_image

ETCD_IMAGE = f"gcr.io/etcd-development/etcd:{binaries.ETCD_VERSION}"
SHELL_IMAGE = "docker.io/library/busybox:1.36"  # what a Pod's `busybox:1.36` means
BUSYBOX = Path("/bin/busybox")

_ETCDTOOLS = Path(__file__).parent / "etcdtools"
ETCD_TOOLS = tuple(
    gobuild.GoProgram(
        name=tool,
        pin=f"etcd-{binaries.ETCD_VERSION}",
        title=f"{tool} (etcd {binaries.ETCD_VERSION}, etcdtools/)",
        module=_ETCDTOOLS,
        package=f"go.etcd.io/etcd/{tool}/v3",
    )
    for tool in ("etcdctl", "etcdutl")
)


def load(layout: NodeLayout, progress: binaries.Progress) -> list[str]:
    """Make both images and import them into the node; their names."""
    etcd = binaries.find(names=("etcd",))["etcd"]
    tools = {program.name: gobuild.ensure(program, progress=progress) for program in ETCD_TOOLS}
    executables = {"etcd": etcd, **tools}
    etcd_files: dict[str, tuple[bytes, int] | oci.Link] = {
        f"usr/local/bin/{name}": (path.read_bytes(), 0o755) for name, path in executables.items()
    }
    shell_files: dict[str, tuple[bytes, int] | oci.Link] = {
        "bin/busybox": (_static_busybox(), 0o755),
        "bin/sh": oci.Link("busybox"),
    }
    images = (
        (ETCD_IMAGE, etcd_files, ["/usr/local/bin/etcd"]),
        (SHELL_IMAGE, shell_files, ["/bin/sh"]),
    )
    for name, files, entrypoint in images:
        import_image(layout, oci.image(files, name, entrypoint))
    return [name for name, _, _ in images]


def _static_busybox() -> bytes:
    """This machine's busybox, when it needs no shared library (Debian's busybox-static)."""
    where = shutil.which("busybox") or str(BUSYBOX)
    try:
        program = Path(where).read_bytes()
    except OSError:
        program = b""
    if not program.startswith(b"\x7fELF") or _interpreter(program):
        raise ImageError(
            f"the restore's shell image needs a static busybox, and {where} is "
            f"{'not one' if program else 'missing'} (Debian: apt-get install busybox-static)"
        )
    return program


def _interpreter(elf: bytes) -> bool:
    """Whether a 64-bit little-endian ELF program names a dynamic loader (a PT_INTERP header)."""
    (phoff,) = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    return any(struct.unpack_from("<I", elf, phoff + i * phentsize)[0] == 3 for i in range(phnum))
