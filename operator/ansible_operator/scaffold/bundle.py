"""An OLM bundle (registry+v1) from the rendered ``config/manifests``, as ``operator-sdk generate
bundle`` makes it.

The input is what kustomize renders of ``config/manifests``: the base ClusterServiceVersion,
``config/default`` (CRDs, RBAC, the Deployment, Services) and the samples, and the scorecard's
configuration. Each object goes where OLM wants it: the Deployments into the CSV's install
strategy (``WATCH_NAMESPACE`` taken from the ``olm.targetNamespaces`` annotation OLM sets on the
operator's Pod, so every install mode works), the rules that bindings grant the Deployments'
service accounts into ``permissions`` / ``clusterPermissions`` (OLM creates the accounts, roles
and bindings), the samples into ``alm-examples``, the scorecard configuration into
``tests/scorecard/config.yaml``, and the CRDs and any other object into ``manifests/``. Pure: text
in, files out.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ansible_operator.scaffold import manifest_yaml

MEDIATYPE = "registry+v1"
LAYOUT = "ansible.sdk.operatorframework.io/v1"
TARGET_NAMESPACES = "metadata.annotations['olm.targetNamespaces']"
_DROPPED = {"Namespace", "ServiceAccount"}  # OLM makes the operator's namespace and accounts


class BundleError(Exception):
    """Input the bundle cannot be made from; one line."""


@dataclass(frozen=True)
class Options:
    """operator-sdk generate bundle's options that shape the files."""

    package: str
    version: str | None = None  # the CSV's version (default: the base's)
    channels: tuple[str, ...] = ("alpha",)
    default_channel: str | None = None


@dataclass
class Bundle:
    """The bundle's files by path under the bundle directory, and the bundle.Dockerfile's text."""

    files: dict[str, str] = field(default_factory=dict)
    dockerfile: str = ""


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    return str(obj.get("apiVersion", "")), str(obj.get("kind", ""))


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _with_watch_namespace(deployment: Mapping[str, Any]) -> dict[str, Any]:
    """The Deployment's spec, each container's WATCH_NAMESPACE set from OLM's target namespaces."""
    spec = copy.deepcopy(dict(deployment["spec"]))
    value = {"name": "WATCH_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": TARGET_NAMESPACES}}}
    for container in (spec.get("template") or {}).get("spec", {}).get("containers") or []:
        env = [e for e in container.get("env") or [] if e.get("name") != "WATCH_NAMESPACE"]
        container["env"] = [*env, value]
    return spec


def _rules_for(
    objects: Sequence[Mapping[str, Any]], accounts: set[str]
) -> tuple[dict[str, list[Any]], dict[str, list[Any]], set[int]]:
    """(permissions, clusterPermissions) by service account, and the ids of the roles and
    bindings they came from (which the bundle then leaves out)."""
    roles = {(o["kind"], _name(o)): o for o in objects if _key(o)[1] in ("Role", "ClusterRole")}
    namespaced: dict[str, list[Any]] = {}
    cluster: dict[str, list[Any]] = {}
    used: set[int] = set()
    for binding in objects:
        kind = _key(binding)[1]
        if kind not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        subjects = [
            s["name"]
            for s in binding.get("subjects") or []
            if s.get("kind") == "ServiceAccount" and s.get("name") in accounts
        ]
        ref = binding.get("roleRef") or {}
        role = roles.get((str(ref.get("kind")), str(ref.get("name"))))
        if not subjects or role is None:
            continue
        into = cluster if kind == "ClusterRoleBinding" else namespaced
        for account in subjects:
            into.setdefault(account, []).extend(role.get("rules") or [])
        used.update((id(binding), id(role)))
    return namespaced, cluster, used


