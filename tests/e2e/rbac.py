"""RBAC objects the tests grant ServiceAccounts with."""

from __future__ import annotations


def account_binding(name: str, role_kind: str, role: str, account: str, namespace: str) -> dict:
    """A RoleBinding or ClusterRoleBinding body, as ``role_kind`` says (``Role`` or
    ``ClusterRole``), named ``name``, granting ``role`` to ServiceAccount ``namespace/account``."""
    kind = "ClusterRoleBinding" if role_kind == "ClusterRole" else "RoleBinding"
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }
