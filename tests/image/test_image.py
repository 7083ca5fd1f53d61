"""The image built from the repository's Dockerfile, and the operator running from it in-cluster
style against the local cluster, with only the ServiceAccount credentials of ``config/``."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from ansible_operator import __version__
from ansible_operator.core import ansible_cores
from ansible_operator.devcluster import binaries, deploy
from tests.e2e.crds import GROUP, VERSION, install_crds, kind_crd
from tests.e2e.rbac import account_binding
from tests.e2e.waiting import wait_until
from tests.image.access import account_token
from tests.image.pod import PodmanPod, service_account_dir
from tests.image.samples import SAMPLES, apply_samples

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"  # the test role, mounted at /opt/test
ENTRYPOINT = ["/usr/bin/tini", "--", "ansible-operator", "run", "--watches-file=./watches.yaml"]
MAX_SIZE_MIB = 700  # measured 516 MiB: ansible-core, kubernetes.core and the Python client


def in_image(podman, built_image, *argv: str) -> str:
    done = podman.run("run", "--rm", "--read-only", "--entrypoint", argv[0], built_image, *argv[1:])
    return done.stdout


def test_image_runs_the_operator_as_non_root(podman, built_image):
    config = json.loads(podman.run("image", "inspect", built_image).stdout)[0]["Config"]
    assert config["User"] == "1001"
    assert config["Entrypoint"] == ENTRYPOINT
    assert config["WorkingDir"] == "/opt/ansible"
    assert in_image(podman, built_image, "id", "-u").strip() == "1001"


def test_image_reports_its_versions(podman, built_image):
    """This repository's image is on its default core (dev.mk's ANSIBLE build argument): the
    package alone would bring the newest."""
    version = in_image(podman, built_image, "ansible-operator", "version")
    assert f'ansible-operator version: "v{__version__}"' in version
    assert f'ansible-core version: "{ansible_cores.DEFAULT.name}.' in version, version


def test_image_has_the_collections_the_roles_need(podman, built_image):
    listed = in_image(podman, built_image, "ansible-galaxy", "collection", "list")
    needed = ["operator_sdk.util"] + [
        c["name"] for c in yaml.safe_load((REPO / "requirements.yml").read_text())["collections"]
    ]
    assert "kubernetes.core" in needed
    for collection in needed:
        assert f"\n{collection} " in listed, f"{collection} missing from the image:\n{listed}"


def test_image_size(podman, built_image):
    size = int(podman.run("image", "inspect", "--format", "{{.Size}}", built_image).stdout)
    assert size < MAX_SIZE_MIB * 2**20, f"{size / 2**20:.0f} MiB"


@pytest.fixture
def deployed(cluster, built_image) -> Iterator[list[dict]]:
    """``config/default`` applied with the image named, as ``make deploy`` does; removed after
    (but for the CRDs and the namespace objects other tests on the same cluster may use)."""
    kubectl = binaries.find()["kubectl"]
    manifests = deploy.render(kubectl, REPO, built_image)
    deploy.apply(kubectl, cluster.kubeconfig, manifests)
    docs = [d for d in yaml.safe_load_all(manifests) if d]
    yield docs
    kept = {"CustomResourceDefinition", "Namespace"}
    rest = yaml.safe_dump_all([d for d in docs if d["kind"] not in kept])
    deploy.delete(kubectl, cluster.kubeconfig, rest)


def _find(docs: list[dict], kind: str, name_ends: str = "") -> dict:
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"].endswith(name_ends))


def _condition(obj: dict, ctype: str) -> dict | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond["type"] == ctype:
            return cond
    return None


def _get(cluster, namespace: str, ref) -> dict:
    group, version, plural, name = ref
    with cluster.api_client() as api_client:
        return client.CustomObjectsApi(api_client).get_namespaced_custom_object(
            group, version, namespace, plural, name
        )


@pytest.fixture
def pod(podman, built_image, cluster) -> Iterator[PodmanPod]:
    started = PodmanPod(podman, built_image, cluster.kubeconfig)
    yield started
    if started.running() is False:
        print(started.logs())
    started.remove()


def test_a_missing_rbac_rule_is_a_failure_naming_verb_and_resource(
    cluster, namespace, deployed, pod, tmp_path
):
    """The manifests' rules without those for Deployments: the memcached sample fails saying so."""
    rules = [
        rule
        for rule in _find(deployed, "ClusterRole")["rules"]
        if "apps" not in rule.get("apiGroups", [])
    ] + _find(deployed, "Role")["rules"]  # the leader election rules, here in this namespace
    name = _account(cluster, namespace, "limited", rules)
    container = _find(deployed, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    secrets = service_account_dir(
        tmp_path / "serviceaccount",
        cluster.kubeconfig,
        account_token(cluster, namespace, name),
        namespace,
    )
    pod.start(container, secrets, {"WATCH_NAMESPACE": namespace})
    pod.wait_ready()
    memcached = [p for p in SAMPLES if "memcached" in p.name]
    (ref,) = apply_samples(cluster, namespace, memcached)

    def failure():
        assert pod.running(), pod.logs()
        return _condition(_get(cluster, namespace, ref), "Failure")

    cond = wait_until(
        lambda: (c := failure()) and c.get("status") == "True" and c, what="Failure", timeout=300
    )
    message = cond["message"]
    assert "forbidden" in message.lower(), message
    assert '"deployments"' in message, message
    assert any(verb in message for verb in ("cannot get", "cannot create", "cannot list")), message


def _account(cluster, namespace: str, prefix: str, rules: list[dict]) -> str:
    """A ServiceAccount of ``namespace`` with a Role of ``rules`` there; its name."""
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    with cluster.api_client() as api_client:
        rbac, core = client.RbacAuthorizationV1Api(api_client), client.CoreV1Api(api_client)
        core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
        rbac.create_namespaced_role(namespace, {"metadata": {"name": name}, "rules": rules})
        rbac.create_namespaced_role_binding(
            namespace, account_binding(name, "Role", name, name, namespace)
        )
    return name


@pytest.mark.parametrize("runner", ["warm", "cold"])
def test_a_modules_kubernetes_client_reaches_the_api_server_only_through_the_proxy(
    cluster, namespace, pod, tmp_path, runner
):
    """Whichever loader of the Kubernetes client a role's module calls in the Pod, it talks to
    the run's proxy (its loopback address, the run's token; the API server sees the operator's
    ServiceAccount behind it) or is refused; never to the API server with the mounted token."""
    with cluster.api_client() as api_client:
        install_crds(api_client, [kind_crd("Whoami")])
    account = _account(
        cluster,
        namespace,
        "whoami",
        [
            {"apiGroups": [GROUP], "resources": ["whoamis"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [GROUP], "resources": ["whoamis/status"], "verbs": ["patch", "update"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
        ],
    )
    secrets = service_account_dir(
        tmp_path / "sa", cluster.kubeconfig, account_token(cluster, namespace, account), namespace
    )
    args = ["--watches-file=/opt/test/watches.yaml", f"--runner={runner}"]
    pod.start({"args": args}, secrets, {"WATCH_NAMESPACE": namespace}, {DATA: "/opt/test"})
    ref = (GROUP, VERSION, "whoamis", "who")
    with cluster.api_client() as api_client:
        client.CustomObjectsApi(api_client).create_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            "whoamis",
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "Whoami",
                "metadata": {"name": "who"},
                "spec": {},
            },
        )

    def reported():
        assert pod.running(), pod.logs()
        obj = _get(cluster, namespace, ref)
        failure = _condition(obj, "Failure") or {}
        assert failure.get("status") != "True", failure.get("message")
        return (obj.get("status") or {}).get("loaders")

    loaders = wait_until(reported, what="the loaders reported", timeout=300, every=2)
    records = [json.loads(line) for line in pod.logs().splitlines() if line.startswith("{")]
    (proxy,) = [r["address"] for r in records if r.get("msg") == "Starting proxy server"]
    through_proxy = {
        "server": f"http://{proxy}",
        "token": "run",
        "username": f"system:serviceaccount:{namespace}:{account}",
    }
    assert loaders == {
        "load_config": through_proxy,
        "load_kube_config": through_proxy,
        # Refused before it reads the mounted token: the run has no in-cluster variables.
        "load_incluster_config": {"error": "Service host/port is not set."},
    }


def test_without_a_service_account_token_the_operator_exits_with_one_line(pod, tmp_path):
    empty = tmp_path / "serviceaccount"
    empty.mkdir()
    pod.start({"args": []}, empty, {})
    wait_until(lambda: not pod.running(), what="the operator to exit", timeout=120)
    assert pod.exit_code() != 0
    assert _error_lines(pod.logs()) == [
        "ansible-operator run: no Kubernetes credentials: in a Pod (KUBERNETES_SERVICE_HOST is "
        "set) but /var/run/secrets/kubernetes.io/serviceaccount/token does not exist: is a "
        "ServiceAccount token mounted (automountServiceAccountToken)?"
    ]


def _error_lines(logs: str) -> list[str]:
    """What the operator said besides its JSON log records: the one-line error, no traceback."""
    return [line for line in logs.splitlines() if line.strip() and not line.startswith("{")]


def test_an_image_whose_ansible_finds_no_kubernetes_core_exits_with_one_line(
    cluster, pod, tmp_path
):
    """As an image built without the collections: its Ansible is told not to look in Python's
    site-packages, where the image keeps kubernetes.core."""
    secrets = service_account_dir(tmp_path / "sa", cluster.kubeconfig, "x", "default")
    pod.start({"args": []}, secrets, {"ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "false"})
    wait_until(lambda: not pod.running(), what="the operator to exit", timeout=120)
    assert pod.exit_code() != 0
    (line,) = _error_lines(pod.logs())
    assert line.startswith(
        "ansible-operator run: the Ansible collection kubernetes.core is not installed where "
        "/opt/venv/bin/ansible-galaxy looks"
    ), line


def test_with_a_wrong_ca_the_operator_exits_with_one_line(cluster, pod, tmp_path):
    secrets = service_account_dir(tmp_path / "sa", cluster.kubeconfig, "x", "default")
    ca_key = tmp_path / "other-ca.pem"
    _other_ca(ca_key)
    (secrets / "ca.crt").write_bytes(ca_key.read_bytes())
    pod.start({"args": []}, secrets, {})
    wait_until(lambda: not pod.running(), what="the operator to exit", timeout=120)
    assert pod.exit_code() != 0
    (line,) = _error_lines(pod.logs())
    assert "certificate" in line.lower(), line


def _other_ca(path: Path) -> None:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "not the cluster's CA")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
