"""Dependent resources against the real cluster: owners injected by the proxy, the garbage
collector removing what a CR owned, drift repaired through dependent watches (also after a
restart), the proxy's token, every common kubernetes.core module through it, and bad input."""

from __future__ import annotations

import re
import socket
import time
import urllib.error
import urllib.request

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from .conftest import (
    GROUP,
    VERSION,
    condition,
    config_map_data,
    install_crds,
    new_cr,
    settle,
    wait_condition,
)
from .waiting import wait_until

pytestmark = pytest.mark.e2e

KINDS = ["Stack", "NsMaker", "Keeper", "Toolbox", "Garbler"]
SECRET_BLACKLISTED = {"group": "", "version": "v1", "kind": "Secret"}


@pytest.fixture(scope="module")
def dependent_crds(cluster) -> None:
    install_crds(cluster, KINDS)


@pytest.fixture
def apps(cluster):
    with cluster.api_client() as api_client:
        yield client.AppsV1Api(api_client)


def create_cr(crs, namespace, kind, name, spec):
    return crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, kind.lower() + "s", new_cr(kind, name, spec)
    )


def run_banner(kind: str, name: str, namespace: str) -> str:
    return f"Ansible Task Status Event StdOut ({GROUP}/{VERSION}, Kind={kind}, {name}/{namespace})"


def _runs(operator, kind, name, namespace, since: int = 0) -> tuple[set[str], set[str]]:
    """The runner job ids of a CR in the operator log: those started, and those finished."""
    started: set[str] = set()
    finished: set[str] = set()
    who = f"runner {kind} {namespace}/{name}:"
    for record in re.split(r"\n(?=\d{4}-\d\d-\d\dT)", operator.log()[since:]):
        job = re.search(r"job=(\d+)", record)
        if job and who in record.split("\n", 1)[0]:
            started.add(job.group(1))
            if run_banner(kind, name, namespace) in record:
                finished.add(job.group(1))
    return started, finished


def runs(operator, kind, name, namespace, since: int = 0) -> int:
    """How many runs of the CR have finished."""
    return len(_runs(operator, kind, name, namespace, since)[1])


