"""``ansible-operator generate helm-chart``: a Helm chart of the operator, ``dist/chart``, from
what kustomize renders of ``config/default`` with its optional parts (``make helm-chart`` pipes
``dev-image render --with prometheus --with network-policy`` into it, as ``make bundle`` does).

Each rendered object becomes one template, put behind the value of the ``config/`` directory it
came from (found by its kind and name in that directory's files): the CRDs behind ``crd.enable``
(templates, so ``helm upgrade`` updates them, kept on uninstall while ``crd.keep``: uninstalling
the operator must not delete every CR), the metrics Service and the RBAC that checks scrapes
behind ``metrics.enable``, the conversion webhook's Service, port and certificate RBAC behind
``webhook.enable`` (where a kind converts), the ServiceMonitor and alerts behind
``prometheus.enable``, the NetworkPolicies behind ``networkPolicy.enable``. The manager's image,
replicas, resources and ``--leader-elect`` are values. The namespace is the release's (``helm
install --namespace NS --create-namespace``), so the Namespace object is not in the chart; names
are config/'s, so ``helm template`` with the defaults renders what ``make build-installer``
writes. Templates are generated whole; ``values.yaml`` keeps the values set in it before.
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ansible_operator.core import split_image
from ansible_operator.scaffold import manifest_yaml, olm

DEFAULT_OUTPUT = Path("dist/chart")
MANAGED_BY = "app.kubernetes.io/managed-by"
KEEP = "helm.sh/resource-policy"
# The parts an object can belong to, each a directory of config/ and of the chart's templates
# ("other": an object of config/default's own that no directory names). _BEHIND says which value
# each part is behind.
PARTS = ("crd", "rbac", "manager", "metrics", "webhook", "prometheus", "network-policy", "other")
_METRICS_ARGS = ("--metrics-secure", "--metrics-require-rbac")
_MARK = "HELMCHARTMARK"  # a placeholder in dumped YAML, replaced by template text


class ChartError(Exception):
    """Input the chart cannot be made from; one line."""


@dataclass(frozen=True)
class Chart:
    files: dict[str, str]  # path under the chart directory → text
    unknown_values: list[str]  # keys of the old values.yaml no template uses (kept)


def part_of(path: Path, config: Path) -> str:
    """The part of an object from this file of ``config/``."""
    directory = path.relative_to(config).parts[0]
    if path.name.startswith(("metrics_", "webhook_")) and directory in ("rbac", "default"):
        return path.name.split("_", 1)[0]
    return directory if directory in PARTS else "other"


def sources(config: Path) -> dict[tuple[str, str], str]:
    """(kind, name before any prefix) → part, for each object in the files of ``config/``."""
    found: dict[tuple[str, str], str] = {}
    # config/default's own files and the directories of the parts; not the other overlays'
    # (ha, testing), whose patches name the same objects.
    files = [path for part in ("default", *PARTS) for path in (config / part).rglob("*.yaml")]
    for path in sorted(files):
        if path.name == "kustomization.yaml":
            continue
        try:
            docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        except (OSError, yaml.YAMLError):
            continue  # not an object kustomize loads; it says so itself
        for doc in docs:
            if isinstance(doc, dict) and isinstance(doc.get("metadata"), dict):
                name = doc["metadata"].get("name")
                if doc.get("kind") and name:
                    found.setdefault((doc["kind"], name), part_of(path, config))
    return found


def _walk_strings(value: Any, change: Any) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {key: _walk_strings(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [_walk_strings(item, change) for item in value]
    return value


def _escaped(text: str, namespace: str) -> str:
    """A string of a rendered object as template text: Helm's delimiters in it printed as they
    are (an alert's ``{{ $labels.kind }}``), the namespace made the release's where it is one (a
    whole value, or in a Service's DNS name; not a word of a description)."""
    text = text.replace("{{", "\0").replace("}}", '{{ "}}" }}').replace("\0", '{{ "{{" }}')
    if not namespace:
        return text
    if text == namespace:
        return "{{ .Release.Namespace }}"
    return text.replace(f".{namespace}.svc", ".{{ .Release.Namespace }}.svc")


class _Template:
    """An object dumped as YAML, with placeholders replaced by lines of template text. A block of
    one line becomes the key's value; longer ones, or one starting with ``{{-``, go under the key,
    indented; ``{indent}`` in a line is the column it starts at (for ``nindent``)."""

    def __init__(self) -> None:
        self._blocks: dict[str, list[str]] = {}

    def mark(self, lines: list[str]) -> str:
        key = f"{_MARK}{len(self._blocks)}"
        self._blocks[key] = lines
        return key

    def text(self, obj: dict[str, Any]) -> str:
        out = []
        for line in manifest_yaml.dump(obj).splitlines():
            head, _, key = line.rpartition(" ")
            block = self._blocks.get(key)
            if block is None:
                out.append(line)
            elif head.strip() == f"{key}:":  # a placeholder key: the block in its place
                indent = len(head) - len(head.lstrip())
                out.extend(" " * indent + item for item in block)
            elif len(block) == 1 and not block[0].startswith("{{-"):
                out.append(f"{head} {block[0]}")
            else:
                out.append(head)
                indent = len(head) - len(head.lstrip()) + 2
                out.extend(" " * indent + item.replace("{indent}", str(indent)) for item in block)
        return "\n".join(out) + "\n"


def _when(value: str, lines: list[str]) -> list[str]:
    return [f"{{{{- if .Values.{value} }}}}", *lines, "{{- end }}"]


def _with(value: str, lines: list[str]) -> list[str]:
    return [f"{{{{- with .Values.{value} }}}}", *lines, "{{- end }}"]


def _manager_container(deployment: dict[str, Any]) -> dict[str, Any]:
    """The operator's container: the one named manager, else the first."""
    containers = deployment["spec"]["template"]["spec"].get("containers") or []
    named = [c for c in containers if c.get("name") == "manager"] or containers[:1]
    if not named:
        raise ChartError(f"Deployment {deployment['metadata']['name']} has no container")
    return dict(named[0])


def _manager(deployment: dict[str, Any], tpl: _Template, parts: set[str]) -> None:
    """The values of the manager's Deployment: replicas, image, resources, --leader-elect, and
    its metrics and webhook ports and flags behind their parts' values."""
    spec = deployment["spec"]
    spec["replicas"] = tpl.mark(["{{ .Values.manager.replicas }}"])
    manager = _manager_container(deployment)
    manager["image"] = tpl.mark(
        ['"{{ .Values.manager.image.repository }}:{{ .Values.manager.image.tag }}"']
    )
    if "imagePullPolicy" not in manager:  # else config/'s stays
        pull = tpl.mark(_with("manager.image.pullPolicy", ["imagePullPolicy: {{ . }}"]))
        manager[pull] = pull
    manager["resources"] = tpl.mark(["{{- toYaml .Values.manager.resources | nindent {indent} }}"])
    args: list[str] = []
    for arg in manager.get("args") or []:
        item = f"- {json.dumps(arg)}"
        if arg == "--leader-elect":
            args += _when("manager.leaderElect", [item])
        elif arg in _METRICS_ARGS and "metrics" in parts:
            args += _when("metrics.enable", [item])
        elif arg.startswith("--metrics-bind-address=") and "metrics" in parts:
            address = arg.split("=", 1)[1]  # 0 turns the endpoint off
            args.append(
                f'- "--metrics-bind-address={{{{ if .Values.metrics.enable }}}}{address}'
                '{{ else }}0{{ end }}"'
            )
        else:
            args.append(item)
    if args:
        manager["args"] = tpl.mark(args)
    ports: list[str] = []
    for port in manager.get("ports") or []:
        item = f"- {json.dumps(port)}"
        ports += (
            _when(f"{port.get('name')}.enable", [item])
            if port.get("name") in (parts & {"metrics", "webhook"})
            else [item]
        )
    if ports:
        manager["ports"] = tpl.mark(ports)
    containers = spec["template"]["spec"]["containers"]
    at = next(i for i, c in enumerate(containers) if c.get("name") == manager.get("name"))
    containers[at] = manager


def template(obj: dict[str, Any], part: str, namespace: str, parts: set[str]) -> str:
    """One rendered object as a template of the chart."""
    obj = _walk_strings(copy.deepcopy(obj), lambda text: _escaped(text, namespace))
    meta = obj["metadata"]
    tpl = _Template()
    if (meta.get("labels") or {}).get(MANAGED_BY) == "kustomize":
        meta["labels"][MANAGED_BY] = "{{ .Release.Service }}"
    if obj["kind"] == "CustomResourceDefinition":
        keep = tpl.mark(_when("crd.keep", [f"{KEEP}: keep"]))
        meta["annotations"] = {**(meta.get("annotations") or {}), keep: keep}
    if obj["kind"] == "Deployment" and part == "manager":
        _manager(obj, tpl, parts)
    text = tpl.text(obj)
    behind = _BEHIND.get(part)
    return f"{{{{- if .Values.{behind} }}}}\n{text}{{{{- end }}}}\n" if behind else text


# The value each optional part is behind: its path, its default, its comment.
_OPTIONAL: dict[str, tuple[tuple[str, ...], bool, str]] = {
    "metrics": (
        ("metrics", "enable"),
        True,
        "The metrics endpoint (HTTPS, each scrape's token checked), its Service and RBAC;\n"
        "false turns the endpoint off (--metrics-bind-address=0).",
    ),
    "webhook": (
        ("webhook", "enable"),
        True,
        "The conversion webhook's Service, port and certificate RBAC, for the kinds that\n"
        "convert between versions; turn it off only where conversion is served otherwise.",
    ),
    "prometheus": (
        ("prometheus", "enable"),
        False,
        "A ServiceMonitor and the alerts (PrometheusRule); the cluster needs the\n"
        "Prometheus Operator's CRDs (monitoring.coreos.com/v1).",
    ),
    "network-policy": (
        ("networkPolicy", "enable"),
        False,
        "NetworkPolicies: only namespaces labelled `metrics: enabled` reach the metrics,\n"
        "and `webhook: enabled` the conversion webhook (where the network plugin enforces\n"
        "them).",
    ),
}


# The value each part's objects are behind; a part not named here is always rendered.
_BEHIND = {
    "crd": "crd.enable",
    **{part: ".".join(path) for part, (path, _, _) in _OPTIONAL.items()},
}


@dataclass(frozen=True)
class Value:
    path: tuple[str, ...]
    default: Any
    about: str  # the comment above it in values.yaml


def values(deployment: dict[str, Any], parts: set[str]) -> list[Value]:
    """Every value the templates read, with its default from the rendered manifests."""
    manager = _manager_container(deployment)
    repository, tag = split_image(manager["image"])
    found = [
        Value(("manager", "image", "repository"), repository, "The operator's image."),
        Value(("manager", "image", "tag"), tag, ""),
        Value(
            ("manager", "image", "pullPolicy"),
            "",
            "Empty: Kubernetes' default (Always for the tag latest, else IfNotPresent).",
        ),
        Value(
            ("manager", "replicas"),
            deployment["spec"].get("replicas", 1),
            "Replicas of the operator; with more than one, leaderElect must stay true.",
        ),
        Value(
            ("manager", "leaderElect"),
            "--leader-elect" in (manager.get("args") or []),
            "--leader-elect: one replica reconciles at a time, the others wait to take over.",
        ),
        Value(
            ("manager", "resources"), manager.get("resources") or {}, "The container's resources."
        ),
        Value(
            ("crd", "enable"),
            True,
            "Install the CRDs as templates, so `helm upgrade` updates them too.",
        ),
        Value(
            ("crd", "keep"),
            True,
            "Keep the CRDs, and so every custom resource, when the release is uninstalled\n"
            "(helm.sh/resource-policy: keep); false deletes them, and every CR, with it.",
        ),
    ]
    found += [Value(path, default, about) for part, (path, default, about) in _OPTIONAL.items()
              if part in parts]  # fmt: skip
    return found


def _lookup(tree: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
    for key in path:
        if not isinstance(tree, dict) or key not in tree:
            return False, None
        tree = tree[key]
    return True, tree


def _leaves(tree: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(tree, dict) and tree:
        for key, item in tree.items():
            yield from _leaves(item, (*path, str(key)))
    else:
        yield path


def values_yaml(known: list[Value], old_text: str | None) -> tuple[str, list[str]]:
    """values.yaml: each value documented, set as in ``old_text`` (the file before) where it was
    set there; keys of the old file that no template reads are kept at the end, and named."""
    try:
        old = yaml.safe_load(old_text) if old_text else {}
    except yaml.YAMLError as err:
        raise ChartError(f"values.yaml is not YAML: {' '.join(str(err).split())}") from err
    old = old if isinstance(old, dict) else {}
    paths = {value.path for value in known}
    unknown = [
        ".".join(path)
        for path in _leaves(old)
        if path and not any(path[: len(p)] == p for p in paths)
    ]
    lines = [
        "# The values of this chart, written by `ansible-operator generate helm-chart` from",
        "# config/. Generating it again keeps the values set here.",
    ]
    opened: tuple[str, ...] = ()
    for value in known:
        for depth, key in enumerate(value.path[:-1]):
            if opened[: depth + 1] != value.path[: depth + 1]:
                if depth == 0:
                    lines.append("")
                lines.append("  " * depth + f"{key}:")
        opened = value.path[:-1]
        indent = "  " * (len(value.path) - 1)
        lines += [f"{indent}# {line}" for line in value.about.splitlines()]
        was_set, current = _lookup(old, value.path)
        dumped = manifest_yaml.dump({value.path[-1]: current if was_set else value.default})
        lines += [indent + line for line in dumped.rstrip("\n").splitlines()]
    kept: dict[str, Any] = {}
    for name in unknown:
        tree: dict[str, Any] = kept
        path = tuple(name.split("."))
        for key in path[:-1]:
            tree = tree.setdefault(key, {})
        tree[path[-1]] = _lookup(old, path)[1]
    if kept:
        lines += ["", "# Kept from values.yaml as it was: no template of this chart reads these."]
        lines += manifest_yaml.dump(kept).rstrip("\n").splitlines()
    return "\n".join(lines) + "\n", unknown


def chart(
    documents: list[Any],
    config: Path,
    *,
    name: str,
    version: str,
    old_values: str | None,
) -> Chart:
    """The chart's files from the rendered manifests and the ``config/`` they came from."""
    objects = [doc for doc in documents if isinstance(doc, dict) and doc.get("kind")]
    namespaces = [doc["metadata"]["name"] for doc in objects if doc["kind"] == "Namespace"]
    namespace = namespaces[0] if namespaces else ""
    origin = sources(config)
    prefix = _name_prefix(config)

    def part(obj: dict[str, Any]) -> str:
        kind, rendered = obj["kind"], obj["metadata"]["name"]
        plain = rendered.removeprefix(prefix)
        return origin.get((kind, plain)) or origin.get((kind, rendered)) or "other"

    placed = [(obj, part(obj)) for obj in objects if obj["kind"] != "Namespace"]
    parts = {where for _, where in placed}
    managers = [obj for obj, where in placed if where == "manager" and obj["kind"] == "Deployment"]
    if not managers:
        raise ChartError("no Deployment of config/manager in the rendered manifests")
    files = {}
    for obj, where in placed:
        plain = obj["metadata"]["name"].removeprefix(prefix)
        path = f"templates/{where}/{plain}.{obj['kind'].lower()}.yaml"
        files[path] = template(obj, where, namespace, parts)
    values_text, unknown = values_yaml(values(managers[0], parts), old_values)
    files["values.yaml"] = values_text
    tag = _lookup(yaml.safe_load(values_text), ("manager", "image", "tag"))[1]
    files["Chart.yaml"] = manifest_yaml.dump(
        {
            "apiVersion": "v2",
            "name": name,
            "description": f"{name}: an Ansible operator (its roles run by ansible-operator-py)",
            "type": "application",
            "version": version,
            "appVersion": str(tag),
        }
    )
    files[".helmignore"] = ".DS_Store\n.git/\n*.swp\n*.bak\n*.tmp\n*.orig\n*~\n"
    files["templates/NOTES.txt"] = (
        f"{name} is installed in namespace {{{{ .Release.Namespace }}}}:\n"
        f"  kubectl get deployment -n {{{{ .Release.Namespace }}}} {prefix}controller-manager\n"
    )
    return Chart(files, unknown)


def _name_prefix(config: Path) -> str:
    try:
        default = yaml.safe_load((config / "default" / "kustomization.yaml").read_text())
    except (OSError, yaml.YAMLError):
        return ""
    return str((default or {}).get("namePrefix") or "")


def add_parser(kinds: argparse._SubParsersAction) -> None:
    made = kinds.add_parser(
        "helm-chart",
        help="a Helm chart (dist/chart) from the rendered config/default on standard input",
    )
    made.add_argument("--version", default="0.1.0", help="the chart's version (default: 0.1.0)")
    made.add_argument(
        "--output-dir", type=Path, default=DEFAULT_OUTPUT, help="default: %(default)s"
    )
    made.add_argument("-q", "--quiet", action="store_true", help="print nothing")
    made.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    prog = "ansible-operator generate helm-chart"
    out: Path = args.output_dir
    project = Path(".")
    try:
        if sys.stdin.isatty():
            raise ChartError(
                "reads the rendered config/default on standard input: ansible-operator "
                f"dev-image render --with prometheus --with network-policy | {prog}"
            )
        documents = list(yaml.safe_load_all(sys.stdin.read()))
        values_file = out / "values.yaml"
        old = values_file.read_text(encoding="utf-8") if values_file.is_file() else None
        made = chart(
            documents,
            project / "config",
            name=olm.project_name(project),
            version=args.version,
            old_values=old,
        )
    except ChartError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 1
    except yaml.YAMLError as err:
        print(f"{prog}: standard input is not YAML: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    shutil.rmtree(out / "templates", ignore_errors=True)  # generated whole: none left over
    for relative, text in made.files.items():
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if made.unknown_values and not args.quiet:
        print(f"{prog}: kept values no template reads: {', '.join(made.unknown_values)}")
    if not args.quiet:
        print(f"wrote {out}/ ({len(made.files)} files)")
    return 0
