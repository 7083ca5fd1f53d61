"""The operator project on disk: its watches file (``watches_file``: read, its playbooks and
roles found where upstream looks, parsed by ``core.parse_watches``) and each role's API
(``role_api``: the argument spec of the version its watch names, and ``meta/conversion.yml``).

Read by ``run``, ``plan``, ``generate crds``, ``new-api`` and the dev commands, so it sits below
them all and above ``core``, which does no I/O; not in ``runner``, which knows nothing of
Kubernetes kinds.
"""

from ansible_operator.project import role_api
from ansible_operator.project.role_api import RoleApiError, load_conversion
from ansible_operator.project.watches_file import load_watches, resolve_role, role_candidates

__all__ = [
    "RoleApiError",
    "load_conversion",
    "load_watches",
    "resolve_role",
    "role_api",
    "role_candidates",
]
