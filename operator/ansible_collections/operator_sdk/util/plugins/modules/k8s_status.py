#!/usr/bin/python
# Copyright: ansible-operator-py contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Write keys and conditions into a resource's status subresource, reporting change truthfully.

The new status is computed from the current one first (module_utils/status.py) and only sent,
as a merge patch of /status, when it differs, so a role can call this on every reconcile and
see `changed: false` once the status is what it says.
"""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: k8s_status
short_description: Update the status of a Kubernetes resource
version_added: "0.1.0"
description:
  - Sets keys and conditions in the C(status) of a Kubernetes object through its C(status)
    subresource. Meant for Ansible roles that implement the controller of that resource, such as
    the roles run by ansible-operator.
  - Keys of O(status) are merged into the current status as a JSON merge patch does it (nested
    objects merged, lists and scalars replaced, a key set to V(null) removed); other keys are
    kept. Conditions are merged by C(type). The ansible-operator's own C(Running),
    C(Successful) and C(Failure) conditions are rewritten by the operator after each run.
  - A condition without C(lastTransitionTime) keeps the current one while its C(status) stays
    the same, and gets the current time when its C(status) changes.
  - Nothing is written, and RV(changed) is V(false), when the status already is what was asked.
  - Fails when the kind has no C(status) subresource.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
options:
  api_version:
    description: The apiVersion of the object, for example V(cache.example.com/v1alpha1).
    type: str
    default: v1
    aliases: [api, version]
  kind:
    description: The kind of the object.
    type: str
    required: true
  name:
    description: The name of the object.
    type: str
    required: true
  namespace:
    description: The namespace of the object; omit for cluster-scoped kinds.
    type: str
  status:
    description:
      - "Keys and values to set in the object's status. One of O(status) or O(conditions) is
        required."
      - May hold C(conditions), which are then validated and merged like O(conditions); giving
        conditions in both places is an error.
    type: dict
  conditions:
    description:
      - Conditions to set in C(status.conditions), merged by C(type) with those already there
        (unless O(force)).
      - "Fields: C(type) (required), C(status) (required; V(True), V(False) or V(Unknown);
        booleans are accepted), C(reason) (one CamelCase word), C(message),
        C(lastHeartbeatTime) and C(lastTransitionTime) (RFC3339), C(observedGeneration)."
      - One of O(status) or O(conditions) is required.
    type: list
    elements: dict
  force:
    description:
      - Replace the whole status with O(status) and O(conditions) using C(PUT) instead of
        merging into it.
    type: bool
    default: false
    aliases: [replace]
  replace_lists:
    description:
      - Accepted for compatibility with operator_sdk.util 0.5.0. Lists in O(status) always
        replace the current list (merge patch semantics), so this option changes nothing.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
requirements:
  - kubernetes >= 24.2.0
  - the kubernetes.core collection
author:
  - ansible-operator-py contributors
"""

EXAMPLES = r"""
- name: Report custom status fields on the resource being reconciled
  operator_sdk.util.k8s_status:
    api_version: cache.example.com/v1alpha1
    kind: Memcached
    name: "{{ ansible_operator_meta.name }}"
    namespace: "{{ ansible_operator_meta.namespace }}"
    status:
      replicas: "{{ size }}"
      endpoint: "{{ ansible_operator_meta.name }}-memcached:11211"

- name: Add a condition of our own (the operator never touches other condition types)
  operator_sdk.util.k8s_status:
    api_version: cache.example.com/v1alpha1
    kind: Memcached
    name: "{{ ansible_operator_meta.name }}"
    namespace: "{{ ansible_operator_meta.namespace }}"
    conditions:
      - type: Available
        status: "False"
        reason: PingFailed
        message: The service did not respond to a ping

- name: Remove a status key
  operator_sdk.util.k8s_status:
    api_version: cache.example.com/v1alpha1
    kind: Memcached
    name: "{{ ansible_operator_meta.name }}"
    namespace: "{{ ansible_operator_meta.namespace }}"
    status:
      endpoint: null
"""

