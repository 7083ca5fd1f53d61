"""The images the examples' roles name, made here for the real node (no registry is
reachable): ``dev-cluster example-images``.

- ``gcr.io/etcd-development/etcd:v3.6.8``: the etcd release the local cluster itself runs, with
  its ``etcdctl`` and ``etcdutl`` built from Go modules (``etcdtools/``), in ``/usr/local/bin``
  as the release image has them; the same release, so no stand-in.
- ``busybox:1.36``, the restore's shell: a stand-in, Debian's static busybox (1.35 in Debian 12,
  package ``busybox-static``) as ``/bin/busybox`` and ``/bin/sh``.
- ``memcached:1.6.18``, the memcached example's: Debian 12's memcached 1.6.18 (the same release
  as that tag's official image, which is built from source on Debian) with the libraries it
  loads (``debian``). Made once and kept in the cache, since it needs Debian's mirror.

Each is one layer, written as an OCI archive (``oci``) and imported into the node's containerd.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ansible_operator.devcluster import binaries, debian, gobuild, oci
from ansible_operator.devcluster.node import NodeLayout
from ansible_operator.devcluster.node_images import ImageError, import_image

ETCD_IMAGE = f"gcr.io/etcd-development/etcd:{binaries.ETCD_VERSION}"
SHELL_IMAGE = "docker.io/library/busybox:1.36"  # what a Pod's `busybox:1.36` means
BUSYBOX = Path("/bin/busybox")
MEMCACHED_VERSION = "1.6.18"
MEMCACHED_IMAGE = f"docker.io/library/memcached:{MEMCACHED_VERSION}"
DEBIAN_SUITE = "bookworm"

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
    """Make the images and import them into the node; their names."""
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
    import_image(layout, _memcached(progress))
    return [*(name for name, _, _ in images), MEMCACHED_IMAGE]


def _memcached(progress: binaries.Progress) -> bytes:
    """The memcached image's archive, from the cache or made from Debian's package."""
    cached = binaries.cache_root() / "example-images" / f"memcached-{DEBIAN_SUITE}.tar"
    if cached.exists():
        return cached.read_bytes()
    progress(f"making {MEMCACHED_IMAGE} from Debian {DEBIAN_SUITE}'s memcached (mmdebstrap)")
    with tempfile.TemporaryDirectory(prefix="ansible-operator-memcached-") as tmp:
        root = Path(tmp) / "root"
        debian.unpack(["memcached"], DEBIAN_SUITE, root)
        version = debian.run(root, "/usr/bin/memcached", "-V").split()
        if version[-1:] != [MEMCACHED_VERSION]:
            raise ImageError(
                f"Debian {DEBIAN_SUITE}'s memcached says {' '.join(version)!r}, "
                f"not the {MEMCACHED_VERSION} the example names"
            )
        archive = oci.image(
            debian.program_files(root, "/usr/bin/memcached"),
            MEMCACHED_IMAGE,
            ["/usr/bin/memcached"],
        )
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_suffix(".partial")
    partial.write_bytes(archive)
    partial.replace(cached)
    return archive


def _static_busybox() -> bytes:
    """This machine's busybox, when it needs no shared library (Debian's busybox-static)."""
    where = shutil.which("busybox") or str(BUSYBOX)
    try:
        program = Path(where).read_bytes()
    except OSError:
        program = b""
    if not program.startswith(b"\x7fELF\x02\x01") or debian.elf_interpreter(program):
        raise ImageError(
            f"the restore's shell image needs a static busybox, and {where} is "
            f"{'not one' if program else 'missing'} (Debian: apt-get install busybox-static)"
        )
    return program
