"""``ansible-operator runs ui``: the runs page (``runs.page``) served on this machine
from the runs of every replica, merged, as ``kubectl proxy`` serves the API: a browser sends
no bearer token, so this server asks the replicas itself, with the user's own credentials
(``--token``, or the kubeconfig's), and the page works where the operator's own answers a
browser 401 (``--metrics-require-rbac``).

The page is the operator's renderer over another source: ``MergedRuns`` is one page load's
look at the replicas, found again (the Pods listed, their port-forwards opened, for as long as
the load lasts) and asked afresh at each load through ``runs_client`` (``answering`` says
which answer and why the others did not, ``summaries`` merges a CR's runs, ``record`` reads one
run), so the command's lists and the page merge runs in one place. It listens on loopback
unless told otherwise and serves until SIGINT or SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from aiohttp import web

from ansible_operator.dev import runs_client
from ansible_operator.dev.runs_client import Kind, Reach, Replica, Resource, RunsError
from ansible_operator.runs import page as runs_page

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class MergedRuns:
    """The runs of the replicas that answered one look (``ask``), merged: every CR any of them
    has runs of, each run once, newest first, each naming the replica that ran it. A
    ``runs_page.RunsSource``."""

    def __init__(
        self,
        answered: Sequence[tuple[str, Replica]],
        overviews: Sequence[dict[str, Any]],
        failures: Sequence[RunsError],
    ) -> None:
        self.answered = list(answered)  # (its name, the replica)
        self.overviews = list(overviews)  # their GET /runs
        self.origin = runs_page.Origin(
            tuple(name for name, _ in answered), tuple(map(str, failures)), merged=True
        )

    @classmethod
    async def ask(cls, replicas: Sequence[Replica]) -> MergedRuns:
        """Every replica asked ``GET /runs`` afresh; Unavailable when none answers."""
        overviews: dict[int, dict[str, Any]] = {}

        def keeping(index: int, replica: Replica) -> Replica:
            async def get(path: str) -> Any:
                answer = await replica.get(path)
                overviews[index] = answer  # answering asks each replica for /runs only
                return answer

            return Replica(get)

        try:
            _, _, failures = await runs_client.answering(
                [keeping(index, replica) for index, replica in enumerate(replicas)]
            )
        except RunsError as err:
            raise runs_page.Unavailable(f"no replica answered: {err}") from None
        answered = [
            (str(overviews[index].get("replica") or "-"), replicas[index])
            for index in sorted(overviews)
        ]
        return cls(answered, [overviews[index] for index in sorted(overviews)], failures)

    async def kinds(self) -> list[dict[str, Any]]:
        return runs_client.merged_kinds(self.overviews)

    async def runs(
        self, group: str, version: str, kind: str, namespace: str, name: str
    ) -> list[dict[str, Any]]:
        resource = _resource(group, version, kind, namespace, name)
        replicas = [replica for _, replica in self.answered]
        return await _read(runs_client.summaries(replicas, [resource.path]))

    async def record(
        self, group: str, version: str, kind: str, namespace: str, name: str, run_id: str
    ) -> dict[str, Any] | None:
        listed = await self.runs(group, version, kind, namespace, name)
        run = next((run for run in listed if run["id"] == run_id), None)
        if run is None:
            return None
        # From the replica that ran it; replicas sharing a disk (two on one machine) have it too.
        ran_it = sorted(self.answered, key=lambda pair: pair[0] != run.get("replica"))
        resource = _resource(group, version, kind, namespace, name)
        return await _read(runs_client.record([r for _, r in ran_it], resource, run_id))


def _resource(group: str, version: str, kind: str, namespace: str, name: str) -> Resource:
    return Resource(Kind(f"{group}/{version}", kind), namespace, name)


async def _read(answer: Awaitable[Any]) -> Any:
    try:
        return await answer
    except RunsError as err:  # a replica that answered GET /runs and no longer does
        raise runs_page.Unavailable(str(err)) from None


def sources(reach: Reach) -> runs_page.Sources:
    """Each page load's source: the replicas found (``reach``) and asked afresh."""

    @contextlib.asynccontextmanager
    async def look() -> AsyncIterator[runs_page.RunsSource]:
        try:
            async with reach() as replicas:
                source = await MergedRuns.ask(replicas)
                yield source
        except RunsError as err:  # finding them: no Pod, no API server
            raise runs_page.Unavailable(str(err)) from None

    return look


@contextlib.asynccontextmanager
async def serving(reach: Reach, address: str, port: int) -> AsyncIterator[str]:
    """The merged page served at ``address:port`` (port 0: a free one) while in the context;
    its URL. A RunsError when it cannot listen there."""

    async def home(_: web.Request) -> web.Response:
        raise web.HTTPFound(runs_page.PATH)

    app = web.Application()
    app.router.add_get(runs_page.PATH, runs_page.handler(sources(reach)))
    app.router.add_get("/", home)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, address, port).start()
        except OSError as err:
            reason = os.strerror(err.errno) if err.errno and err.errno > 0 else str(err)
            raise RunsError(f"cannot serve the runs page on {address}:{port}: {reason}") from None
        bound = runner.addresses[0][1]
        host = f"[{address}]" if ":" in address else address
        yield f"http://{host}:{bound}{runs_page.PATH}"
    finally:
        await runner.cleanup()


async def serve(
    reach: Reach, found: int, address: str, port: int, *, say: Callable[[str], None]
) -> int:
    """Serve the merged page until SIGINT or SIGTERM, having said where with ``say`` (and how
    many replicas were ``found`` at the start); 0."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    async with serving(reach, address, port) as url:
        for number in STOP_SIGNALS:
            loop.add_signal_handler(number, stop.set)
        try:
            say(f"Serving the runs page of {found} replica(s) at {url} (Ctrl-C to stop)")
            await stop.wait()
        finally:
            for number in STOP_SIGNALS:
                loop.remove_signal_handler(number)
    return 0
