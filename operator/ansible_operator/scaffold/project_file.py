"""The Operator SDK's ``PROJECT`` file: what ``init`` writes and ``new-api`` extends.

kubebuilder's format (version 3, the Ansible layout): the domain, the project's name and one
entry per kind. It is written from data with sorted keys, as kubebuilder does, so ``init`` and
every ``new-api`` after it produce the same bytes for the same kinds.
"""

from __future__ import annotations

from typing import Any

import yaml

LAYOUT = "ansible.sdk.operatorframework.io/v1"
HEADER = "# Operator SDK PROJECT file: written by `ansible-operator init`, kinds by `new-api`.\n"


class ProjectFileError(Exception):
    """A PROJECT file new-api cannot extend; one line."""


def render(domain: str, project_name: str) -> str:
    return _dump({"domain": domain, "layout": [LAYOUT], "projectName": project_name})


def with_resource(text: str, group: str, version: str, kind: str) -> str:
    """`text` (a PROJECT file) with the kind of full API group `group` added to its resources."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ProjectFileError(f"PROJECT is not YAML: {str(err).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ProjectFileError("PROJECT: top level must be a mapping")
    short, _, domain = group.partition(".")
    resource: dict[str, Any] = {
        "api": {"crdVersion": "v1", "namespaced": True},
        "domain": domain,
        "group": short,
        "kind": kind,
        "version": version,
    }
    resources = data.get("resources") or []
    if not isinstance(resources, list):
        raise ProjectFileError("PROJECT: resources must be a list")
    data["resources"] = [*resources, resource]
    return _dump(data)


def domain_of(text: str) -> str | None:
    """The `domain` of a PROJECT file, when it has one."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    domain = data.get("domain") if isinstance(data, dict) else None
    return str(domain) if domain else None


def _dump(data: dict[str, Any]) -> str:
    return HEADER + yaml.safe_dump({**data, "version": "3"}, sort_keys=True)
