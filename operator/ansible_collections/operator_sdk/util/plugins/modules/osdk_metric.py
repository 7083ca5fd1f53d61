#!/usr/bin/python
# Copyright: ansible-operator-py contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Create or update a Prometheus metric served by the ansible-operator running this role.

The operator keeps the metric; this module only POSTs the request to its loopback endpoint. An
action plugin of the same name does the POST on the controller (no module process per call);
this file documents the interface and serves `ansible -m operator_sdk.util.osdk_metric`.
"""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: osdk_metric
short_description: Create or update a Prometheus metric of the ansible-operator
version_added: "0.1.0"
description:
  - Sends a metric update to the user-metrics endpoint of the ansible-operator that runs the
    role (C(POST /metrics)). The operator registers the metric on first use and serves it with
    its other metrics.
  - Exactly one of O(counter), O(gauge), O(histogram) or O(summary) must be given; an empty one
    (V({})) only registers the metric.
  - Within a type, the first operation given wins, in the operator's order (gauge
    V(increment), V(decrement), V(add), V(subtract), V(set), V(set_to_current_time)); zero
    values do nothing, so setting a gauge to V(0) leaves it as it is.
  - A metric keeps the type it was registered with; sending another type fails.
  - The work is done by an action plugin of the same name on the controller.
options:
  name:
    description: The metric's name (C([a-zA-Z_:][a-zA-Z0-9_:]*)). No labels.
    type: str
    required: true
  description:
    description: The metric's help text; the text of the first request is kept.
    type: str
    required: true
  address:
    description:
      - URL of the operator's user-metrics endpoint.
      - Defaults to the URL the operator publishes to its runs in
        E(ANSIBLE_OPERATOR_USER_METRICS_URL), else V(http://localhost:5050/metrics).
    type: str
  counter:
    description: A counter, which only goes up.
    type: dict
    suboptions:
      increment:
        description: Add 1.
        type: bool
      add:
        description: Add this value, which must not be negative.
        type: float
  gauge:
    description: A gauge, which goes up and down.
    type: dict
    suboptions:
      set:
        description: Set to this value (V(0) does nothing).
        type: float
      increment:
        description: Add 1.
        type: bool
      decrement:
        description: Subtract 1.
        type: bool
      add:
        description: Add this value.
        type: float
      subtract:
        description: Subtract this value.
        type: float
      set_to_current_time:
        description: Set to the current Unix time in seconds.
        type: bool
  histogram:
    description: A histogram with the default buckets (5ms to 10s).
    type: dict
    suboptions:
      observe:
        description: Record one observation (V(0) does nothing).
        type: float
  summary:
    description: A summary (count and sum).
    type: dict
    suboptions:
      observe:
        description: Record one observation (V(0) does nothing).
        type: float
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
author:
  - ansible-operator-py contributors
"""

EXAMPLES = r"""
- name: Register a counter (it starts at 0)
  operator_sdk.util.osdk_metric:
    name: backups_total
    description: Backups taken by the operator
    counter: {}

- name: Count a backup
  operator_sdk.util.osdk_metric:
    name: backups_total
    description: Backups taken by the operator
    counter:
      increment: true

- name: Report the size of the cache
  operator_sdk.util.osdk_metric:
    name: memcached_desired_replicas
    description: Replicas asked for by the last reconciled Memcached
    gauge:
      set: "{{ size }}"

- name: Record how long the backup took
  operator_sdk.util.osdk_metric:
    name: backup_duration_seconds
    description: Duration of backups
    histogram:
      observe: "{{ backup.delta_seconds }}"
"""

RETURN = r"""
status:
  description: The HTTP status the operator answered with.
  returned: success, except in check mode
  type: int
  sample: 200
address:
  description: The endpoint the request was sent to.
  returned: always
  type: str
  sample: http://127.0.0.1:5050/metrics
metric:
  description: The request body that was (or in check mode, would be) sent.
  returned: always
  type: dict
  sample: {"name": "backups_total", "description": "Backups", "counter": {"increment": true}}
changed:
  description: True when the metric was sent.
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.operator_sdk.util.plugins.module_utils.metric import (
    ARGUMENT_SPEC,
    MUTUALLY_EXCLUSIVE,
    REQUIRED_ONE_OF,
    MetricPostError,
    address,
    post,
    request_body,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        mutually_exclusive=MUTUALLY_EXCLUSIVE,
        required_one_of=REQUIRED_ONE_OF,
        supports_check_mode=True,
    )
    url = address(module.params)
    body = request_body(module.params)
    if module.check_mode:
        module.exit_json(changed=True, address=url, metric=body)
    try:
        status = post(url, body)
    except MetricPostError as err:
        module.fail_json(msg=str(err), address=url, metric=body)
    module.exit_json(changed=True, status=status, address=url, metric=body)


if __name__ == "__main__":
    main()
