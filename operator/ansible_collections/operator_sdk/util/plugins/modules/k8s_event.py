#!/usr/bin/python
# Copyright: ansible-operator-py contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Post a core/v1 Event, or count another occurrence of an existing one of the same name.

Events are deduplicated the way kubelet and controllers do it: the same name and reason again
increments `count` and moves `lastTimestamp`, keeping `firstTimestamp`, so a role that emits
the same Event on every reconcile does not flood the namespace.
"""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: k8s_event
short_description: Create Kubernetes Events
version_added: "0.1.0"
description:
  - Creates a core/v1 Event, typically about the resource being reconciled, so that it shows
    in C(kubectl describe) and C(kubectl get events).
  - When an Event of that name already exists with the same O(reason), it is patched instead;
    C(count) goes up by one, C(lastTimestamp) moves to now and C(firstTimestamp) is kept. With
    another reason, the Event is overwritten and its count starts again at 1.
  - The C(uid) of O(involvedObject) is looked up, so the Event is attached to that object.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
options:
  state:
    description:
      - V(present) creates or updates the Event, V(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
  name:
    description: The name of the Event.
    type: str
    required: true
  namespace:
    description: The namespace of the Event.
    type: str
    required: true
  message:
    description: A human-readable description of what happened.
    type: str
    required: true
  reason:
    description: A short, machine-understandable reason, in CamelCase by convention.
    type: str
    required: true
  type:
    description: The type of the Event.
    type: str
    choices: [Normal, Warning]
    default: Normal
  reportingComponent:
    description: The controller that emitted the Event, for example V(cache.example.com/memcached).
    type: str
  source:
    description: The component reporting the Event.
    type: dict
    suboptions:
      component:
        description: The component's name.
        type: str
        required: true
  involvedObject:
    description: The object the Event is about.
    type: dict
    suboptions:
      apiVersion:
        description: The object's apiVersion.
        type: str
        required: true
      kind:
        description: The object's kind.
        type: str
        required: true
      name:
        description: The object's name.
        type: str
        required: true
      namespace:
        description: The object's namespace; defaults to O(namespace) for namespaced kinds.
        type: str
  appendTimestamp:
    description:
      - Append a timestamp to O(name), so every call creates a new Event instead of counting
        occurrences of one.
    type: bool
    default: false
  merge_type:
    description:
      - Accepted for compatibility with operator_sdk.util 0.5.0; existing Events are always
        updated with a JSON merge patch.
    type: list
    elements: str
    choices: [json, merge, strategic-merge]
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
- name: Tell the CR's owner that the backend was scaled
  operator_sdk.util.k8s_event:
    name: "{{ ansible_operator_meta.name }}-scaled"
    namespace: "{{ ansible_operator_meta.namespace }}"
    reason: Scaled
    message: "Scaled the memcached Deployment to {{ size }} replicas"
    reportingComponent: cache.example.com/memcached
    source:
      component: memcached-operator
    involvedObject:
      apiVersion: cache.example.com/v1alpha1
      kind: Memcached
      name: "{{ ansible_operator_meta.name }}"
      namespace: "{{ ansible_operator_meta.namespace }}"

- name: A warning that is a new Event every time
  operator_sdk.util.k8s_event:
    name: backup-failed
    namespace: "{{ ansible_operator_meta.namespace }}"
    type: Warning
    reason: BackupFailed
    message: "{{ backup_result.msg }}"
    appendTimestamp: true
"""

RETURN = r"""
result:
  description: The Event as stored (for V(absent), the deleted Event, or nothing).
  returned: success
  type: dict
  contains:
    metadata:
      description: Name, namespace and other metadata of the Event.
      type: dict
    count:
      description: How many times this Event has occurred.
      type: int
    firstTimestamp:
      description: When the Event first occurred.
      type: str
    lastTimestamp:
      description: When the Event last occurred.
      type: str
    reason:
      description: The reason given.
      type: str
    message:
      description: The message given.
      type: str
    type:
      description: Normal or Warning.
      type: str
    involvedObject:
      description: The object the Event is about, with its uid when it exists.
      type: dict
changed:
  description: Whether an Event was created, updated or deleted.
  returned: always
  type: bool
"""

import copy
import time
from typing import Any