def wait_quiet(operator, kind, name, namespace, quiet: float = 6, timeout: float = 240) -> int:
    """Wait until every run of the CR has finished and none started for ``quiet`` seconds;
    the number of runs then."""
    deadline = time.monotonic() + timeout
    last, since = _runs(operator, kind, name, namespace), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(1)
        now = _runs(operator, kind, name, namespace)
        if now != last:
            last, since = now, time.monotonic()
        elif now[1] and now[0] == now[1] and time.monotonic() - since >= quiet:
            return len(now[1])
    raise AssertionError(f"{kind} {name} never settled; runs started, finished: {last}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def owner_refs(obj) -> list[tuple[str, str, str, str]]:
    return [(r.api_version, r.kind, r.name, r.uid) for r in (obj.metadata.owner_references or [])]


def gone(read) -> bool:
    try:
        read()
    except ApiException as err:
        if err.status == 404:
            return True
        raise
    return False


def test_created_dependents_are_owned_watched_and_collected(
    operator, crs, core, apps, namespace, dependent_crds
):
    port = free_port()
    operator.write_watches([{"kind": "Stack", "role": "stack", "blacklist": [SECRET_BLACKLISTED]}])
    operator.start(f"--proxy-port={port}")
    cr = create_cr(crs, namespace, "Stack", "app", {"greeting": "hi"})
    owner = (f"{GROUP}/{VERSION}", "Stack", "app", cr["metadata"]["uid"])

    wait_until(lambda: config_map_data(core, namespace, "app-config"), what="the ConfigMap")
    wait_until(
        lambda: gone(lambda: core.read_namespaced_secret("app-secret", namespace)) is False,
        what="the Secret",
    )
    # Each dependent names the CR as its owner, once, without controller/blockOwnerDeletion
    # (the run reached the API through the proxy on the port it was told to use).
    deployment = apps.read_namespaced_deployment("app-web", namespace)
    service = core.read_namespaced_service("app-web", namespace)
    config = core.read_namespaced_config_map("app-config", namespace)
    secret = core.read_namespaced_secret("app-secret", namespace)
    for obj in (deployment, service, config, secret):
        assert owner_refs(obj) == [owner], obj.kind
        ref = obj.metadata.owner_references[0]
        assert ref.controller is None and ref.block_owner_deletion is None
    before = wait_quiet(operator, "Stack", "app", namespace)
    log = operator.log()
    assert "Watching dependent resource" in log
    assert "Kind=Deployment" in log and "Kind=ConfigMap" in log and "Kind=Service" in log
    assert "Kind=Secret owner" not in log  # the blacklisted kind is never watched

    # Scaling the Deployment by hand is reverted by the re-run it causes.
    apps.patch_namespaced_deployment_scale("app-web", namespace, {"spec": {"replicas": 3}})
    wait_until(
        lambda: (
            apps.read_namespaced_deployment("app-web", namespace).spec.replicas == 1
            and runs(operator, "Stack", "app", namespace) > before
        ),
        what="the Deployment scaled back to 1",
    )

    # Deleting the ConfigMap brings it back.
    old_uid = config.metadata.uid
    core.delete_namespaced_config_map("app-config", namespace)

    def recreated():
        try:
            return core.read_namespaced_config_map("app-config", namespace).metadata.uid != old_uid
        except ApiException as err:
            if err.status == 404:
                return False
            raise

    wait_until(recreated, what="the ConfigMap re-created")

    # A change to the blacklisted kind does not start a run.
    settled = wait_quiet(operator, "Stack", "app", namespace)
    core.patch_namespaced_secret("app-secret", namespace, {"stringData": {"token": "changed"}})
    core.delete_namespaced_secret("app-secret", namespace)
    settle()
    assert runs(operator, "Stack", "app", namespace) == settled

    # Deleting the CR lets the garbage collector remove everything it owned; the operator,
    # told about dependents whose owner is gone, shrugs.
    crs.delete_namespaced_custom_object(GROUP, VERSION, namespace, "stacks", "app")
    wait_until(
        lambda: (
            gone(lambda: apps.read_namespaced_deployment("app-web", namespace))
            and gone(lambda: core.read_namespaced_service("app-web", namespace))
            and gone(lambda: core.read_namespaced_config_map("app-config", namespace))
        ),
        what="the dependents garbage-collected",
    )
    settle(3)
    assert operator.proc.poll() is None
    assert "Traceback" not in operator.log()


def test_a_request_without_the_run_token_is_refused(operator, crs, namespace, dependent_crds):
    port = free_port()
    operator.write_watches([{"kind": "Keeper", "role": "keeper"}])
    operator.start(f"--proxy-port={port}")
    wait_until(lambda: "Starting proxy server" in operator.log(), what="the proxy")
    url = f"http://127.0.0.1:{port}/api/v1/namespaces/{namespace}/configmaps"
    for headers in ({}, {"Authorization": "Bearer not-a-run-token"}, {"Authorization": "Basic x"}):
        request = urllib.request.Request(url, headers=headers)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 401
    assert f"127.0.0.1:{port}" in operator.log()


def test_a_cluster_scoped_dependent_gets_annotations_and_is_watched(
    operator, crs, core, namespace, dependent_crds
):
    made = f"{namespace}-made"
    operator.namespaces = []  # cluster-scoped dependents are watched only across all namespaces
    operator.write_watches(
        [{"kind": "NsMaker", "role": "ns_maker", "watchClusterScopedResources": True}]
    )
    operator.start()
    try:
        create_cr(crs, namespace, "NsMaker", "maker", {"team": "blue"})

        def made_namespace():
            try:
                return core.read_namespace(made)
            except ApiException as err:
                if err.status == 404:
                    return None
                raise

        ns = wait_until(made_namespace, what="the Namespace")
        assert ns.metadata.annotations["operator-sdk/primary-resource"] == f"{namespace}/maker"
        assert ns.metadata.annotations["operator-sdk/primary-resource-type"] == (f"NsMaker.{GROUP}")
        assert not ns.metadata.owner_references  # a namespaced CR cannot own a Namespace
        wait_quiet(operator, "NsMaker", "maker", namespace)

        core.patch_namespace(made, {"metadata": {"labels": {"team": "red"}}})
        wait_until(
            lambda: core.read_namespace(made).metadata.labels.get("team") == "blue",
            what="the relabelled Namespace reverted",
        )
    finally:
        operator.stop()
        try:
            core.delete_namespace(made)
        except ApiException as err:
            if err.status != 404:
                raise


def test_dependent_watches_come_back_after_a_restart(
    operator, crs, core, namespace, dependent_crds
):
    operator.write_watches([{"kind": "Keeper", "role": "keeper"}])
    operator.start()
    create_cr(crs, namespace, "Keeper", "k", {"touch": True})
    wait_until(lambda: config_map_data(core, namespace, "k-kept"), what="the kept ConfigMap")
    wait_quiet(operator, "Keeper", "k", namespace)
    operator.kill()

    # While the operator is down the role is told to make no API call at all: after the
    # restart nothing but the operator's own recovery can know the ConfigMap's kind.
    crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, "keepers", "k", {"spec": {"touch": False}}
    )
    offset = len(operator.log())
    operator.start()
    wait_until(
        lambda: (
            runs(operator, "Keeper", "k", namespace, since=offset) >= 1
            and "Kind=ConfigMap owner" in operator.log()[offset:]
        ),
        what="the first run after the restart and the ConfigMap watched again",
    )
    before = wait_quiet(operator, "Keeper", "k", namespace)
    core.delete_namespaced_config_map("k-kept", namespace)
    wait_until(
        lambda: runs(operator, "Keeper", "k", namespace) > before,
        what="a run caused by deleting the dependent after the restart",
    )

    # And with the role touching it again, the deleted ConfigMap comes back.
    crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, "keepers", "k", {"spec": {"touch": True}}
    )
    wait_until(lambda: config_map_data(core, namespace, "k-kept"), what="the ConfigMap back")


