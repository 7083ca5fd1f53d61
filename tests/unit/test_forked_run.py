"""A forked run's end as the warm runner sees it: the fork server's status line on the run's
connection wakes the waiter at once, however long it was prepared to wait."""

from __future__ import annotations

import asyncio
import os
import signal
import socket

from ansible_operator.runner.warm.client import ForkedRun


def run_and_server_end() -> tuple[ForkedRun, socket.socket]:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.setblocking(False)
    return ForkedRun(ours, pid=os.getpid(), marker="unused", buffer=b""), theirs


def test_a_running_run_is_waited_for_no_longer_than_asked() -> None:
    run, server = run_and_server_end()
    with server:
        asyncio.run(run.ended(0.01))
        assert run.returncode is None


def test_the_end_message_wakes_a_waiter_before_its_time_limit() -> None:
    run, server = run_and_server_end()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.call_soon(server.sendall, b'{"status": %d}\n' % (3 << 8))  # exited with 3
        # Prepared to wait 600 s; failing after 60 s means the message did not wake it.
        await asyncio.wait_for(run.ended(600), timeout=60)

    with server:
        asyncio.run(main())
    assert run.returncode == 3
    assert not run.server_lost


def test_an_end_message_in_pieces_is_read_whole() -> None:
    run, server = run_and_server_end()

    async def main() -> int:
        loop = asyncio.get_running_loop()
        loop.call_soon(server.sendall, b'{"status": ')
        loop.call_later(0.01, server.sendall, b"%d}\n" % signal.SIGKILL)  # killed
        return await asyncio.wait_for(run.wait(), timeout=60)

    with server:
        assert asyncio.run(main()) == -signal.SIGKILL
