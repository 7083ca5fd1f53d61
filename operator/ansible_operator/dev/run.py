"""``ansible-operator dev run`` (``make run``): the operator project running on a cluster.

The cluster operator-sdk's ``make run`` would use (``--kubeconfig``, ``KUBECONFIG``, the current
context of ``~/.kube/config``), else the local one, started or reused (``--local``: always it),
said first; the CRDs and the sample CRs applied (their namespace created if it is not there),
then the operator in the foreground with console logs until Ctrl-C or SIGTERM, which stop it
with its whole process group. Meanwhile the samples are watched through the API and a banner
says when every one is ``Successful``; nothing outlives the command.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TextIO

from ansible_operator.dev import launcher, project
from ansible_operator.dev.project import Kubectl, ProjectError
from ansible_operator.devcluster import ClusterError, DevCluster, Target, binaries, target
from ansible_operator.kube import ApiError, ConfigError, KubeClient, Unreachable, from_kubeconfig

SUCCESS_TIMEOUT = 600.0
ESTABLISHED_TIMEOUT = 60.0
CONVERSION_TIMEOUT = 60.0  # for the API server to call the operator's webhook, once it serves


def _say(message: str = "") -> None:
    _line(sys.stdout, message)


def _progress(message: str) -> None:
    _line(sys.stderr, f"[dev-cluster] {message}")


def _line(stream: TextIO, text: str) -> None:
    """One line in one write: the operator writes to the same stream, and ``print`` writes the
    text and its newline apart, which an unbuffered stream (``python -u``) lets the operator's
    lines fall between."""
    stream.write(f"{text}\n")
    stream.flush()


def run(project_dir: Path, namespace: str, kubeconfig: Path | None, local: bool = False) -> int:
    """The command; its exit code is the operator's (1 with one line on a setup failure)."""
    try:
        cluster = Target(None, "--local") if local else target.choose(kubeconfig)
        _say(cluster.describe())
        if cluster.kubeconfig is None:
            bins = binaries.ensure(progress=_progress)
            kubeconfig = DevCluster(progress=_progress).up(bins)
            kubectl_path = bins["kubectl"]
        else:
            kubeconfig = cluster.kubeconfig
            kubectl_path = binaries.kubectl()
        creds = from_kubeconfig(kubeconfig)
        kubectl = Kubectl(kubectl_path, kubeconfig)
        return asyncio.run(
            _run(project_dir, namespace, kubeconfig, KubeClient(creds), kubectl, not cluster.local)
        )
    except (
        target.TargetError,
        binaries.BinariesError,
        ClusterError,
        ConfigError,
        ProjectError,
        launcher.LaunchError,
        ApiError,
        Unreachable,
    ) as err:
        print(f"ansible-operator dev run: {err}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:  # Ctrl-C before the operator started: nothing of ours runs
        return 130


async def _run(
    project_dir: Path,
    namespace: str,
    kubeconfig: Path,
    client: KubeClient,
    kubectl: Kubectl,
    given_cluster: bool,
) -> int:
    try:
        crds = project.objects_of(kubectl("kustomize", str(project_dir / "config/crd")))
        _say(kubectl("apply", "-k", str(project_dir / "config/crd")).rstrip())
        await project.wait_established(client, crds, ESTABLISHED_TIMEOUT)
        samples = project.objects_of(kubectl("kustomize", str(project_dir / "config/samples")))
        if await _made_namespace(client, namespace):
            _say(f"namespace/{namespace} created")
        _say()
        _say(f"export KUBECONFIG={kubeconfig}")
        _say(f"Starting the operator (watches.yaml, namespace {namespace}); Ctrl-C stops it.")
        if not given_cluster:
            _say("Then: ansible-operator dev-cluster down stops the local cluster.")
        _say()
        config = launcher.LaunchConfig(
            workdir=project_dir,
            project=project_dir,
            kubeconfig=kubeconfig,
            namespaces=[namespace],
            log=None,  # the terminal
            args=["--watches-file=./watches.yaml"],
            own_tmp_dir=True,
        )

        def apply_samples() -> str:
            return kubectl("apply", "-k", str(project_dir / "config/samples"), "-n", namespace)

        return await _supervise(config, client, apply_samples, samples, namespace)
    finally:
        await client.close()


async def _made_namespace(client: KubeClient, namespace: str) -> bool:
    """Create the samples' namespace unless it exists; whether it was created."""
    try:
        await client.get(f"/api/v1/namespaces/{namespace}")
        return False
    except ApiError as err:
        if err.status != 404:
            raise
    await client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
    return True


async def _supervise(
    config: launcher.LaunchConfig,
    client: KubeClient,
    apply_samples: Callable[[], str],
    samples: list[project.ObjectRef],
    namespace: str,
) -> int:
    """Run the operator, then apply the samples, until it exits or a signal asks it to stop;
    its exit code. The samples wait for the operator: a kind served at two versions converts
    through the operator's webhook, so a sample of the version not stored cannot be written
    before the operator serves it and has pointed the CRD at it."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    operator = await asyncio.to_thread(launcher.start, config)
    try:
        _say(
            f"==== the operator (pid {operator.proc.pid}) is ready: metrics "
            f"{operator.metrics_url}, probes http://127.0.0.1:{operator.ports.probes}/readyz ===="
        )
        kept = len(await _when_converted(lambda: project.existing(client, samples, namespace)))
        _say((await _when_converted(lambda: asyncio.to_thread(apply_samples))).rstrip())
        banner = asyncio.create_task(_banner(client, samples, kept, namespace, time.monotonic()))
        while operator.proc.poll() is None and not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)
        banner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await banner
    finally:
        code = await asyncio.to_thread(operator.stop)
    return code


async def _when_converted[T](step: Callable[[], Awaitable[T]]) -> T:
    """``step()``, again while the API server still calls the conversion webhook the CRD named
    before the operator pointed it at itself (it takes up a CRD's change a moment later)."""
    deadline = time.monotonic() + CONVERSION_TIMEOUT
    while True:
        try:
            return await step()
        except (ProjectError, ApiError) as err:
            if "conversion webhook" not in str(err) or time.monotonic() > deadline:
                raise
        await asyncio.sleep(1)


async def _banner(
    client: KubeClient,
    samples: list[project.ObjectRef],
    kept: int,
    namespace: str,
    started: float,
) -> None:
    met: list[str] = []
    if await project.wait_ready(client, samples, namespace, SUCCESS_TIMEOUT, report=met.append):
        if kept:
            _say(f"==== every sample is Ready ({kept} kept from an earlier run) ====")
        else:
            elapsed = time.monotonic() - started
            _say(f"==== every sample is Ready, {elapsed:.0f} s after the operator started ====")
        for line in met:
            _say(line)
        _say(f"==== kubectl get -k config/samples -n {namespace} shows them ====")
    else:
        _say(f"==== not every sample was Ready within {SUCCESS_TIMEOUT:.0f} s ====")
