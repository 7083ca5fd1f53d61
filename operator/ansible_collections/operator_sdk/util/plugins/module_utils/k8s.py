# Copyright: ansible-operator-py contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""The Kubernetes client of the operator_sdk.util modules, borrowed from kubernetes.core.

Authentication is kubernetes.core's own (the same options, the same K8S_AUTH_* variables, the
same order: explicit credentials, kubeconfig, in-cluster, ~/.kube/config), so a role configures
both collections the same way; in an operator run K8S_AUTH_KUBECONFIG is already set. This file
only adds resource lookup and one-line API error messages.
"""

from __future__ import annotations

import copy
import traceback
from typing import Any

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.args_common import (
        AUTH_ARG_SPEC as _K8S_AUTH_ARG_SPEC,
    )
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import (
        get_api_client,
    )
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import (
        AnsibleK8SModule,
    )
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import (
        CoreException,
    )

    K8S_COLLECTION_ERROR = None
except ImportError:
    _K8S_AUTH_ARG_SPEC = {}
    K8S_COLLECTION_ERROR = traceback.format_exc()

try:
    from kubernetes.dynamic.exceptions import (
        DynamicApiError,
        ResourceNotFoundError,
        ResourceNotUniqueError,
    )
except ImportError:  # reported by AnsibleK8SModule's requirement check

    class DynamicApiError(Exception):  # type: ignore[no-redef]
        pass

    class ResourceNotFoundError(Exception):  # type: ignore[no-redef]
        pass

    class ResourceNotUniqueError(Exception):  # type: ignore[no-redef]
        pass


AUTH_ARG_SPEC: dict[str, Any] = copy.deepcopy(_K8S_AUTH_ARG_SPEC)


def new_module(argument_spec: dict[str, Any], **kwargs: Any) -> Any:
    """An AnsibleK8SModule (it checks for the kubernetes library); fails without kubernetes.core."""
    if K8S_COLLECTION_ERROR is not None:
        from ansible.module_utils.basic import AnsibleModule

        module = AnsibleModule(argument_spec=argument_spec, **kwargs)
        module.fail_json(
            msg="operator_sdk.util needs the kubernetes.core collection "
            "(ansible-galaxy collection install kubernetes.core)",
            exception=K8S_COLLECTION_ERROR,
        )
    return AnsibleK8SModule(argument_spec=argument_spec, **kwargs)


def client(module: Any) -> Any:
    """The dynamic client (kubernetes.core's K8SClient.client), or fail with one line."""
    try:
        return get_api_client(module=module)
    except CoreException as err:
        module.fail_json(msg=str(err))
    except Exception as err:  # kubeconfig unreadable, bad certificate paths, ...
        module.fail_json(msg=f"Could not create API client: {err}")
    return None


def find_resource(k8s: Any, module: Any, kind: str, api_version: str) -> Any:
    """The API resource for kind/apiVersion, or fail saying it is not served."""
    try:
        return k8s.resource(kind, api_version)
    except (ResourceNotFoundError, ResourceNotUniqueError):
        module.fail_json(
            msg=f"Kind {kind} is not served in {api_version} by the API server "
            "(is its CustomResourceDefinition installed?)"
        )
    except DynamicApiError as err:
        module.fail_json(msg=f"Discovery of {kind}.{api_version} failed: {error_text(err)}")
    return None


def error_text(err: Any) -> str:
    """`<code> <reason>: <the API server's message>` for an API error."""
    message = ""
    body = getattr(err, "body", None)
    if body:
        try:
            import json

            message = json.loads(body).get("message", "")
        except (ValueError, AttributeError, TypeError):
            message = str(body)
    status = getattr(err, "status", "")
    reason = getattr(err, "reason", "")
    head = f"{status} {reason}".strip()
    return f"{head}: {message}" if message else head or str(err)


def is_status(err: Any, code: int) -> bool:
    return getattr(err, "status", None) == code
