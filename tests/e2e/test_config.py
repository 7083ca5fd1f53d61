"""The kustomize tree in config/ on a real API server.

- config/default applies and makes what it says (the image need not run: kwok marks the Pod
  Running without containers);
- every sample validates against its CRD (server-side dry run), and a bad one is refused;
- config/testing's RBAC, bound in one namespace only, is enough for the operator: run with that
  ServiceAccount's token, every sample reaches Successful, and nothing outside the namespace is
  allowed.

Each test installs the tree under a namespace and name prefix of its own (a kustomization over
config/<overlay>), so that sessions sharing one cluster do not collide; the CRDs are shared.
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from ansible_operator.devcluster import binaries, deploy

from .project import (
    CONFIG,
    REPO,
    RepoOperator,
    crd_plurals,
    install_repo_crds,
    kubectl,
    samples,
    wait_all_successful,
    watched_version,
)
from .rbac import account_binding
from .waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.long]


@dataclass(frozen=True)
class Installed:
    """config/<overlay> installed under a namespace and a name prefix of the test's own."""

    kubeconfig: Path
    directory: Path
    namespace: str
    prefix: str  # ours, before the overlay's own namePrefix

    def name(self, overlay_name: str) -> str:
        return self.prefix + overlay_name


def install(kubeconfig: Path, tmp_path: Path, overlay: str) -> Installed:
    unique = uuid.uuid4().hex[:6]
    directory = tmp_path / f"kustomize-{overlay}"
    directory.mkdir()
    installed = Installed(kubeconfig, directory, f"{overlay}-{unique}", f"t{unique}-")
    (directory / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": [os.path.relpath(CONFIG / overlay, directory)],
                "namespace": installed.namespace,
                "namePrefix": installed.prefix,
            }
        )
    )
    return installed


def uninstall(installed: Installed) -> None:
    """Everything but the CRDs, which the other tests of the session share."""
    kc, ns = installed.kubeconfig, installed.namespace
    # No operator runs any more to remove memcached's finalizer.
    for line in kubectl(
        kc, "get", "memcacheds", "-n", ns, "-o", "name", check=False
    ).stdout.split():
        unfinalize = '{"metadata":{"finalizers":null}}'
        kubectl(kc, "patch", line, "-n", ns, "--type=merge", "-p", unfinalize, check=False)
    rendered = kubectl(kc, "kustomize", str(installed.directory)).stdout
    cluster_scoped = [
        f"{obj['kind'].lower()}/{obj['metadata']['name']}"
        for obj in yaml.safe_load_all(rendered)
        if obj and obj["kind"] in ("ClusterRole", "ClusterRoleBinding")
    ]
    kubectl(kc, "delete", "--ignore-not-found", "--wait=false", f"namespace/{ns}", *cluster_scoped,
            check=False)  # fmt: skip


def get(kubeconfig: Path, *args: str) -> dict:
    return yaml.safe_load(kubectl(kubeconfig, "get", "-o", "yaml", *args).stdout)


# -- config/default ----------------------------------------------------------------------------


@pytest.fixture
def default(cluster, tmp_path):
    installed = install(cluster.kubeconfig, tmp_path, "default")
    installed_output = kubectl(cluster.kubeconfig, "apply", "-k", str(installed.directory)).stdout
    try:
        yield installed, installed_output
    finally:
        uninstall(installed)


