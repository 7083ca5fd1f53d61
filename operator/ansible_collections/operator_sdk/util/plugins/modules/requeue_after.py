#!/usr/bin/python
# Copyright: ansible-operator-py contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Return the requested requeue period; the operator schedules the next reconcile from it."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: requeue_after
short_description: Ask the operator to reconcile the current resource again after a delay
version_added: "0.1.0"
description:
  - Returns O(time) as RV(period). The ansible-operator reads RV(period) from the task's result
    event and schedules the next reconciliation of the resource being reconciled after that delay.
  - The rest of the play still runs and the reconciliation completes normally (status conditions,
    finalizer removal). Only the delay before the next run changes.
  - When several C(requeue_after) tasks run in one reconciliation, the first one wins.
  - The work is done by an action plugin of the same name on the controller, so no module process
    is started.
  - Can be called as C(requeue_after) when C(operator_sdk.util) is in the play's or role's
    C(collections) list, as the Operator SDK scaffold sets up.
options:
  time:
    description:
      - Delay before the next reconciliation, as a duration made of hours, minutes and seconds,
        for example V(30s), V(5m), V(1h30m).
      - Only digits and the letters V(h), V(m) and V(s) are accepted (C(^[hms0-9]*$)).
    type: str
    required: true
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author:
  - ansible-operator-py contributors
"""

EXAMPLES = r"""
- name: Reconcile this resource again in 30 seconds
  operator_sdk.util.requeue_after:
    time: 30s

- name: Poll a slow external system every five minutes until it is ready
  operator_sdk.util.requeue_after:
    time: 5m
  when: not backend_ready

- name: Short name, with operator_sdk.util in the play's collections list
  requeue_after:
    time: 1h
"""

RETURN = r"""
period:
  description: The requested delay, exactly as given in O(time).
  returned: success
  type: str
  sample: 30s
changed:
  description: Always false; requeueing changes nothing on the target.
  returned: always
  type: bool
  sample: false
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.operator_sdk.util.plugins.module_utils.requeue import (
    ARGUMENT_SPEC,
    time_error,
)


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    period = module.params["time"]
    error = time_error(period)
    if error:
        module.fail_json(msg=error)
    module.exit_json(changed=False, period=period)


if __name__ == "__main__":
    main()
