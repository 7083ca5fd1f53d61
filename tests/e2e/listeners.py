"""Who listens on a TCP port, read from /proc: the owning processes, not a connect attempt.

A connect to a free loopback port in the ephemeral range can succeed against itself (TCP
simultaneous open), and any process may bind a port a stopped cluster freed, so "something
answers" proves nothing about which process holds the port.
"""

from __future__ import annotations

import os
from pathlib import Path

LISTEN = "0A"


def _listening_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == LISTEN and int(local.rsplit(":", 1)[1], 16) == port:
                inodes.add(inode)
    return inodes


def listener_command_lines(port: int) -> list[str]:
    """The command lines of the processes holding a listening socket on ``port``."""
    wanted = {f"socket:[{inode}]" for inode in _listening_inodes(port)}
    if not wanted:
        return []
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") in wanted for fd in fds):
                raw = Path(f"/proc/{pid}/cmdline").read_bytes()
                found.append(raw.replace(b"\0", b" ").decode(errors="replace").strip())
        except OSError:  # the process ended or its fds are not ours to read
            continue
    return found
