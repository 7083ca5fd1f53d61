"""What the warm runner's processes could not do warm, told to the operator.

The fork server, its zygotes and the runs' processes are forks the operator does not see into.
When one of them does something the slower way (a patch that failed to install, a module that
failed to preload, a run whose kind's zygote did not fit and so started a new ansible-playbook,
a kind given up on), it appends one JSON line to a file the operator's side made for that
(`path`, set by the fork server at start and inherited by every fork). The operator's side
(`Reader`, in client.py) reads the new lines after each run and hands each to its callback, which
logs the first of each reason and counts them all (runtime/manager/operator.py). Outside a
fork server (`dev molecule`'s ansible-playbook) a notice is one line on stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import dataclass

REASONS = {
    "patch-failed": "a warm patch failed to install and is off in this fork server",
    "preload-failed": "a module failed to import in the fork server; each run imports it",
    "zygote-error": "checking a run against its kind's zygote failed; the run started a new "
    "ansible-playbook",
    "zygote-misfit": "a run's configuration no longer matched its kind's zygote; the run started "
    "a new ansible-playbook",
    "zygote-refused": "a kind's zygote printed or failed while importing Ansible; that kind's runs "
    "import Ansible themselves",
    "zygote-given-up": "a kind's zygotes did not fit its runs three times; its runs import "
    "Ansible themselves",
}
"""Each reason a notice can give, with what it means for the runs."""

path: str | None = None
"""The notices file of this fork server and its forks (None: not in a fork server)."""


@dataclass(frozen=True)
class Notice:
    reason: str
    detail: str
    patch: str = ""  # the patch a "patch-failed" notice is about


def tell(reason: str, detail: str, patch: str = "") -> None:
    """Append one notice; never raises for want of the file (a notice must not fail the run
    that tells it)."""
    if reason not in REASONS:
        raise KeyError(f"no notice reason {reason!r}")
    if path is None:
        print(f"[warm runner] {reason}: {detail}", file=sys.stderr, flush=True)
        return
    line = json.dumps({"reason": reason, "detail": detail, "patch": patch}).encode() + b"\n"
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)  # one write of an appended line: lines never interleave
        finally:
            os.close(fd)


class Reader:
    """The notices appended to one file since the last read."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.offset = 0

    def read(self) -> list[Notice]:
        try:
            with open(self.file, "rb") as notices:
                notices.seek(self.offset)
                data = notices.read()
        except OSError:
            return []
        complete = data[: data.rfind(b"\n") + 1]  # a line being written is read next time
        self.offset += len(complete)
        found = []
        for line in complete.splitlines():
            try:
                entry = json.loads(line)
                if entry["reason"] not in REASONS:
                    continue
                found.append(
                    Notice(str(entry["reason"]), str(entry["detail"]), str(entry.get("patch", "")))
                )
            except (ValueError, KeyError, TypeError):
                continue  # a process killed mid-line; the rest still counts
        return found