def test_default_makes_the_operator_deployment(default):
    installed, applied = default
    kc, ns = installed.kubeconfig, installed.namespace
    for plural_group in (f"{p}.{g}" for (g, _), p in crd_plurals().items()):
        assert f"customresourcedefinition.apiextensions.k8s.io/{plural_group}" in applied
    manager = installed.name("ansible-operator-controller-manager")
    for obj in (
        f"serviceaccount/{manager}",
        f"role/{installed.name('ansible-operator-leader-election-role')}",
        f"rolebinding/{installed.name('ansible-operator-leader-election-rolebinding')}",
        f"service/{manager}-metrics-service",
    ):
        get(kc, "-n", ns, obj)
    binding = get(
        kc, f"clusterrolebinding/{installed.name('ansible-operator-manager-rolebinding')}"
    )
    assert binding["roleRef"]["name"] == installed.name("ansible-operator-manager-role")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": manager, "namespace": ns}]

    # Secure metrics: the operator may review scrapers, a scraper needs metrics-reader.
    auth = get(
        kc, f"clusterrolebinding/{installed.name('ansible-operator-metrics-auth-rolebinding')}"
    )
    assert auth["subjects"] == binding["subjects"]
    auth_role = get(kc, f"clusterrole/{auth['roleRef']['name']}")
    assert {
        (r["apiGroups"][0], r["resources"][0], tuple(r["verbs"])) for r in auth_role["rules"]
    } == {
        ("authentication.k8s.io", "tokenreviews", ("create",)),
        ("authorization.k8s.io", "subjectaccessreviews", ("create",)),
    }
    reader = get(kc, f"clusterrole/{installed.name('ansible-operator-metrics-reader')}")
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    service = get(kc, "-n", ns, f"service/{manager}-metrics-service")
    assert [(p["name"], p["port"]) for p in service["spec"]["ports"]] == [("https", 8443)]

    deployment = get(kc, "-n", ns, f"deployment/{manager}")
    pod_spec = deployment["spec"]["template"]["spec"]
    [container] = pod_spec["containers"]
    assert pod_spec["serviceAccountName"] == manager
    assert pod_spec["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert "--leader-elect" in container["args"]
    assert "--leader-election-id=ansible-operator" in container["args"]
    assert {"--metrics-secure", "--metrics-require-rbac"} <= set(container["args"])
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["livenessProbe"]["httpGet"]["port"] == 6789
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["readinessProbe"]["httpGet"]["port"] == 6789
    assert {"limits", "requests"} <= set(container["resources"])
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]
    assert "WATCH_NAMESPACE" not in {e["name"] for e in container.get("env", [])}

    def pod_running():
        pods = get(kc, "-n", ns, "pods", "-l", "control-plane=controller-manager")
        return [p for p in pods["items"] if p["status"].get("phase") == "Running"]

    wait_until(pod_running, what="the controller-manager Pod Running (kwok)", timeout=120)


# -- samples against their CRDs ----------------------------------------------------------------


def _stored_version(sample) -> str:
    for path in (CONFIG / "crd/bases").glob("*.yaml"):
        crd = yaml.safe_load(path.read_text())
        if (crd["spec"]["group"], crd["spec"]["names"]["kind"]) == (sample.group, sample.kind):
            return next(v["name"] for v in crd["spec"]["versions"] if v["storage"])
    raise AssertionError(f"no CRD for {sample.kind}")


@pytest.mark.parametrize("sample", samples(), ids=lambda s: f"{s.kind}-{s.version}")
def test_sample_validates_against_its_crd(cluster, namespace, sample, tmp_path):
    with cluster.api_client() as api_client:
        install_repo_crds(api_client)
    operator = None
    if sample.version != _stored_version(sample):
        # Stored at another version: the API server converts it, through the operator's webhook.
        operator = RepoOperator(tmp_path, cluster.kubeconfig, [namespace])
        operator.start()
    try:
        result = kubectl(
            cluster.kubeconfig, "apply", "--dry-run=server", "-n", namespace, "-f",
            str(sample.path),
        )  # fmt: skip
    finally:
        if operator is not None:
            operator.stop()
    assert "(server dry run)" in result.stdout


