"""Images on the real node: nothing is pulled, every image is loaded into its containerd.

The sandbox image is ours (``nodeimage/``: a Go program built once into the binaries' cache,
made an OCI archive by ``oci``); any other comes from the podman store ``dev-image build`` builds
into, with ``dev-cluster load-image`` (``podman save`` into ``ctr images import``).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from ansible_operator.devcluster import binaries, gobuild, image, node, oci
from ansible_operator.devcluster.node import NodeLayout


class ImageError(Exception):
    """An image cannot be loaded; the message is one line for the user."""


def import_archive(layout: NodeLayout, archive: Path) -> None:
    """Import an OCI or Docker archive into the node's containerd, for the kubelet (k8s.io)."""
    cmd = ["ctr", f"--address={layout.containerd_socket}", "--namespace=k8s.io"]
    done = subprocess.run(
        [*cmd, "images", "import", str(archive)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise ImageError(f"importing {archive} failed: {(done.stderr or done.stdout).strip()}")


def import_image(layout: NodeLayout, archive: bytes) -> None:
    """Import an archive made here (``oci``) into the node's containerd."""
    with tempfile.NamedTemporaryFile(prefix="ansible-operator-image-", suffix=".tar") as file:
        file.write(archive)
        file.flush()
        import_archive(layout, Path(file.name))


def load_sandbox_image(layout: NodeLayout, progress: binaries.Progress) -> None:
    program = gobuild.ensure(node.SANDBOX_PROGRAM, progress=progress).read_bytes()
    # The image's program is named for what it is, whatever the cache calls its build.
    import_image(layout, oci.program_image(program, "nodeimage", node.SANDBOX_IMAGE))


def load_from_podman(layout: NodeLayout, name: str) -> None:
    """Copy ``name`` from the store ``dev-image build`` builds into (``image.Podman``)."""
    podman = image.Podman.default()
    with tempfile.TemporaryDirectory(prefix="ansible-operator-load-image-") as tmp:
        archive = Path(tmp) / "image.tar"
        try:
            podman.run("save", "--format=oci-archive", f"--output={archive}", name)
        except image.ImageError as err:
            raise ImageError(f"{name}: {err}") from None
        import_archive(layout, archive)
