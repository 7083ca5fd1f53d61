"""A program from Debian's packages with the shared libraries it loads, for a small image made
here (the memcached example's).

``mmdebstrap --variant=extract`` unpacks the package and its dependencies into a directory (no
maintainer script runs, nothing starts); the unpacked dynamic loader then lists, in a chroot of
that directory, what the program loads, as it will in a container with no ``ld.so.cache``. The
image holds those files and nothing else (8 MB for memcached, against 90 MB unpacked).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ansible_operator.devcluster.node_images import ImageError

MIRROR = "http://deb.debian.org/debian"
UNPACK_TIMEOUT = 600.0
Files = dict[str, tuple[bytes, int]]


def unpack(packages: list[str], suite: str, root: Path) -> None:
    """Debian ``suite``'s ``packages`` and what they depend on, unpacked into ``root`` (new)."""
    if shutil.which("mmdebstrap") is None:
        raise ImageError(
            "unpacking Debian's packages needs mmdebstrap (apt-get install mmdebstrap)"
        )
    argv = ["mmdebstrap", "--quiet", "--variant=extract", f"--include={','.join(packages)}"]
    done = _run([*argv, suite, str(root), MIRROR], timeout=UNPACK_TIMEOUT)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit code {done.returncode}"]
        raise ImageError(f"mmdebstrap of {', '.join(packages)} from {MIRROR} {suite}: {lines[-1]}")


def run(root: Path, program: str, *args: str) -> str:
    """What ``program`` (a path in ``root``) writes, run in a chroot of ``root``."""
    done = _run(["chroot", str(root), program, *args], timeout=60)
    if done.returncode != 0:
        raise ImageError(f"{program} {' '.join(args)}: {(done.stderr or done.stdout).strip()}")
    return done.stdout


def program_files(root: Path, program: str) -> Files:
    """``program`` and every file it loads (the dynamic loader, the shared libraries), by their
    paths without the leading slash, as ``root``'s loader finds them."""
    elf = inside(root, program).read_bytes()
    loader = elf_interpreter(elf)
    if loader is None:
        raise ImageError(f"{program} is static: this takes a program that loads libraries")
    files: Files = {program.lstrip("/"): (elf, 0o755)}
    for line in run(root, loader, "--list", program).splitlines():
        name, arrow, rest = line.strip().partition(" => ")
        path = (rest if arrow else name).split(" (")[0]
        if arrow and not path.startswith("/"):
            raise ImageError(f"{program} needs {name}, which Debian's packages do not hold")
        if path.startswith("/"):
            files[path.lstrip("/")] = (inside(root, path).read_bytes(), 0o755)
    return files


def elf_interpreter(elf: bytes) -> str | None:
    """The dynamic loader a 64-bit little-endian ELF program names (its PT_INTERP header), or
    ``None`` for a static one."""
    if not elf.startswith(b"\x7fELF\x02\x01"):
        raise ImageError("not a 64-bit little-endian ELF program")
    phoff = int.from_bytes(elf[0x20:0x28], "little")
    phentsize = int.from_bytes(elf[0x36:0x38], "little")
    for header in range(int.from_bytes(elf[0x38:0x3A], "little")):
        at = phoff + header * phentsize
        if int.from_bytes(elf[at : at + 4], "little") == 3:
            offset = int.from_bytes(elf[at + 8 : at + 16], "little")
            size = int.from_bytes(elf[at + 32 : at + 40], "little")
            return elf[offset : offset + size].rstrip(b"\0").decode()
    return None


def inside(root: Path, path: str) -> Path:
    """``path`` as ``root``'s own programs see it: symbolic links, absolute ones too, followed
    within ``root``."""
    parts = [part for part in path.split("/") if part]
    resolved, hops = root, 0
    while parts:
        part = parts.pop(0)
        candidate = resolved / part
        if part == "..":
            resolved = resolved.parent if resolved != root else root
        elif candidate.is_symlink():
            hops += 1
            if hops > 40:
                raise ImageError(f"{path}: too many symbolic links in {root}")
            target = str(candidate.readlink())
            parts = [p for p in target.split("/") if p] + parts
            if target.startswith("/"):
                resolved = root
        elif part != ".":
            resolved = candidate
    return resolved


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,  # mmdebstrap would read sources from one that is no terminal
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ImageError(f"{' '.join(argv[:3])}: no answer in {timeout:.0f} s") from None
