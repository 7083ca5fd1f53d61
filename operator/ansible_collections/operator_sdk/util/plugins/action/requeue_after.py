# Copyright: ansible-operator-py contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Controller-side implementation of operator_sdk.util.requeue_after.

The module only echoes its argument, so running it as a module would cost a Python process per
call for nothing; this action plugin returns the same result without contacting the target.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.operator_sdk.util.plugins.module_utils.requeue import (
    ARGUMENT_SPEC,
    time_error,
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("time",))
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp  # unused
        _, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        period = args["time"]
        error = time_error(period)
        if error:
            raise AnsibleActionFail(error)
        result.update(changed=False, period=period)
        return result
