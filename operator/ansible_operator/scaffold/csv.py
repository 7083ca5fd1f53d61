"""The base ClusterServiceVersion of ``config/manifests/bases``: what OLM shows of the operator.

The base is the author's file: ``generate kustomize manifests`` writes it once with
operator-sdk's defaults, and afterwards only brings it up to date with the project, keeping
every field an author set (operator-sdk #4356: regeneration overwrote hand edits). What the
project decides is recomputed: the owned CRDs (one entry per served version of each CRD), each
entry's descriptors for options that are new, and the CRs' ``resources`` when the author gave
none. Two claims only ever go up: ``capabilities`` and ``minKubeVersion`` are the higher of the
author's and what the project shows (see ``capability`` and ``min_kube_version``). A CRD whose
conversion is a webhook leaves AllNamespaces the one install mode, as OLM requires.
"""

from __future__ import annotations

import base64
import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CSV_API_VERSION = "operators.coreos.com/v1alpha1"
# OLM's capability levels, lowest first (operator-framework/api's StandardCapabilitiesValidator).
CAPABILITIES = (
    "Basic Install",
    "Seamless Upgrades",
    "Full Lifecycle",
    "Deep Insights",
    "Auto Pilot",
)
# The Kubernetes release a CRD feature needs: CEL validation rules are on by default from 1.25;
# apiextensions.k8s.io/v1 CRDs exist from 1.16.
MIN_KUBE_CEL = "1.25.0"
MIN_KUBE_CRD_V1 = "1.16.0"
# The runtime takes WATCH_NAMESPACE as one namespace, a comma-separated list, or empty for all.
INSTALL_MODES = ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")

# A new base's icon, for the author to replace: OperatorHub's validator refuses an empty one.
ICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">'
    '<circle cx="32" cy="32" r="30" fill="#ee0000"/></svg>'
)
CONDITIONS = "urn:alm:descriptor:io.kubernetes.conditions"
_UI = "urn:alm:descriptor:com.tectonic.ui:"
_BY_TYPE = {"boolean": "booleanSwitch", "integer": "number", "number": "number", "string": "text"}


@dataclass(frozen=True)
class Resource:
    """A kind of object the operator makes for a CR (the CSV's `resources` of an owned CRD)."""

    kind: str
    version: str  # the API version as written: `v1`, `apps/v1`


def display_name(name: str) -> str:
    """`memcached-operator` → `Memcached Operator`; `forceRedeploy` → `Force Redeploy`."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("-", " ").replace("_", " ")
    return " ".join(word[:1].upper() + word[1:] for word in spaced.split())


def new_base(project_name: str) -> dict[str, Any]:
    """A base for a project that has none, with operator-sdk's placeholders for the author."""
    title = display_name(project_name)
    return {
        "apiVersion": CSV_API_VERSION,
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": f"{project_name}.v0.0.0",
            "namespace": "placeholder",
            "annotations": {"alm-examples": "[]", "capabilities": CAPABILITIES[0]},
        },
        "spec": {
            "displayName": title,
            "description": f"{title} description. TODO.",
            "maturity": "alpha",
            "keywords": [project_name],
            "links": [{"name": title, "url": f"https://{project_name}.domain"}],
            "icon": [
                {
                    "base64data": base64.b64encode(ICON_SVG.encode()).decode(),
                    "mediatype": "image/svg+xml",
                }
            ],
            "provider": {"name": "Provider Name", "url": "https://your.domain"},
            "maintainers": [{"name": "Maintainer Name", "email": "your@email.com"}],
            "installModes": [{"type": mode, "supported": True} for mode in INSTALL_MODES],
            "install": {"strategy": "deployment", "spec": {"deployments": None}},
            "customresourcedefinitions": {"owned": []},
            "apiservicedefinitions": {},
            "version": "0.0.0",
        },
    }


def converts_by_webhook(crd: Mapping[str, Any]) -> bool:
    return (crd["spec"].get("conversion") or {}).get("strategy") == "Webhook"


def capability(crds: Sequence[Mapping[str, Any]]) -> str:
    """The level the project itself shows. Every operator made here is Basic Install (a CR in,
    the operand made and its conditions reported); it is Seamless Upgrades when each CRD that
    serves several versions converts between them (a webhook), so a new operator version can
    change its API without a CR being rewritten by hand. The levels above are about the operand
    (backups, insights, auto-tuning), which no file shows: only the author can claim them."""
    multi = [c for c in crds if len(c["spec"].get("versions") or []) > 1]
    return (
        CAPABILITIES[1] if multi and all(converts_by_webhook(c) for c in multi) else CAPABILITIES[0]
    )


def min_kube_version(crds: Sequence[Mapping[str, Any]]) -> str:
    """The oldest Kubernetes whose API server accepts these CRDs as they are."""
    uses_cel = any("x-kubernetes-validations" in repr(c) for c in crds)
    return MIN_KUBE_CEL if uses_cel else MIN_KUBE_CRD_V1