def test_a_sample_with_a_wrong_type_is_refused(cluster, namespace, tmp_path):
    with cluster.api_client() as api_client:
        install_repo_crds(api_client)
    [memcached] = [s for s in samples() if s.kind == "Memcached"]
    bad = yaml.safe_load(memcached.path.read_text())
    bad["spec"]["size"] = "two"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    result = kubectl(
        cluster.kubeconfig, "apply", "--dry-run=server", "-n", namespace, "-f", str(path),
        check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "spec.size" in result.stderr


# -- config/testing: least privilege, and enough -----------------------------------------------


@pytest.fixture
def testing(cluster, tmp_path):
    installed = install(cluster.kubeconfig, tmp_path, "testing")
    kubectl(cluster.kubeconfig, "apply", "-k", str(installed.directory))
    try:
        yield installed
    finally:
        uninstall(installed)


def service_account(installed: Installed) -> str:
    return (
        f"system:serviceaccount:{installed.namespace}:{installed.name('osdk-controller-manager')}"
    )


def service_account_kubeconfig(installed: Installed, token: str, path: Path) -> Path:
    config = yaml.safe_load(installed.kubeconfig.read_text())
    cluster = config["clusters"][0]
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "local", "cluster": cluster["cluster"]}],
                "users": [{"name": "operator", "user": {"token": token}}],
                "contexts": [
                    {
                        "name": "operator",
                        "context": {
                            "cluster": "local",
                            "user": "operator",
                            "namespace": installed.namespace,
                        },
                    }
                ],
                "current-context": "operator",
            }
        )
    )
    return path


def can_i(installed: Installed, *args: str) -> bool:
    result = kubectl(
        installed.kubeconfig, "auth", "can-i", f"--as={service_account(installed)}", *args,
        check=False,
    )  # fmt: skip
    return result.stdout.strip() == "yes"


def test_testing_rbac_is_namespaced(testing):
    kc, ns = testing.kubeconfig, testing.namespace
    assert get(kc, "-n", ns, f"rolebinding/{testing.name('osdk-manager-rolebinding')}")
    crb = kubectl(kc, "get", f"clusterrolebinding/{testing.name('osdk-manager-rolebinding')}",
                  check=False)  # fmt: skip
    assert crb.returncode != 0
    elsewhere = f"other-{uuid.uuid4().hex[:6]}"
    assert can_i(testing, "create", "deployments.apps", "-n", ns)
    status = ("memcacheds.cache.example.com", "--subresource=status", "-n", ns)
    assert can_i(testing, "update", *status)
    assert not can_i(testing, "update", "memcacheds.cache.example.com", "-n", ns)
    assert not can_i(testing, "create", "deployments.apps", "-n", elsewhere)
    assert not can_i(testing, "list", "memcacheds.cache.example.com", "-n", elsewhere)
    assert not can_i(testing, "list", "secrets", "-n", ns)
    assert not can_i(testing, "delete", "deployments.apps", "-n", ns)
    assert not can_i(testing, "list", "customresourcedefinitions.apiextensions.k8s.io")
    assert not can_i(testing, "list", "namespaces")


def conversion_rules(installed: Installed) -> str:
    """A ClusterRole of manager-role's rules on CRDs, bound to the operator's ServiceAccount."""
    rules = yaml.safe_load((CONFIG / "rbac/role.yaml").read_text())["rules"]
    name = installed.name(f"conversion-{uuid.uuid4().hex[:6]}")
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [r for r in rules if r["resources"] == ["customresourcedefinitions"]],
    }
    binding = account_binding(
        name, "ClusterRole", name, installed.name("osdk-controller-manager"), installed.namespace
    )
    return yaml.safe_dump_all([role, binding])