def test_kubernetes_core_modules_work_through_the_proxy(
    operator, crs, core, namespace, dependent_crds
):
    for name, labels in (("made-elsewhere", {"toolbox": "yes"}), ("json-elsewhere", {})):
        core.create_namespaced_config_map(
            namespace, {"metadata": {"name": name, "labels": labels}, "data": {"a": "b"}}
        )
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "listed-too", "labels": {"toolbox": "maybe"}}}
    )
    pod = {
        "metadata": {"name": "runner"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    core.create_namespaced_pod(namespace, pod)
    wait_until(
        lambda: core.read_namespaced_pod("runner", namespace).status.phase == "Running",
        what="the Pod running",
    )
    operator.write_watches([{"kind": "Toolbox", "role": "toolbox"}])
    operator.start()
    cr = create_cr(crs, namespace, "Toolbox", "tools", {"pod": "runner"})
    owner = (f"{GROUP}/{VERSION}", "Toolbox", "tools", cr["metadata"]["uid"])

    results = wait_until(
        lambda: config_map_data(core, namespace, "tools-results"), what="the results"
    )
    # create, client-side apply, server-side apply, patch and JSON patch all mark the owner.
    for name in ("created", "applied", "server-applied", "made-elsewhere", "json-elsewhere"):
        obj = core.read_namespaced_config_map(name, namespace)
        assert owner_refs(obj) == [owner], name
        assert obj.data["how"] != "", name
    # k8s_info with a set-based selector is answered by the API server itself.
    assert results["listed"] == "listed-too,made-elsewhere"
    # kwok pods have no containers: exec and log reach the API server through the proxy and
    # bring back its own answer, which names the kubelet it tried to reach.
    assert results["exec"] == f"10250/exec/{namespace}/runner/main"
    assert results["log"] == f"10250/containerLogs/{namespace}/runner/main"
    # The failures of exec and log were ignored by the role: the run succeeded.
    wait_condition(crs, namespace, "Toolbox", "tools", "Successful")


def test_bad_input_gets_the_api_servers_answer_and_the_proxy_stays_up(
    operator, crs, core, namespace, dependent_crds
):
    operator.write_watches([{"kind": "Garbler", "role": "garbler"}])
    operator.start()
    create_cr(crs, namespace, "Garbler", "g", {"broken": True})

    def failed():
        obj = crs.get_namespaced_custom_object(GROUP, VERSION, namespace, "garblers", "g")
        c = condition(obj, "Failure")
        return c if c and c["status"] == "True" else None

    failure = wait_until(failed, what="Garbler Failure")
    # The object the API server refused: its own message reaches the task, hence the status.
    assert "Failed to create object" in failure["message"]
    assert "cannot unmarshal array" in failure["message"] or "Invalid" in failure["message"]
    answer = config_map_data(core, namespace, "g-answer")
    assert answer["status"] == "400"
    assert "json" in answer["message"].lower() or "decode" in answer["message"].lower()

    # The proxy is still serving: fixed input succeeds.
    crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, "garblers", "g", {"spec": {"broken": False}}
    )

    def succeeded():
        obj = crs.get_namespaced_custom_object(GROUP, VERSION, namespace, "garblers", "g")
        c = condition(obj, "Successful")
        return c if c and c["status"] == "True" else None

    wait_until(succeeded, what="Garbler Successful", timeout=300)
    assert operator.proc.poll() is None


def test_inject_owner_ref_false_turns_marks_and_watches_off(
    operator, crs, core, namespace, dependent_crds
):
    operator.write_watches([{"kind": "Keeper", "role": "keeper"}])
    operator.start("--inject-owner-ref=false")
    create_cr(crs, namespace, "Keeper", "plain", {"touch": True})
    wait_until(lambda: config_map_data(core, namespace, "plain-kept"), what="the ConfigMap")
    assert not core.read_namespaced_config_map("plain-kept", namespace).metadata.owner_references
    settled = wait_quiet(operator, "Keeper", "plain", namespace)
    log = operator.log()
    assert "Warning: injection of owner references and dependent watches is turned off" in log
    assert "Watching dependent resource" not in log
    core.delete_namespaced_config_map("plain-kept", namespace)
    settle()
    assert runs(operator, "Keeper", "plain", namespace) == settled
