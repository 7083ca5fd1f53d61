# Copyright: ansible-operator-py contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Controller-side implementation of operator_sdk.util.osdk_metric.

The operator listens on the controller's loopback, so the POST is made from the controller
process itself: a role that updates ten metrics per reconcile starts no module process for them.
"""

from __future__ import annotations

from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.operator_sdk.util.plugins.module_utils.metric import (
    ARGUMENT_SPEC,
    MUTUALLY_EXCLUSIVE,
    REQUIRED_ONE_OF,
    MetricPostError,
    address,
    post,
    request_body,
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        del tmp  # unused
        _, args = self.validate_argument_spec(
            argument_spec=ARGUMENT_SPEC,
            mutually_exclusive=MUTUALLY_EXCLUSIVE,
            required_one_of=REQUIRED_ONE_OF,
        )
        url = address(args)
        body = request_body(args)
        result.update(address=url, metric=body)
        if not self._play_context.check_mode:
            try:
                result["status"] = post(url, body)
            except MetricPostError as err:
                raise AnsibleActionFail(str(err), result=dict(result, changed=False)) from None
        result["changed"] = True
        return result
