"""Go programs built once from a module of ours into the per-user cache of binaries.

A program is a directory holding a Go module (its go.mod and go.sum pin every dependency) and the
package to build in it or in a module it requires. Its binary is cached under
``binaries.cache_root`` by a name made of its pin and a digest of that directory, so a changed
module is built again and an unchanged one never. The bundle validator (``bundle_validator``) is
one; the tests' promtool another.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ansible_operator.devcluster import binaries


@dataclass(frozen=True)
class GoProgram:
    name: str  # the cached binary's name starts with it: "bundle-validator"
    pin: str  # the versions it is built from, in the cached name: "api-v0.34.0"
    title: str  # for people: "the bundle validator (operator-framework/api v0.34.0)"
    module: Path  # the directory of the Go module
    package: str = "."  # what `go build` builds, from that module
    tags: tuple[str, ...] = ()  # Go build tags


def path(program: GoProgram, environ: Mapping[str, str] | None = None) -> Path:
    """Where the program of this pin and this module lives in the cache."""
    digest = hashlib.sha256()
    for item in sorted(program.module.iterdir()):
        if item.is_file():
            digest.update(item.name.encode() + b"\0" + item.read_bytes())
    name = f"{program.name}_{program.pin}_{digest.hexdigest()[:12]}"
    return binaries.cache_root(environ) / "bin" / name


def ensure(
    program: GoProgram,
    environ: Mapping[str, str] | None = None,
    progress: binaries.Progress | None = None,
) -> Path:
    """The cached program, built first when it is not there (by one process at a time: the
    others, parallel test workers say, wait for its build and take it)."""
    env = dict(os.environ if environ is None else environ)
    out = path(program, env)
    if out.is_file():
        return out
    if shutil.which("go", path=env.get("PATH")) is None:
        raise binaries.BinariesError(
            f"go was not found on PATH: {program.title} is built from Go modules on first use"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if out.is_file():
            return out
        return _build(program, env, out, progress)


def _build(
    program: GoProgram, env: dict[str, str], out: Path, progress: binaries.Progress | None
) -> Path:
    say = progress or (lambda m: print(m, file=sys.stderr, flush=True))
    say(f"building {program.title} from Go modules...")
    started = time.monotonic()
    env.update(GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS="-mod=readonly")
    tags = ["-tags", ",".join(program.tags)] if program.tags else []
    with tempfile.TemporaryDirectory(prefix=f"ansible-operator-{program.name}-") as tmp:
        for item in program.module.iterdir():
            if item.is_file():
                shutil.copy(item, Path(tmp) / item.name)
        partial = out.with_name(out.name + ".partial")
        cmd = ["go", "build", "-trimpath", *tags, "-ldflags", "-s -w", "-o", str(partial)]
        rc, output = binaries.run_with_ticker(
            [*cmd, program.package], Path(tmp), env, program.title, say
        )
        if rc != 0:
            last = output.splitlines()[-1] if output else f"exit code {rc}"
            raise binaries.BinariesError(f"building {program.title} failed ({last})")
        os.replace(partial, out)
    say(f"built {program.title} into {out} in {time.monotonic() - started:.0f}s")
    return out