def test_testing_rbac_is_enough_for_every_sample(testing, cluster, crs, tmp_path):
    kc, ns = testing.kubeconfig, testing.namespace
    with cluster.api_client() as api_client:
        install_repo_crds(api_client)
    token = kubectl(
        kc, "create", "token", testing.name("osdk-controller-manager"), "-n", ns,
        "--duration=1h",
    ).stdout.strip()  # fmt: skip
    sa_kubeconfig = service_account_kubeconfig(testing, token, tmp_path / "sa.kubeconfig")
    # CRDs are in no namespace: the conversion webhook's rules on them (docs/versions.md) are
    # config/rbac/role.yaml's, bound cluster-wide here as a namespaced install must bind them.
    crd_rules = tmp_path / "conversion-rules.yaml"
    crd_rules.write_text(conversion_rules(testing))
    kubectl(kc, "apply", "-f", str(crd_rules))
    op = RepoOperator(tmp_path, sa_kubeconfig, [ns])
    op.start()
    try:
        kubectl(kc, "apply", "-k", str(CONFIG / "samples"), "-n", ns)
        wait_all_successful(crs, ns)
        for sample in samples():  # and no run failed on the way
            runs = op.reconciles(sample.kind, sample.group, watched_version(sample))
            assert runs["failed"] == 0 and runs["succeeded"] >= 1, (sample.kind, runs)
        # and deleting them works with these rights too (memcached's finalizer); a run that
        # was under way when its CR went may fail on the missing CR, never on a refusal
        kubectl(kc, "delete", "-k", str(CONFIG / "samples"), "-n", ns, "--timeout=120s")
        assert "forbidden" not in op.log().lower()
    finally:
        op.stop()
        kubectl(kc, "delete", "-f", str(crd_rules), "--ignore-not-found", check=False)
        op.print_log()


def test_the_ha_config_renders_three_sharded_replicas_with_a_budget_and_spread():
    docs = list(
        yaml.safe_load_all(deploy.render(binaries.find()["kubectl"], REPO, "reg/op:1", "ha"))
    )
    (manager,) = [d for d in docs if d["kind"] == "Deployment"]
    spec = manager["spec"]
    args = spec["template"]["spec"]["containers"][0]["args"]
    assert spec["replicas"] == 3
    assert "--shards=auto" in args and "--leader-elect" not in args
    assert spec["template"]["spec"]["affinity"]["podAntiAffinity"]
    (budget,) = [d for d in docs if d["kind"] == "PodDisruptionBudget"]
    assert budget["spec"]["selector"] == spec["selector"]


def test_the_network_policies_admit_only_the_webhook_and_the_metrics_of_the_manager(
    cluster, namespace, tmp_path
):
    """config/network-policy, added to config/default as its comment says: each policy selects
    the manager's Pod and opens a port it has, and the API server accepts it. Whether a network
    plugin enforces them cannot be seen here: the local cluster has none (docs/security.md)."""
    project = tmp_path / "project"
    shutil.copytree(CONFIG, project / "config")
    default = project / "config/default/kustomization.yaml"
    text = default.read_text()
    assert "  # - ../network-policy\n" in text
    default.write_text(text.replace("  # - ../network-policy\n", "  - ../network-policy\n"))
    kubectl_path = binaries.find()["kubectl"]
    docs = list(yaml.safe_load_all(deploy.render(kubectl_path, project, "reg/op:1", "default")))
    (manager,) = [d for d in docs if d["kind"] == "Deployment"]
    pod = manager["spec"]["template"]
    ports = {p["name"]: p["containerPort"] for p in pod["spec"]["containers"][0]["ports"]}
    policies = {d["metadata"]["name"]: d for d in docs if d["kind"] == "NetworkPolicy"}
    opened = {}
    for name, policy in policies.items():
        assert policy["metadata"]["namespace"] == manager["metadata"]["namespace"]
        assert policy["spec"]["policyTypes"] == ["Ingress"]
        selector = policy["spec"]["podSelector"]["matchLabels"]
        assert selector.items() <= pod["metadata"]["labels"].items(), name
        ((rule,),) = [policy["spec"]["ingress"]]
        ((source,), (port,)) = rule["from"], rule["ports"]
        opened[ports[port["port"]]] = source["namespaceSelector"]["matchLabels"]
    assert opened == {9443: {"webhook": "enabled"}, 8443: {"metrics": "enabled"}}
    for name, policy in policies.items():
        policy["metadata"]["namespace"] = namespace
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(policy))
        kubectl(
            cluster.kubeconfig, "create", "--dry-run=server", "-f", str(tmp_path / f"{name}.yaml")
        )