def _permissions(by_account: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
    return [{"serviceAccountName": a, "rules": by_account[a]} for a in sorted(by_account)]


def _file_name(obj: Mapping[str, Any]) -> str:
    """operator-sdk's file names: `<group>_<plural>.yaml` for a CRD, else
    `<name>_<group>_<version>_<kind>.yaml`."""
    if _key(obj)[1] == "CustomResourceDefinition":
        return f"{obj['spec']['group']}_{obj['spec']['names']['plural']}.yaml"
    api = str(obj["apiVersion"]).replace("/", "_")
    return f"{_name(obj)}_{api}_{str(obj['kind']).lower()}.yaml"


def metadata_annotations(options: Options) -> dict[str, str]:
    """metadata/annotations.yaml's keys, which the bundle image carries as labels too."""
    found = {
        "operators.operatorframework.io.bundle.mediatype.v1": MEDIATYPE,
        "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
        "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
        "operators.operatorframework.io.bundle.package.v1": options.package,
        "operators.operatorframework.io.bundle.channels.v1": ",".join(options.channels),
    }
    if options.default_channel:
        found["operators.operatorframework.io.bundle.channel.default.v1"] = options.default_channel
    found.update(
        {
            "operators.operatorframework.io.metrics.mediatype.v1": "metrics+v1",
            "operators.operatorframework.io.metrics.builder": "ansible-operator-py",
            "operators.operatorframework.io.metrics.project_layout": LAYOUT,
            "operators.operatorframework.io.test.mediatype.v1": "scorecard+v1",
            "operators.operatorframework.io.test.config.v1": "tests/scorecard/",
        }
    )
    return found


def dockerfile(options: Options) -> str:
    labels = "".join(f"LABEL {k}={v}\n" for k, v in metadata_annotations(options).items())
    return (
        "# The bundle image: files only (`make bundle-build`). Written by "
        "`ansible-operator generate bundle`.\n"
        "FROM scratch\n\n"
        f"{labels}\n"
        "COPY bundle/manifests /manifests/\n"
        "COPY bundle/metadata /metadata/\n"
        "COPY bundle/tests/scorecard /tests/scorecard/\n"
    )


def _owned(base: Mapping[str, Any], crds: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The base's owned entries for the CRDs the bundle has, and a bare one for any other
    served version (the base comes from `generate kustomize manifests`, which fills them)."""
    kept = {
        (e.get("name"), e.get("version")): e
        for e in ((base.get("spec") or {}).get("customresourcedefinitions") or {}).get("owned")
        or []
    }
    entries = []
    for crd in crds:
        for version in crd["spec"].get("versions") or []:
            if version.get("served", True):
                key = (_name(crd), version["name"])
                bare = {"name": key[0], "version": key[1], "kind": crd["spec"]["names"]["kind"]}
                entries.append(copy.deepcopy(dict(kept.get(key, bare))))
    return entries


def _conversion_webhooks(
    crds: Sequence[Mapping[str, Any]],
    services: Mapping[str, Mapping[str, Any]],
    deployments: Sequence[str],
) -> list[dict[str, Any]]:
    """The CSV's webhook definitions for CRDs whose conversion is served by a webhook: OLM
    issues the certificate and points the CRD at the Service it makes for the Deployment."""
    by_service: dict[tuple[str, int, str], list[str]] = {}
    for crd in crds:
        conversion = crd["spec"].get("conversion") or {}
        service = ((conversion.get("webhook") or {}).get("clientConfig") or {}).get("service")
        if conversion.get("strategy") != "Webhook" or not service:
            continue
        key = (service["name"], int(service.get("port", 443)), service.get("path", "/convert"))
        by_service.setdefault(key, []).append(_name(crd))
    found = []
    for (service_name, port, path), names in sorted(by_service.items()):
        svc = services.get(service_name)
        if svc is None:
            raise BundleError(
                f"a CRD's conversion webhook names the Service {service_name}, which "
                "config/manifests does not render"
            )
        target = next(
            (
                p.get("targetPort", port)
                for p in svc["spec"].get("ports") or []
                if p.get("port") == port
            ),
            port,
        )
        crd_names = sorted(names)
        found.append(
            {
                "type": "ConversionWebhook",
                "generateName": "c" + "".join(n.split(".")[0] for n in crd_names) + ".kb.io",
                "deploymentName": deployments[0],
                "containerPort": port,
                "targetPort": target,
                "webhookPath": path,
                "conversionCRDs": crd_names,
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
            }
        )
    return found


def make(documents: Sequence[Any], options: Options) -> Bundle:
    """The bundle of the rendered config/manifests."""
    objects = [d for d in documents if isinstance(d, dict) and d.get("kind")]
    bases = [o for o in objects if o["kind"] == "ClusterServiceVersion"]
    if len(bases) != 1:
        raise BundleError(
            f"config/manifests rendered {len(bases)} ClusterServiceVersions, not one: run "
            "'ansible-operator generate kustomize manifests' first"
        )
    base = bases[0]
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    deployments = [o for o in objects if o["kind"] == "Deployment"]
    if not deployments:
        raise BundleError("config/manifests rendered no Deployment (it should include ../default)")
    owned_gvks = {
        (f"{c['spec']['group']}/{v['name']}", c["spec"]["names"]["kind"])
        for c in crds
        for v in c["spec"].get("versions") or []
    }
    samples = [o for o in objects if _key(o) in owned_gvks]
    scorecards = [
        o for o in objects if o["kind"] == "Configuration" and "scorecard" in str(o["apiVersion"])
    ]
    accounts = {
        d["spec"]["template"]["spec"].get("serviceAccountName") or "default" for d in deployments
    }
    namespaced, cluster, used = _rules_for(objects, accounts)

    csv = copy.deepcopy(base)
    spec = csv.setdefault("spec", {})
    version = options.version or str(spec.get("version") or "0.0.0")
    spec["version"] = version
    csv["metadata"]["name"] = f"{options.package}.v{version}"
    csv["metadata"].pop("namespace", None)
    csv["metadata"].setdefault("annotations", {})["alm-examples"] = json.dumps(
        [_example(s) for s in samples], indent=2
    )
    spec["install"] = {
        "strategy": "deployment",
        "spec": {
            "deployments": [
                {
                    "name": _name(d),
                    "label": (d["metadata"].get("labels") or {}),
                    "spec": _with_watch_namespace(d),
                }
                for d in deployments
            ],
            "permissions": _permissions(namespaced),
            "clusterPermissions": _permissions(cluster),
        },
    }
    spec.setdefault("customresourcedefinitions", {})["owned"] = _owned(base, crds)
    services = {_name(o): o for o in objects if o["kind"] == "Service"}
    webhooks = _conversion_webhooks(crds, services, [_name(d) for d in deployments])
    if webhooks:
        spec["webhookdefinitions"] = webhooks
        # OLM mounts the webhook's certificate and injects its CA into the CRDs, so the rules
        # that let the operator do it itself (read and patch its CRDs) are not the bundle's.
        for key in ("permissions", "clusterPermissions"):
            for entry in spec["install"]["spec"][key]:
                entry["rules"] = [r for r in entry["rules"] if not _on_crds(r)]

    result = Bundle(dockerfile=dockerfile(options))
    result.files[f"manifests/{options.package}.clusterserviceversion.yaml"] = manifest_yaml.dump(
        csv
    )
    skipped = {id(o) for o in [base, *deployments, *samples, *scorecards]} | used
    for obj in objects:
        if id(obj) in skipped or obj["kind"] in _DROPPED:
            continue
        out = copy.deepcopy(obj)
        out.get("metadata", {}).pop("namespace", None)  # OLM installs them in its namespace
        result.files[f"manifests/{_file_name(out)}"] = manifest_yaml.dump(out)
    metadata = {"annotations": metadata_annotations(options)}
    result.files["metadata/annotations.yaml"] = manifest_yaml.dump(metadata)
    if scorecards:
        result.files["tests/scorecard/config.yaml"] = manifest_yaml.dump(scorecards[0])
    return result


def _on_crds(rule: Mapping[str, Any]) -> bool:
    return "apiextensions.k8s.io" in (rule.get("apiGroups") or []) and (
        "customresourcedefinitions" in (rule.get("resources") or [])
    )


def _example(sample: Mapping[str, Any]) -> dict[str, Any]:
    """A sample as alm-examples shows it: no namespace (OLM's console creates it where asked)."""
    out = copy.deepcopy(dict(sample))
    out.get("metadata", {}).pop("namespace", None)
    return out


_VERSION = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"
)


def check_version(version: str) -> str:
    """A CSV version is semver (OLM orders upgrades by it)."""
    if not _VERSION.match(version):
        raise BundleError(f"--version {version!r}: not a semantic version such as 0.1.0")
    return version
