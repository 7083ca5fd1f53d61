"""The scorecard's static tests, checked here from what operator-sdk's own code does.

`operator-sdk scorecard` runs each test as a Pod (the scorecard-test image) in a cluster whose
kubelet runs containers; the local cluster's kwok runs none, so the rules of operator-sdk
v1.42's `internal/scorecard/tests/basic.go` and `olm.go` are restated here, each function one
test, returning its errors (a failed test) and suggestions (a passed test's advice):
- basic-check-spec: a CR of alm-examples without a spec is a suggestion (the test passes);
- olm-bundle-validation: the bundle's format (metadata/annotations.yaml) and the default
  validators of operator-framework/api, which `ansible-operator bundle validate` runs;
  `bundle_format` is the format half, the validator the rest;
- olm-crds-have-validation: every spec (and status) key of an alm-examples CR is a property of
  its CRD version's schema;
- olm-crds-have-resources: every owned CRD of the CSV lists `resources`;
- olm-spec-descriptors: every top-level spec key of an alm-examples CR has a spec descriptor of
  that path in the owned CRD entry of the CR's kind and version (which must exist);
- olm-status-descriptors: a CR with a status needs status descriptors; the owned entry must exist.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REQUIRED_ANNOTATIONS = (
    "operators.operatorframework.io.bundle.mediatype.v1",
    "operators.operatorframework.io.bundle.manifests.v1",
    "operators.operatorframework.io.bundle.metadata.v1",
    "operators.operatorframework.io.bundle.package.v1",
    "operators.operatorframework.io.bundle.channels.v1",
)


@dataclass
class Result:
    errors: list[str] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)


@dataclass
class Loaded:
    csv: dict[str, Any]
    crds: list[dict[str, Any]]
    crs: list[dict[str, Any]]


def load(bundle_dir: Path) -> Loaded:
    csv, crds = None, []
    for path in sorted((bundle_dir / "manifests").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        if doc["kind"] == "ClusterServiceVersion":
            csv = doc
        elif doc["kind"] == "CustomResourceDefinition":
            crds.append(doc)
    assert csv is not None, f"{bundle_dir}: no ClusterServiceVersion"
    examples = (csv["metadata"].get("annotations") or {}).get("alm-examples") or "[]"
    return Loaded(csv, crds, json.loads(examples))


def basic_check_spec(b: Loaded) -> Result:
    result = Result()
    for cr in b.crs:
        if cr.get("spec") is None:
            result.suggestions.append(f"spec missing from [{cr['metadata']['name']}]")
            break
    return result


def bundle_format(bundle_dir: Path, dockerfile: Path) -> Result:
    """operator-registry's ValidateBundleFormat: the annotations present and valid, and the
    bundle image's labels the same."""
    result = Result()
    annotations = yaml.safe_load((bundle_dir / "metadata/annotations.yaml").read_text())
    values = annotations.get("annotations") or {}
    result.errors += [
        f"missing annotation {key}" for key in REQUIRED_ANNOTATIONS if key not in values
    ]
    if values.get(REQUIRED_ANNOTATIONS[0]) not in ("registry+v1", "plain+v1", "helm"):
        result.errors.append(f"unknown mediatype {values.get(REQUIRED_ANNOTATIONS[0])}")
    default = values.get("operators.operatorframework.io.bundle.channel.default.v1")
    channels = str(values.get(REQUIRED_ANNOTATIONS[4], "")).split(",")
    if default and default not in channels:
        result.errors.append(f"default channel {default} is not one of {channels}")
    labels = dict(
        line.removeprefix("LABEL ").split("=", 1)
        for line in dockerfile.read_text().splitlines()
        if line.startswith("LABEL ")
    )
    if labels != {k: str(v) for k, v in values.items()}:
        result.errors.append("bundle.Dockerfile's labels differ from metadata/annotations.yaml")
    return result


def _owned(b: Loaded, cr: dict[str, Any]) -> dict[str, Any] | None:
    version = cr["apiVersion"].rpartition("/")[2]
    for entry in b.csv["spec"]["customresourcedefinitions"].get("owned") or []:
        if entry["kind"] == cr["kind"] and entry["version"] == version:
            return entry
    return None


def crds_have_validation(b: Loaded) -> Result:
    result = Result()
    for cr in b.crs:
        group_version = cr["apiVersion"]
        for crd in b.crds:
            if crd["spec"]["names"]["kind"].lower() != cr["kind"].lower():
                continue
            for version in crd["spec"]["versions"]:
                if f"{crd['spec']['group']}/{version['name']}" != group_version:
                    continue
                schema = (version.get("schema") or {}).get("openAPIV3Schema")
                if schema is None:
                    result.suggestions.append(
                        f"Add CRD validation for {cr['kind']}/{version['name']}"
                    )
                    continue
                for part in ("spec", "status"):
                    known = (schema["properties"].get(part) or {}).get("properties") or {}
                    for key in cr.get(part) or {}:
                        if key not in known:
                            result.errors.append(
                                f"no CRD validation for {part} field `{key}` in {cr['kind']}"
                            )
    return result


def crds_have_resources(b: Loaded) -> Result:
    result = Result()
    for entry in b.csv["spec"]["customresourcedefinitions"].get("owned") or []:
        if not entry.get("resources"):
            result.errors.append(f"Owned CRDs do not have resources specified ({entry['name']})")
    return result


def spec_descriptors(b: Loaded) -> Result:
    result = Result()
    for cr in b.crs:
        if cr.get("spec") is None:
            result.errors.append(f"{cr['metadata']['name']} has no spec")
            continue
        entry = _owned(b, cr)
        if entry is None:
            result.errors.append(f"Failed to find an owned CRD for CR {cr['metadata']['name']}")
            continue
        paths = {d["path"] for d in entry.get("specDescriptors") or []}
        result.errors += [
            f"{key} does not have a spec descriptor" for key in cr["spec"] if key not in paths
        ]
    return result


def status_descriptors(b: Loaded) -> Result:
    result = Result()
    for cr in b.crs:
        entry = _owned(b, cr)
        if entry is None:
            result.errors.append(f"Failed to find an owned CRD for CR {cr['metadata']['name']}")
            continue
        if not cr.get("status"):
            result.suggestions.append(f"{entry['name']} does not have status spec")
        elif not entry.get("statusDescriptors"):
            result.errors.append(f"{entry['name']} does not have a status descriptor")
    return result


def static_tests(bundle_dir: Path, dockerfile: Path) -> dict[str, Result]:
    """Every static test but the validators' half of olm-bundle-validation, by name."""
    b = load(bundle_dir)
    return {
        "basic-check-spec": basic_check_spec(b),
        "olm-bundle-validation (format)": bundle_format(bundle_dir, dockerfile),
        "olm-crds-have-validation": crds_have_validation(b),
        "olm-crds-have-resources": crds_have_resources(b),
        "olm-spec-descriptors": spec_descriptors(b),
        "olm-status-descriptors": status_descriptors(b),
    }
