"""The versions a role declares beside its own, for ``generate crds``: schemas and the webhook.

A role's ``meta/argument_specs.yml`` is the spec of the version its watch names (the hub); its
``meta/conversion.yml`` declares the kind's other served versions and how their fields map to
the hub's (``core.conversion``). Each declared version becomes a version of the CRD with the
schema of its options, the hub is the storage version, and the CRD's ``spec.conversion`` sends
conversions to the operator's ``/convert`` through the Service ``webhook-service`` (kustomize
names it; a locally run operator points it at its loopback URL, and fills in the CA bundle when
the certificate is its own).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ansible_operator.core import Watch
from ansible_operator.project import role_api
from ansible_operator.scaffold import crds

WEBHOOK_SERVICE = {"namespace": "system", "name": "webhook-service", "path": "/convert"}
STANZA = {
    "strategy": "Webhook",
    "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"service": WEBHOOK_SERVICE},
    },
}


@dataclass(frozen=True)
class Declared:
    """What a conversion file adds to a kind's CRD."""

    sources: list[crds.VersionSource]  # one per declared version
    storage: str  # the hub
    stanza: Mapping[str, Any]  # spec.conversion


def declared(
    watch: Watch, role_name: str, role_dir: Path, entry: Mapping[str, Any], shown: str
) -> Declared | None:
    """The versions `role_dir`'s conversion file declares for `watch`'s kind (None: no file);
    RoleApiError when the file cannot work, naming it (`shown`, as the user writes paths)."""
    declaration = role_api.load_conversion(watch, role_dir, entry, shown)
    if declaration is None:
        return None
    sources = [
        crds.VersionSource(
            version=spoke.version,
            role_name=role_name,
            spec_path=shown,
            entry={"short_description": entry.get("short_description"), "options": spoke.options},
            camel_case=watch.snake_case_parameters,
            manage_status=watch.manage_status,
            allow_reserved_vars=watch.allow_reserved_vars,
        )
        for spoke in declaration.spokes.values()
    ]
    return Declared(sources=sources, storage=declaration.hub, stanza=STANZA)
