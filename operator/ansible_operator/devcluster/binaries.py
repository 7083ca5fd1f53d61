"""Finding, or building, the control-plane binaries at the versions we pin.

Binaries come from the first place that has them, in order: an explicit directory
(``--bin-dir`` / ``ANSIBLE_OPERATOR_K8S_BIN_DIR``), ``PATH`` when their versions match the pins,
or a per-user cache that ``build`` fills from Go modules (the Kubernetes binaries and etcd from
one tools module shipped in ``gotools/``, kwok with its own pins through ``go install``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

KUBERNETES_VERSION = "v1.36.3"
ETCD_VERSION = "v3.6.8"  # the version k8s.io/apiserver v0.36.3 requires
KWOK_VERSION = "v0.8.0"  # built on k8s.io/* v0.36.1

BIN_DIR_ENV = "ANSIBLE_OPERATOR_K8S_BIN_DIR"
KUBE_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
ALL_BINARIES = ("etcd", *KUBE_BINARIES, "kwok")
NODE_BINARIES = ("kubelet", "kube-proxy")  # only for a real node (`dev-cluster up --real-node`)


GOTOOLS_DIR = Path(__file__).parent / "gotools"

# How each binary reports its version, and the version prefix we accept (same minor).
_VERSION_PROBES: dict[str, tuple[list[str], str]] = {
    "etcd": (["--version"], ETCD_VERSION.rsplit(".", 1)[0].lstrip("v") + "."),
    "kube-apiserver": (["--version"], KUBERNETES_VERSION.rsplit(".", 1)[0] + "."),
    "kube-controller-manager": (["--version"], KUBERNETES_VERSION.rsplit(".", 1)[0] + "."),
    "kube-scheduler": (["--version"], KUBERNETES_VERSION.rsplit(".", 1)[0] + "."),
    "kubectl": (["version", "--client"], KUBERNETES_VERSION.rsplit(".", 1)[0] + "."),
    "kubelet": (["--version"], KUBERNETES_VERSION.rsplit(".", 1)[0] + "."),
    "kube-proxy": (["--version"], KUBERNETES_VERSION.rsplit(".", 1)[0] + "."),
    "kwok": (["--version"], KWOK_VERSION.rsplit(".", 1)[0] + "."),
}

Progress = Callable[[str], None]


def needed(real_node: bool) -> tuple[str, ...]:
    """The binaries of a cluster, with or without a real node."""
    return ALL_BINARIES + (NODE_BINARIES if real_node else ())


class BinariesError(Exception):
    """A binary cannot be found or built; the message is one line meant for the user."""


@dataclass(frozen=True)
class Binaries:
    """Absolute paths of every control-plane binary, and where they came from."""

    paths: Mapping[str, Path]
    source: str

    def __getitem__(self, name: str) -> Path:
        return self.paths[name]


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get("ANSIBLE_OPERATOR_CACHE_DIR"):
        return Path(env["ANSIBLE_OPERATOR_CACHE_DIR"])
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ansible-operator"


def cache_bin_dir(environ: Mapping[str, str] | None = None) -> Path:
    pins = f"k8s-{KUBERNETES_VERSION}_etcd-{ETCD_VERSION}_kwok-{KWOK_VERSION}"
    return cache_root(environ) / "bin" / pins


def _how_to_provide(missing: list[str]) -> str:
    return (
        f"missing control-plane binaries: {', '.join(missing)}. Provide them in one of three "
        f"ways: --bin-dir DIR (or {BIN_DIR_ENV}=DIR); put {KUBERNETES_VERSION.rsplit('.', 1)[0]}.x "
        f"builds on PATH; or install Go with access to the Go module proxy and run "
        f"'ansible-operator dev-cluster build'"
    )


def reported_version(path: Path) -> str:
    """What the binary prints for its version, or '' when it cannot run."""
    args, _ = _VERSION_PROBES[path.name]
    try:
        done = subprocess.run(
            [str(path), *args], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (done.stdout + done.stderr).strip()


def version_matches(name: str, output: str) -> bool:
    _, prefix = _VERSION_PROBES[name]
    versions = re.findall(r"v?(\d+\.\d+\.\d+)", output)
    want = prefix.lstrip("v")
    return any(v.startswith(want) for v in versions)


def _from_dir(
    directory: Path, names: tuple[str, ...] = ALL_BINARIES
) -> tuple[dict[str, Path], list[str]]:
    found, missing = {}, []
    for name in names:
        path = directory / name
        if path.is_file() and os.access(path, os.X_OK):
            found[name] = path.resolve()
        else:
            missing.append(name)
    return found, missing


def _from_path(env: Mapping[str, str], names: tuple[str, ...]) -> dict[str, Path]:
    found = {}
    for name in names:
        where = shutil.which(name, path=env.get("PATH", os.defpath))
        if where and version_matches(name, reported_version(Path(where))):
            found[name] = Path(where).resolve()
    return found


def find(
    bin_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    names: tuple[str, ...] = ALL_BINARIES,
) -> Binaries:
    """Locate ``names`` (default: the control plane's) without building; raise BinariesError
    naming what is missing."""
    env = os.environ if environ is None else environ
    explicit = bin_dir or (Path(env[BIN_DIR_ENV]) if env.get(BIN_DIR_ENV) else None)
    if explicit is not None:
        found, missing = _from_dir(explicit, names)
        if missing:
            raise BinariesError(f"{explicit}: " + _how_to_provide(missing))
        return Binaries(found, f"directory {explicit}")

    cached, _ = _from_dir(cache_bin_dir(env), names)
    on_path = _from_path(env, names)
    paths = {**cached, **on_path}
    missing = [name for name in names if name not in paths]
    if missing:
        raise BinariesError(_how_to_provide(missing))
    source = "PATH" if len(on_path) == len(names) else "cache " + str(cache_bin_dir(env))
    return Binaries(paths, source)


def kubectl(environ: Mapping[str, str] | None = None) -> Path:
    """A kubectl to render and apply manifests, which needs no control plane: the directory's
    when one is set, else any on PATH (every kubectl since 1.14 has kustomize built in), else
    the cache's."""
    env = os.environ if environ is None else environ
    candidates = [Path(env[BIN_DIR_ENV]) / "kubectl"] if env.get(BIN_DIR_ENV) else []
    on_path = shutil.which("kubectl", path=env.get("PATH", os.defpath))
    candidates += [Path(on_path)] if on_path else []
    candidates.append(cache_bin_dir(env) / "kubectl")
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise BinariesError(
        "no kubectl: install one on PATH, or build the local cluster's with "
        "`ansible-operator dev-cluster build`"
    )


def ensure(
    bin_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    names: tuple[str, ...] = ALL_BINARIES,
) -> Binaries:
    """Locate ``names``, building the missing ones into the cache when no directory is given."""
    env = os.environ if environ is None else environ
    try:
        return find(bin_dir, env, names)
    except BinariesError:
        if bin_dir or env.get(BIN_DIR_ENV):
            raise
    on_path = _from_path(env, names)
    cached, _ = _from_dir(cache_bin_dir(env), names)
    build([n for n in names if n not in on_path and n not in cached], env, progress)
    return find(None, env, names)


def _say(progress: Progress | None, message: str) -> None:
    (progress or (lambda m: print(m, file=sys.stderr, flush=True)))(message)


def _ldflags() -> str:
    major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
    values = {
        "gitVersion": KUBERNETES_VERSION,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "gitCommit": "unknown",
        "buildDate": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    flags = ["-s", "-w"]
    for key, value in values.items():
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            flags.append(f"-X {pkg}.{key}={value}")
    return " ".join(flags)


def _build_commands(name: str, out: Path) -> list[str]:
    if name == "etcd":
        return [
            "go",
            "build",
            "-trimpath",
            "-ldflags",
            "-s -w",
            "-o",
            str(out / name),
            "go.etcd.io/etcd/server/v3",
        ]
    if name == "kwok":
        ld = f"-s -w -X sigs.k8s.io/kwok/pkg/consts.Version={KWOK_VERSION}"
        return [
            "go",
            "install",
            "-trimpath",
            "-ldflags",
            ld,
            f"sigs.k8s.io/kwok/cmd/kwok@{KWOK_VERSION}",
        ]
    return [
        "go",
        "build",
        "-trimpath",
        "-tags",
        "selinux,notest,grpcnotrace",
        "-ldflags",
        _ldflags(),
        "-o",
        str(out / name),
        f"k8s.io/kubernetes/cmd/{name}",
    ]


def run_with_ticker(
    cmd: list[str], cwd: Path, env: dict[str, str], label: str, progress: Progress | None
) -> tuple[int, str]:
    started = time.monotonic()
    done = threading.Event()

    def tick() -> None:
        while not done.wait(30):
            _say(progress, f"  still building {label}: {time.monotonic() - started:.0f}s elapsed")

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return 127, "go: command not found"
    finally:
        done.set()
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def build(
    names: list[str] | tuple[str, ...] = ALL_BINARIES,
    environ: Mapping[str, str] | None = None,
    progress: Progress | None = None,
) -> Path:
    """Build those of ``names`` not in the cache yet from Go modules into the cache.

    Returns the cache's bin directory.
    """
    env = dict(os.environ if environ is None else environ)
    out = cache_bin_dir(env)
    names = _from_dir(out, tuple(names))[1]
    if not names:
        _say(progress, f"all binaries are in {out}")
        return out
    if shutil.which("go", path=env.get("PATH")) is None:
        raise BinariesError("go was not found on PATH; " + _how_to_provide(list(names)))
    out.mkdir(parents=True, exist_ok=True)
    env.update(GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS="-mod=mod", GOBIN=str(out))
    total = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ansible-operator-gotools-") as tmp:
        module = Path(tmp)
        for item in GOTOOLS_DIR.iterdir():
            if item.is_file():
                shutil.copy(item, module / item.name)
        for index, name in enumerate(names, 1):
            _say(progress, f"building {name} ({index}/{len(names)}) from Go modules...")
            started = time.monotonic()
            rc, output = run_with_ticker(_build_commands(name, out), module, env, name, progress)
            if rc != 0:
                last = output.splitlines()[-1] if output else f"exit code {rc}"
                raise BinariesError(f"building {name} failed ({last}); " + _how_to_provide([name]))
            _say(progress, f"built {name} in {time.monotonic() - started:.0f}s")
    _say(progress, f"all binaries built into {out} in {time.monotonic() - total:.0f}s")
    return out
