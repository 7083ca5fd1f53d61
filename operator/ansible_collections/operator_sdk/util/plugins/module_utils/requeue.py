# Copyright: ansible-operator-py contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""requeue_after's argument: its spec and the check of its time.

Shared by the module and the action plugin of the same name, so both accept exactly the same
times and refuse the others with the same message.
"""

from __future__ import annotations

import re

ARGUMENT_SPEC = {"time": {"type": "str", "required": True}}
TIME_PATTERN = re.compile(r"^[hms0-9]*$")


def time_error(period: str) -> str | None:
    """Why ``period`` is not a time requeue_after accepts; None when it is."""
    if TIME_PATTERN.match(period):
        return None
    return f"invalid time input {period!r}: use digits and h, m, s (e.g. 1h30m)"
