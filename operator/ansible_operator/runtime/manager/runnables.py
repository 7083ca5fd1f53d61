"""The manager of runnables: every part of ``ansible-operator run``, started in one order and
stopped in the reverse one.

controller-runtime's shape: a ``Runnable`` runs until it is told to stop (its ``Start(ctx)``),
runnables come in groups started one after the other (its HTTP servers, webhooks, caches,
others), and the groups whose runnables ``need_leader_election`` run only while the elector
says so (``LeaderElectionRunnable``). Here the elector is a coroutine that runs the elected
groups when and while it may: always, while holding the leader's Lease, or while holding shards.

A group is started once each of its runnables has called ``started()`` or returned (a one-shot
runnable, a start-up probe say, is done when it returns). A runnable that raises ends the
operator: the manager stops every group started so far, newest first, and raises the first
error. Stopping a group sets its own stop event and waits for its runnables to return, so a
group stops only after every group started after it has stopped: the controllers drain before
the informers that feed them stop, and those before the servers the runs talk through.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger("manager")

Started = Callable[[], None]
Act = Callable[[], Coroutine[Any, Any, None]]
# Runs act when and while this replica may (the leader's Lease, its shards); returns after act
# has returned, or without calling it when stop is set first.
Elector = Callable[[asyncio.Event, Act], Awaitable[None]]


class Runnable(Protocol):
    name: str

    async def run(self, stop: asyncio.Event, started: Started) -> None:
        """Run until ``stop`` is set, calling ``started()`` once the next group may start;
        return once stopped. Returning early is fine (a one-shot's end); raising ends the
        operator."""


class Service(Protocol):
    async def start(self) -> Any: ...

    async def stop(self) -> None: ...


class Served:
    """A server with ``start()`` (listening when it returns) and ``stop()`` as a runnable."""

    def __init__(self, name: str, service: Service) -> None:
        self.name = name
        self.service = service

    async def run(self, stop: asyncio.Event, started: Started) -> None:
        await self.service.start()
        try:
            started()
            await stop.wait()
        finally:
            await self.service.stop()


class Closed:
    """Something that starts nothing and is closed at the stop (the API client's connections)."""

    def __init__(self, name: str, close: Callable[[], Awaitable[None]]) -> None:
        self.name = name
        self._close = close

    async def run(self, stop: asyncio.Event, started: Started) -> None:
        started()
        try:
            await stop.wait()
        finally:
            await self._close()


@dataclass(frozen=True)
class Group:
    name: str
    runnables: Sequence[Runnable]
    need_leader_election: bool = False


async def always(stop: asyncio.Event, act: Act) -> None:
    """The elector without an election: act at once."""
    if not stop.is_set():
        await act()


class _Running:
    """A started group: its stop event and its runnables' tasks."""

    def __init__(self, group: Group) -> None:
        self.group = group
        self.stop = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []


class Manager:
    def __init__(
        self,
        groups: Sequence[Group],
        *,
        elector: Elector = always,
        on_elected: Callable[[], None] = lambda: None,
    ) -> None:
        self.groups = list(groups)
        self._elector = elector
        self._on_elected = on_elected
        self._error: BaseException | None = None
        self._stop = asyncio.Event()

    @property
    def stop_order(self) -> list[str]:
        """The groups' names in the order a stop takes them."""
        return [group.name for group in reversed(self.groups)]

    async def run(self, stop: asyncio.Event) -> None:
        """Start every group, then wait for ``stop`` (or a runnable's failure, which sets it)
        and stop them in the reverse order; raise the first failure."""
        self._stop = stop
        everyone = [g for g in self.groups if not g.need_leader_election]
        elected = [g for g in self.groups if g.need_leader_election]
        running: list[_Running] = []
        try:
            for group in everyone:
                if stop.is_set():
                    break
                running.append(await self._start(group))
            if elected and not stop.is_set():
                await self._elector(stop, lambda: self._act(elected))
            await stop.wait()
        finally:
            await self._stop_all(running)
        if self._error is not None:
            raise self._error

    async def _act(self, groups: Sequence[Group]) -> None:
        """The elected groups, from their start until ``stop``; cancelled (the Lease lost),
        their runnables are cancelled rather than asked to stop."""
        self._on_elected()
        running: list[_Running] = []
        try:
            for group in groups:
                if self._stop.is_set():
                    break
                running.append(await self._start(group))
            await self._stop.wait()
        except asyncio.CancelledError:
            for started in running:
                for task in started.tasks:
                    task.cancel()
            raise
        finally:
            await self._stop_all(running)

    async def _start(self, group: Group) -> _Running:
        running = _Running(group)
        waits: list[asyncio.Task[Any]] = []
        for runnable in group.runnables:
            up = asyncio.Event()
            task = asyncio.create_task(
                self._guard(runnable, running.stop, up.set), name=f"{group.name}/{runnable.name}"
            )
            running.tasks.append(task)
            waits.append(asyncio.create_task(_first(up, task)))
        # Until every runnable is up or the manager stops; no gather, whose cancellation would
        # end in an exception nobody retrieves (logged by asyncio when collected).
        stopped: asyncio.Task[Any] = asyncio.create_task(self._stop.wait())
        pending = set(waits)
        try:
            while pending and not stopped.done():
                _, pending = await asyncio.wait(
                    {*pending, stopped}, return_when=asyncio.FIRST_COMPLETED
                )
                pending.discard(stopped)
        finally:
            for waiting in (*waits, stopped):
                waiting.cancel()
        log.debug("Started", extra={"group": group.name})
        return running

    async def _guard(self, runnable: Runnable, stop: asyncio.Event, started: Started) -> None:
        try:
            await runnable.run(stop, started)
        except asyncio.CancelledError:
            raise
        except BaseException as err:
            if self._error is None:
                self._error = err
            self._stop.set()
        finally:
            started()  # a one-shot's end lets the next group start

    async def _stop_all(self, running: list[_Running]) -> None:
        """Stop the started groups, newest first, each one's runnables together."""
        while running:
            started = running.pop()
            started.stop.set()
            for task in started.tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            log.debug("Stopped", extra={"group": started.group.name})


async def _first(event: asyncio.Event, task: asyncio.Task[None]) -> None:
    """Wait for ``event`` or the end of ``task``, whichever comes first."""
    waiting = asyncio.create_task(event.wait())
    try:
        await asyncio.wait([waiting, task], return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