from ansible_collections.operator_sdk.util.plugins.module_utils.k8s import (
    AUTH_ARG_SPEC,
    DynamicApiError,
    ResourceNotFoundError,
    ResourceNotUniqueError,
    client,
    error_text,
    find_resource,
    is_status,
    new_module,
)
from ansible_collections.operator_sdk.util.plugins.module_utils.status import now_rfc3339


def argument_spec() -> dict[str, Any]:
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    spec.update(
        state={"type": "str", "choices": ["present", "absent"], "default": "present"},
        name={"type": "str", "required": True},
        namespace={"type": "str", "required": True},
        message={"type": "str", "required": True},
        reason={"type": "str", "required": True},
        type={"type": "str", "choices": ["Normal", "Warning"], "default": "Normal"},
        reportingComponent={"type": "str"},
        source={
            "type": "dict",
            "options": {"component": {"type": "str", "required": True}},
        },
        involvedObject={
            "type": "dict",
            "options": {
                "apiVersion": {"type": "str", "required": True},
                "kind": {"type": "str", "required": True},
                "name": {"type": "str", "required": True},
                "namespace": {"type": "str"},
            },
        },
        appendTimestamp={"type": "bool", "default": False},
        merge_type={
            "type": "list",
            "elements": "str",
            "choices": ["json", "merge", "strategic-merge"],
        },
    )
    return spec


def _involved_object(module: Any, k8s: Any, given: dict[str, Any] | None) -> dict[str, Any]:
    """The involved object reference, completed with uid and resourceVersion when it exists.

    Without one, the reference holds only the Event's namespace: the API server refuses a
    core/v1 Event whose involvedObject.namespace differs from its own (outside `default`).
    """
    ref = {k: v for k, v in (given or {}).items() if v is not None}
    ref.setdefault("namespace", module.params["namespace"])
    if not given:
        return ref
    try:
        resource = k8s.resource(ref["kind"], ref["apiVersion"])
    except (ResourceNotFoundError, ResourceNotUniqueError):
        return ref
    if not resource.namespaced:
        ref.pop("namespace", None)
    try:
        obj = resource.get(name=ref["name"], namespace=ref.get("namespace")).to_dict()
    except DynamicApiError:
        return ref  # not there (yet): the Event still names it
    ref["uid"] = obj["metadata"]["uid"]
    ref["resourceVersion"] = obj["metadata"].get("resourceVersion")
    return ref


def main() -> None:
    module = new_module(argument_spec(), supports_check_mode=True)
    params = module.params
    namespace = params["namespace"]
    name = params["name"]
    if params["appendTimestamp"]:
        name = f"{name}.{time.time_ns():x}"  # a valid name suffix, unique per call, like client-go
    k8s = client(module)
    events = find_resource(k8s, module, "Event", "v1")

    try:
        existing = events.get(name=name, namespace=namespace).to_dict()
    except DynamicApiError as err:
        if not is_status(err, 404):
            module.fail_json(msg=f"Failed to read Event {name}: {error_text(err)}")
        existing = None

    if params["state"] == "absent":
        if existing is None:
            module.exit_json(changed=False, result={})
        if not module.check_mode:
            try:
                events.delete(name=name, namespace=namespace)
            except DynamicApiError as err:
                if not is_status(err, 404):
                    module.fail_json(msg=f"Failed to delete Event {name}: {error_text(err)}")
        module.exit_json(changed=True, result=existing)

    now = now_rfc3339()
    event: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "message": params["message"],
        "reason": params["reason"],
        "type": params["type"],
        "count": 1,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "involvedObject": _involved_object(module, k8s, params["involvedObject"]),
    }
    if params["reportingComponent"]:
        event["reportingComponent"] = params["reportingComponent"]
    if params["source"]:
        event["source"] = params["source"]
    if existing is not None and existing.get("reason") == params["reason"]:
        event["count"] = int(existing.get("count") or 1) + 1
        event["firstTimestamp"] = existing.get("firstTimestamp") or now

    if module.check_mode:
        module.exit_json(changed=True, result=event)
    try:
        if existing is None:
            result = events.create(body=event, namespace=namespace)
        else:
            result = events.patch(
                body=event,
                name=name,
                namespace=namespace,
                content_type="application/merge-patch+json",
            )
    except DynamicApiError as err:
        module.fail_json(msg=f"Failed to post Event {name}: {error_text(err)}")
    module.exit_json(changed=True, result=result.to_dict())


if __name__ == "__main__":
    main()