def _semver(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


def higher_capability(a: str | None, b: str) -> str:
    rank = {name: i for i, name in enumerate(CAPABILITIES)}
    return a if a in rank and rank[a] > rank[b] else b


def higher_version(a: str | None, b: str) -> str:
    return a if a and _semver(a) > _semver(b) else b


def spec_descriptors(version: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One descriptor per top-level spec field of a CRD version, from its schema, which
    `generate crds` made from the role's argument spec (its description and type; `choices`
    become a select)."""
    root = (version.get("schema") or {}).get("openAPIV3Schema") or {}
    fields = ((root.get("properties") or {}).get("spec") or {}).get("properties") or {}
    found = []
    for name, schema in fields.items():
        descriptor: dict[str, Any] = {"path": name, "displayName": display_name(name)}
        if schema.get("description"):
            descriptor["description"] = schema["description"]
        if schema.get("enum"):
            descriptor["x-descriptors"] = [f"{_UI}select:{choice}" for choice in schema["enum"]]
        elif schema.get("type") in _BY_TYPE:
            descriptor["x-descriptors"] = [_UI + _BY_TYPE[schema["type"]]]
        found.append(descriptor)
    return found


def status_descriptors(manage_status: bool) -> list[dict[str, Any]]:
    """The runtime's status conditions, when it writes them (the watch's manageStatus)."""
    if not manage_status:
        return []
    return [
        {
            "path": "conditions",
            "displayName": "Conditions",
            "description": "Running, Successful and Failure, as the operator's last "
            "reconciliation left them",
            "x-descriptors": [CONDITIONS],
        }
    ]


def owned(
    crd: Mapping[str, Any], *, manage_status: bool, resources: Sequence[Resource]
) -> list[dict[str, Any]]:
    """The CSV's owned entries of one CRD, one per served version."""
    spec = crd["spec"]
    kind = spec["names"]["kind"]
    entries = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        description = ((version.get("schema") or {}).get("openAPIV3Schema") or {}).get(
            "description"
        )
        entry: dict[str, Any] = {
            "name": crd["metadata"]["name"],
            "version": version["name"],
            "kind": kind,
            "displayName": display_name(kind),
            "description": description or f"{kind} {version['name']}",
            "resources": [
                {"kind": r.kind, "name": "", "version": r.version.rpartition("/")[2]}
                for r in resources
            ],
            "specDescriptors": spec_descriptors(version),
            "statusDescriptors": status_descriptors(manage_status),
        }
        entries.append(entry)
    return entries


def _merge_descriptors(
    kept: Sequence[Mapping[str, Any]], made: Sequence[Mapping[str, Any]], paths: set[str] | None
) -> list[dict[str, Any]]:
    """The author's descriptors, less those for fields the spec no longer has (`paths`; None
    keeps all), then those made for fields the author has none for."""
    result = [dict(d) for d in kept if paths is None or str(d.get("path")).split(".")[0] in paths]
    have = {d.get("path") for d in result}
    result += [dict(d) for d in made if d["path"] not in have]
    return result


def _merge_entry(kept: Mapping[str, Any], made: Mapping[str, Any]) -> dict[str, Any]:
    entry = {**made, **{k: v for k, v in kept.items() if v not in (None, "", [])}}
    spec_paths = {d["path"] for d in made["specDescriptors"]}
    entry["specDescriptors"] = _merge_descriptors(
        kept.get("specDescriptors") or [], made["specDescriptors"], spec_paths
    )
    entry["statusDescriptors"] = _merge_descriptors(
        kept.get("statusDescriptors") or [], made["statusDescriptors"], None
    )
    return entry


def update_base(
    base: Mapping[str, Any] | None,
    project_name: str,
    owned_entries: Sequence[Mapping[str, Any]],
    crds: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The base brought up to date: the author's fields kept, the owned CRDs the project's."""
    result = copy.deepcopy(dict(base)) if base else new_base(project_name)
    meta = result.setdefault("metadata", {})
    annotations = meta.setdefault("annotations", {})
    annotations["capabilities"] = higher_capability(
        annotations.get("capabilities"), capability(crds)
    )
    spec = result.setdefault("spec", {})
    spec["minKubeVersion"] = higher_version(spec.get("minKubeVersion"), min_kube_version(crds))
    if any(converts_by_webhook(c) for c in crds):  # OLM's rule for conversion webhooks
        for mode in spec.get("installModes") or []:
            mode["supported"] = mode.get("type") == "AllNamespaces"
    kept = {
        (e.get("name"), e.get("version")): e
        for e in (spec.get("customresourcedefinitions") or {}).get("owned") or []
    }
    merged = []
    for made in owned_entries:
        previous = kept.get((made["name"], made["version"]))
        merged.append(_merge_entry(previous, made) if previous else dict(made))
    spec.setdefault("customresourcedefinitions", {})["owned"] = merged
    return result
