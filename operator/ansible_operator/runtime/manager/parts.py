"""The operator's parts that are not servers, as runnables (``runnables.py``): the start-up
probes of Ansible and of the API server, the API server's periodic check, the informers and the
controllers' workers. Each one's I/O happens in ``run``, never in its constructor.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence

from ansible_operator.core import Backoff
from ansible_operator.gocompat import format_go_duration
from ansible_operator.kube import ApiError, Informer, KubeClient, Unreachable, UntrustedServer
from ansible_operator.runner import AnsibleVersions, ColdRunner, Runner, WarmRunner, versions
from ansible_operator.runtime.control.controller import Controller
from ansible_operator.runtime.control.gate import RunGate
from ansible_operator.runtime.manager.readiness import API_CHECK_INTERVAL, Readiness
from ansible_operator.runtime.manager.runnables import Started
from ansible_operator.runtime.manager.shutdown import drain

log = logging.getLogger("cmd")


class StartupError(Exception):
    """Something the user must fix before the operator can start; one line."""


class AnsibleRuns:
    """The runs' Ansible, for as long as the operator runs. When the operator made the runner
    (``probed``): the warm runner's fork server started (its imports overlap the probe), then the
    Ansible the runs will use asked for its versions, once: too old an ansible-core, one without
    kubernetes.core, or a warm runner on another Python is refused in one line (RunnerError),
    and a probe that hangs is cut at the probe's timeout; ``found`` gets what was asked. At the
    stop, after every run has ended, a warm runner is closed: its server exits."""

    name = "ansible"

    def __init__(
        self,
        runner: Runner,
        found: Callable[[AnsibleVersions], None],
        *,
        probed: ColdRunner | None,  # the runner itself, when the operator made it
    ) -> None:
        self.runner = runner
        self.probed = probed
        self._found = found

    async def run(self, stop: asyncio.Event, started: Started) -> None:
        runner = self.runner
        try:
            if self.probed is not None:
                await self._probe(self.probed)
            started()
            await stop.wait()
        finally:
            if isinstance(runner, WarmRunner):
                runner.close()

    async def _probe(self, runner: ColdRunner) -> None:
        self._found(await start_ansible(runner))


async def start_ansible(runner: ColdRunner) -> AnsibleVersions:
    """A runner made ready: a warm runner's fork server started (its imports overlap the probe),
    then the Ansible its runs use asked for its versions (RunnerError: refused in one line)."""
    if isinstance(runner, WarmRunner):
        runner.start()
    ansible = await asyncio.to_thread(versions.probe_checked, runner.executable, runner.environ)
    if isinstance(runner, WarmRunner):
        runner.check_installation(ansible)
    return ansible


class ApiServerWait:
    """Go on only once the API server answers; an outage at start is waited out, one warning per
    try, for ``timeout`` seconds when it is set (then the start fails in one line). Credentials
    it rejects, or a server that is not the one the CA names, fail at once."""

    name = "api-server"

    def __init__(self, client: KubeClient, readiness: Readiness, *, timeout: float | None) -> None:
        self.client = client
        self.readiness = readiness
        self.timeout = timeout

    async def run(self, stop: asyncio.Event, started: Started) -> None:
        backoff = Backoff(base=1.0, cap=30.0)
        loop = asyncio.get_running_loop()
        deadline = None if self.timeout is None else loop.time() + self.timeout
        server = self.client.creds.server
        while not stop.is_set():
            delay = backoff.next_delay()
            if deadline is not None:
                delay = max(0.0, min(delay, deadline - loop.time()))
            try:
                await self.client.get("/version")
                self.readiness.api_answered()
                return
            except UntrustedServer as err:  # a wrong CA does not heal by waiting
                raise StartupError(str(err)) from err
            except (ApiError, Unreachable) as err:
                if isinstance(err, ApiError) and err.status == 401:  # nor do rejected credentials
                    raise StartupError(f"the API server rejected the credentials: {err}") from err
                why = str(err).removeprefix(f"GET {server}/version: ")
                if deadline is not None and loop.time() >= deadline:
                    raise StartupError(
                        f"the API server {server} did not answer within "
                        f"--startup-timeout={format_go_duration(self.timeout or 0)}: {why}"
                    ) from None
                log.warning(
                    "API server not reachable, waiting",
                    extra={"url": server, "reason": why, "retry_in": round(delay, 3)},
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)


class ApiServerCheck:
    """Tell readiness, every few seconds, whether the API server still answers."""

    name = "api-server-check"

    def __init__(self, client: KubeClient, readiness: Readiness) -> None:
        self.client = client
        self.readiness = readiness

    async def run(self, stop: asyncio.Event, started: Started) -> None:
        started()
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), API_CHECK_INTERVAL)
                return
            try:
                await asyncio.wait_for(self.client.get("/version"), API_CHECK_INTERVAL)
                self.readiness.api_answered()
            except (TimeoutError, ApiError, Unreachable, UntrustedServer) as err:
                self.readiness.api_failed()
                log.debug("API server check failed", extra={"error": str(err) or "timeout"})


class Informers:
    """Every informer of the watched kinds; readiness once each has listed its kind where it
    watches it (a kind that is not served, or that these credentials may not list, keeps the
    operator unready). An informer that crashes ends the operator."""

    name = "informers"

    def __init__(self, informers: Sequence[Informer], readiness: Readiness) -> None:
        self.informers = list(informers)
        self.readiness = readiness

    async def run(self, stop: asyncio.Event, started: Started) -> None:
        tasks = [asyncio.create_task(i.run()) for i in self.informers]
        confirming = asyncio.create_task(self._confirm())
        stopped = asyncio.create_task(stop.wait())
        started()
        try:
            done, _ = await asyncio.wait([stopped, *tasks], return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
        finally:
            for task in (stopped, confirming, *tasks):
                task.cancel()
            for task in (stopped, confirming, *tasks):
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _confirm(self) -> None:
        await asyncio.gather(*(informer.synced.wait() for informer in self.informers))
        self.readiness.watches_established()
        log.info("Watches established")


class Workers:
    """The controllers' workers; a stop drains them gracefully (``shutdown.drain``), while the
    informers, stopped after this group, still deliver events."""

    name = "controllers"

    def __init__(self, controllers: Sequence[Controller], gate: RunGate, *, grace: float) -> None:
        self.controllers = list(controllers)
        self.gate = gate
        self.grace = grace

    async def run(self, stop: asyncio.Event, started: Started) -> None:
        tasks = [asyncio.create_task(c.run()) for c in self.controllers]
        stopped = asyncio.create_task(stop.wait())
        started()
        try:
            done, _ = await asyncio.wait([stopped, *tasks], return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()  # a crashed worker ends the operator, loudly
            await drain(self.controllers, self.gate, timeout=self.grace)
        finally:
            for task in (stopped, *tasks):
                task.cancel()
            for task in (stopped, *tasks):
                with contextlib.suppress(asyncio.CancelledError):
                    await task
