# Copyright: ansible-operator-py contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Controller-side implementation of operator_sdk.util.requeue_after.

The module only echoes its argument, so running it as a module would cost a Python process per
call for nothing; this action plugin returns the same result without contacting the target.
"""

from __future__ import annotations

import re
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

TIME_PATTERN = re.compile(r"^[hms0-9]*$")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("time",))
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp  # unused
        _, args = self.validate_argument_spec(
            argument_spec={"time": {"type": "str", "required": True}},
        )
        period = args["time"]
        if not TIME_PATTERN.match(period):
            raise AnsibleActionFail(
                f"invalid time input {period!r}: use digits and h, m, s (e.g. 1h30m)"
            )
        result.update(changed=False, period=period)
        return result
