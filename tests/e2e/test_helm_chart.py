"""`make helm-chart`: a chart Helm itself checks (`helm lint --strict`), whose `helm template`
with the default values is what `make build-installer` writes, object by object, and which
installs, upgrades and uninstalls on a cluster, leaving nothing behind (the CRDs, kept by
default, only where asked); for this repository and for a project `init` makes.

Helm is built from Go modules into the binaries' cache (`tests.e2e.tools`). The install runs on a
cluster of its own: the chart's cluster-scoped objects (CRDs, ClusterRoles) have config/'s names,
which other tests' operators create on the shared one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_operator import cli
from ansible_operator.devcluster import binaries, gobuild
from ansible_operator.devcluster.cluster import DevCluster

from . import tools
from .project import REPO, kubectl

pytestmark = pytest.mark.e2e

IMAGE = "registry.example.com/ansible-operator:1.2.3"
OPERATOR = f"ANSIBLE_OPERATOR={sys.executable} -m ansible_operator.cli"
# What Helm adds that kustomize does not, and which a comparison leaves aside.
MANAGED_BY = "app.kubernetes.io/managed-by"
KEEP = "helm.sh/resource-policy"


class Helm:
    def __init__(self, home: Path) -> None:
        self.binary = gobuild.ensure(tools.HELM)
        self.env = {
            **os.environ,
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_DATA_HOME": str(home / "data"),
        }

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [str(self.binary), *args], capture_output=True, text=True, env=self.env, timeout=600
        )
        if check and done.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        return done

    def template(self, chart: Path, namespace: str, *sets: str) -> dict:
        args = [f"--set={item}" for item in sets]
        rendered = self("template", "release", str(chart), "-n", namespace, *args).stdout
        return objects(rendered)


def objects(text: str) -> dict:
    """(kind, name) → object, with what only Helm or only kustomize writes taken out."""
    found = {}
    for doc in yaml.safe_load_all(text):
        if not doc:
            continue
        meta = doc["metadata"]
        assert (meta.get("labels") or {}).pop(MANAGED_BY, None) in (None, "Helm", "kustomize")
        annotations = meta.get("annotations") or {}
        annotations.pop(KEEP, None)
        if not annotations:
            meta.pop("annotations", None)
        found[(doc["kind"], meta["name"])] = doc
    return found


def make_chart(project: Path, chart: Path) -> None:
    done = subprocess.run(
        ["make", "--no-print-directory", "helm-chart", OPERATOR, "OPERATOR_DEPS=",
         f"IMG={IMAGE}", f"CHART={chart}"],
        cwd=project, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def render(project: Path, *parts: str) -> dict:
    """What `make build-installer` writes (with ``parts``: as `make helm-chart` renders)."""
    also = [f"--with={part}" for part in parts]
    done = subprocess.run(
        [sys.executable, "-m", "ansible_operator.cli", "dev-image", "render", "--tag", IMAGE,
         "--project", str(project), *also],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    return objects(done.stdout)


@pytest.fixture(scope="module")
def helm(tmp_path_factory) -> Helm:
    return Helm(tmp_path_factory.mktemp("helm-home"))


@pytest.fixture(scope="module")
def chart(tmp_path_factory) -> Path:
    """This repository's chart, as `make helm-chart` writes it."""
    path = tmp_path_factory.mktemp("chart") / "chart"
    make_chart(REPO, path)
    return path


def assert_same(helm_objects: dict, kustomize_objects: dict) -> None:
    kustomize_objects = {k: v for k, v in kustomize_objects.items() if k[0] != "Namespace"}
    assert sorted(helm_objects) == sorted(kustomize_objects)
    for key, obj in helm_objects.items():
        assert obj == kustomize_objects[key], key


def test_lint_strict_and_the_defaults_render_what_build_installer_writes(helm, chart):
    linted = helm("lint", "--strict", str(chart))
    assert "0 chart(s) failed" in linted.stdout, linted.stdout
    namespace = "ansible-operator-system"  # config/default's: `helm install -n` names it
    assert_same(helm.template(chart, namespace), render(REPO))
    elsewhere = helm("template", "release", str(chart), "-n", "elsewhere").stdout
    # The release's namespace wherever one is named: objects, bindings' subjects, the CRDs'
    # webhook Service.
    assert namespace not in elsewhere
    placed = {d["metadata"].get("namespace") for d in yaml.safe_load_all(elsewhere) if d}
    assert placed == {None, "elsewhere"}

    # The optional parts, behind their values: what kustomize renders with them listed (the
    # alerts' own `{{ $labels.kind }}` printed as written, not read as Helm's).
    everything = helm.template(
        chart, namespace, "prometheus.enable=true", "networkPolicy.enable=true"
    )
    assert_same(everything, render(REPO, "prometheus", "network-policy"))
    assert {"ServiceMonitor", "PrometheusRule", "NetworkPolicy"} <= {k for k, _ in everything}

    # Metrics off: no Service or RBAC of theirs, and the endpoint itself off.
    off = helm.template(chart, namespace, "metrics.enable=false", "manager.leaderElect=false")
    assert not [key for key in off if "metrics" in key[1]]
    (deployment,) = [obj for (kind, _), obj in off.items() if kind == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert "--metrics-bind-address=0" in container["args"]
    assert not {"--metrics-secure", "--leader-elect"} & set(container["args"])
    assert [p["name"] for p in container["ports"]] == ["probes", "webhook"]


def test_the_crds_are_kept_on_uninstall_unless_crd_keep_is_false(helm, chart):
    rendered = helm("template", "r", str(chart), "-n", "ns").stdout
    crds = [
        d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "CustomResourceDefinition"
    ]
    assert crds and all(d["metadata"]["annotations"][KEEP] == "keep" for d in crds)
    rendered = helm("template", "r", str(chart), "-n", "ns", "--set=crd.keep=false").stdout
    assert KEEP not in rendered


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory):
    dev = DevCluster(tmp_path_factory.mktemp("helm-cluster"))
    kubeconfig = dev.up(binaries.ensure())
    try:
        yield kubeconfig
    finally:
        dev.down()