RETURN = r"""
result:
  description:
    - The object after the update; the object as read when nothing changed. In check mode, the
      object as it would be.
  returned: success
  type: dict
  contains:
    apiVersion:
      description: The object's apiVersion.
      type: str
    kind:
      description: The object's kind.
      type: str
    metadata:
      description: Standard object metadata.
      type: dict
    spec:
      description: The object's spec.
      type: dict
    status:
      description: The object's status.
      type: dict
changed:
  description: Whether the status was (or, in check mode, would be) modified.
  returned: always
  type: bool
"""

import copy
from typing import Any

from ansible_collections.operator_sdk.util.plugins.module_utils.k8s import (
    AUTH_ARG_SPEC,
    DynamicApiError,
    client,
    error_text,
    find_resource,
    is_status,
    new_module,
)
from ansible_collections.operator_sdk.util.plugins.module_utils.status import (
    StatusError,
    now_rfc3339,
    status_patch,
)

CONFLICT_RETRIES = 5


def argument_spec() -> dict[str, Any]:
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    spec.update(
        api_version={"type": "str", "default": "v1", "aliases": ["api", "version"]},
        kind={"type": "str", "required": True},
        name={"type": "str", "required": True},
        namespace={"type": "str"},
        status={"type": "dict"},
        conditions={"type": "list", "elements": "dict"},
        force={"type": "bool", "default": False, "aliases": ["replace"]},
        replace_lists={"type": "bool", "default": False},
    )
    return spec


def _read(module: Any, resource: Any, name: str, namespace: str | None) -> dict[str, Any]:
    where = f"{resource.kind} {name}" + (f" in namespace {namespace}" if namespace else "")
    try:
        return dict(resource.get(name=name, namespace=namespace).to_dict())
    except DynamicApiError as err:
        if is_status(err, 404):
            module.fail_json(msg=f"{where} was not found")
        module.fail_json(msg=f"Failed to read {where}: {error_text(err)}")
    return {}


def main() -> None:
    module = new_module(
        argument_spec(),
        supports_check_mode=True,
        required_one_of=[("status", "conditions")],
    )
    params = module.params
    kind, api_version = params["kind"], params["api_version"]
    name, namespace = params["name"], params["namespace"]
    k8s = client(module)
    resource = find_resource(k8s, module, kind, api_version)
    if "status" not in (resource.subresources or {}):
        hint = ""
        if "." in api_version.partition("/")[0]:
            hint = "; add `subresources: {status: {}}` to its CustomResourceDefinition version"
        module.fail_json(msg=f"{resource.kind} ({api_version}) has no status subresource{hint}")
    status_api = resource.subresources["status"]

    for _attempt in range(CONFLICT_RETRIES):
        instance = _read(module, resource, name, namespace)
        current = instance.get("status") if isinstance(instance.get("status"), dict) else {}
        try:
            patch, new_status = status_patch(
                current,
                params["status"],
                params["conditions"],
                now=now_rfc3339(),
                replace=params["force"],
            )
        except StatusError as err:
            module.fail_json(msg=str(err))
        if new_status == current:
            module.exit_json(changed=False, result=instance)
        if module.check_mode:
            module.exit_json(changed=True, result=dict(instance, status=new_status))
        try:
            if params["force"]:
                body = dict(instance, status=new_status)
                result = status_api.replace(body=body, name=name, namespace=namespace)
            else:
                result = status_api.patch(
                    body={"status": patch},
                    name=name,
                    namespace=namespace,
                    content_type="application/merge-patch+json",
                )
        except DynamicApiError as err:
            if is_status(err, 409) and params["force"]:
                continue  # someone wrote in between: recompute from the fresh object
            module.fail_json(msg=f"Failed to update the status: {error_text(err)}")
        module.exit_json(changed=True, result=result.to_dict())
    module.fail_json(msg=f"The status of {name} kept changing under {CONFLICT_RETRIES} writes")


if __name__ == "__main__":
    main()