def on_cluster(kubeconfig: Path, manifests: Path) -> list[str]:
    """Which objects of ``manifests`` exist on the cluster (kind/name)."""
    found = kubectl(kubeconfig, "get", "-f", str(manifests), "--ignore-not-found", "-o", "name")
    return found.stdout.split()


def test_install_upgrade_and_uninstall_leave_nothing_behind(helm, chart, own_cluster, tmp_path):
    namespace = "operator-release"
    base = ["--kubeconfig", str(own_cluster), "-n", namespace]
    manifests = tmp_path / "release.yaml"
    manifests.write_text(helm("template", "release", str(chart), "-n", namespace).stdout)
    every = [
        f"{d['kind']}/{d['metadata']['name']}" for d in yaml.safe_load_all(manifests.read_text())
    ]

    helm("install", "release", str(chart), *base, "--create-namespace", "--wait", "--timeout=5m")
    assert len(on_cluster(own_cluster, manifests)) == len(every)

    # An upgrade changes what the values say: two replicas, the metrics off (their objects go).
    helm("upgrade", "release", str(chart), *base, "--wait", "--timeout=5m",
         "--set=manager.replicas=2", "--set=metrics.enable=false")  # fmt: skip
    deployment = kubectl(own_cluster, "get", "deployment", "-n", namespace,
                         "ansible-operator-controller-manager", "-o", "yaml")  # fmt: skip
    assert yaml.safe_load(deployment.stdout)["spec"]["replicas"] == 2
    left = on_cluster(own_cluster, manifests)
    assert not [name for name in left if "metrics" in name] and len(left) == len(every) - 4

    # Uninstalled: only the CRDs stay (crd.keep), and with them any CR.
    helm("uninstall", "release", *base, "--wait")
    left = on_cluster(own_cluster, manifests)
    assert left and all(name.startswith("customresourcedefinition") for name in left), left

    # Installed again with crd.keep=false (the CRDs it finds are its own again), then
    # uninstalled: nothing of the chart is left.
    helm("install", "release", str(chart), *base, "--wait", "--timeout=5m",
         "--set=crd.keep=false", "--take-ownership")  # fmt: skip
    helm("uninstall", "release", *base, "--wait")
    assert on_cluster(own_cluster, manifests) == []


def test_a_new_projects_chart_lints_and_keeps_its_values(helm, tmp_path, monkeypatch):
    project = tmp_path / "fresh-operator"
    project.mkdir()
    monkeypatch.chdir(project)
    assert cli.main(["init", "--domain", "example.com"]) == 0
    assert cli.main(["new-api", "--group", "cache", "--version", "v1", "--kind", "Memo"]) == 0
    chart = project / "dist" / "chart"
    make_chart(project, chart)
    assert "0 chart(s) failed" in helm("lint", "--strict", str(chart)).stdout
    assert_same(helm.template(chart, "fresh-operator-system"), render(project))

    # Generated again: the values set in values.yaml stay, a key no template reads too.
    values = yaml.safe_load((chart / "values.yaml").read_text())
    values["manager"]["replicas"] = 3
    values["manager"]["image"]["tag"] = "9.9.9"
    values["extra"] = {"note": "mine"}
    (chart / "values.yaml").write_text(yaml.safe_dump(values))
    (chart / "templates" / "stale.yaml").write_text("kind: Left\n")
    make_chart(project, chart)
    again = yaml.safe_load((chart / "values.yaml").read_text())
    assert again["manager"]["replicas"] == 3 and again["manager"]["image"]["tag"] == "9.9.9"
    assert again["extra"] == {"note": "mine"}
    assert "# Replicas of the operator" in (chart / "values.yaml").read_text()
    assert not (chart / "templates" / "stale.yaml").exists()
    rendered = helm.template(chart, "fresh-operator-system")
    (deployment,) = [obj for (kind, _), obj in rendered.items() if kind == "Deployment"]
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":9.9.9")
