"""Dependent resources against the real cluster: owners injected by the proxy, the garbage
collector removing what a CR owned, drift repaired through dependent watches (also after a
restart), the proxy's token, every common kubernetes.core module through it, and bad input."""

from __future__ import annotations

import re
import socket
import urllib.error
import urllib.request

import pytest
from kubernetes.client.rest import ApiException

from .crds import GROUP, VERSION, install_crds, kind_crd
from .operators import STRUCTURED_LOG, records_of
from .resources import condition, config_map_data, new_cr, wait_condition
from .waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.long]

KINDS = ["Stack", "NsMaker", "Keeper", "Toolbox", "Garbler"]
SECRET_BLACKLISTED = {"group": "", "version": "v1", "kind": "Secret"}


@pytest.fixture(scope="module")
def dependent_crds(cluster) -> None:
    with cluster.api_client() as api_client:
        install_crds(api_client, [kind_crd(kind) for kind in KINDS])


def create_cr(crs, namespace, kind, name, spec):
    return crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, kind.lower() + "s", new_cr(kind, name, spec)
    )


# Every operator here logs JSON records with the debug lines that name each dependent event
# that re-runs an owner ("Dependent changed, reconciling its owner") and each finished reconcile
# ("reconciled"), so that what the operator did is read from its log, never guessed from time.


def reconciles(records: list[dict], namespace: str, name: str) -> list[dict]:
    """The finished reconciles of a CR (successful or not) among ``records``."""
    key = f"{namespace}/{name}"
    return [
        r
        for r in records
        if r.get("key") == key
        and r.get("msg")
        in (
            "reconciled",
            "reconcile failed, retrying with backoff",
            "reconcile crashed, retrying with backoff",
        )
    ]


def dependent_changes(records: list[dict], kind: str | None = None) -> list[dict]:
    """The dependent events that re-ran an owner, of dependents of ``kind`` if given."""
    return [
        r
        for r in records_of(records, "Dependent changed, reconciling its owner")
        if kind is None or r.get("dependent", "").endswith(f"Kind={kind}")
    ]


def watched_dependents(records: list[dict]) -> set[str]:
    """The dependent kinds the operator started to watch (``Kind=ConfigMap``, ...)."""
    return {
        r["dependent"].split(", ")[-1] for r in records_of(records, "Watching dependent resource")
    }


def after(records: list[dict], record: dict) -> list[dict]:
    return records[records.index(record) + 1 :]


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


@pytest.mark.ansible_core  # what the role's run gives depends on the core
def test_created_dependents_are_owned_watched_and_collected(
    operator, crs, core, apps, namespace, dependent_crds
):
    port = free_port()
    operator.write_watches([{"kind": "Stack", "role": "stack", "blacklist": [SECRET_BLACKLISTED]}])
    operator.start(f"--proxy-port={port}", *STRUCTURED_LOG)
    cr = create_cr(crs, namespace, "Stack", "app", {"greeting": "hi"})
    owner = (f"{GROUP}/{VERSION}", "Stack", "app", cr["metadata"]["uid"])

    # The first run is over: every object it made went through the proxy, which decided then
    # which kinds to watch.
    wait_until(lambda: reconciles(operator.records(), namespace, "app"), what="the first run")
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
    watched = watched_dependents(operator.records())
    assert {"Kind=Deployment", "Kind=ConfigMap", "Kind=Service"} <= watched
    assert "Kind=Secret" not in watched  # the blacklisted kind is never watched

    # Scaling the Deployment by hand is reverted by the re-run it causes.
    since = len(operator.log())
    apps.patch_namespaced_deployment_scale("app-web", namespace, {"spec": {"replicas": 3}})
    wait_until(
        lambda: (
            apps.read_namespaced_deployment("app-web", namespace).spec.replicas == 1
            and dependent_changes(operator.records(since), "Deployment")
            and reconciles(operator.records(since), namespace, "app")
        ),
        what="the Deployment scaled back to 1 by a run its change caused",
    )

    # A change to the blacklisted kind does not start a run: deleting the ConfigMap after it
    # does, and by the time that run is over the operator was told of the ConfigMap only.
    since = len(operator.log())
    core.patch_namespaced_secret("app-secret", namespace, {"stringData": {"token": "changed"}})
    core.delete_namespaced_secret("app-secret", namespace)
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

    def run_after_configmap_deleted():
        # A run that started after the deletion, and ended: one under way when it came may end
        # first, and the CR deleted below would then be deleted under the run it caused.
        records = operator.records(since)
        deleted = [r for r in dependent_changes(records, "ConfigMap") if r["event"] == "DELETED"]
        later = after(records, deleted[0]) if deleted else []
        started = [r for r in later if r.get("msg") == "Starting ansible-runner"]
        return started and reconciles(after(later, started[0]), namespace, "app")

    wait_until(run_after_configmap_deleted, what="the run that the deleted ConfigMap caused")
    records = operator.records(since)
    assert not dependent_changes(records, "Secret")
    assert "Kind=Secret" not in watched_dependents(operator.records())

    # Deleting the CR lets the garbage collector remove everything it owned; the operator,
    # told about dependents whose owner is gone, shrugs: each such reconcile ends well. A run
    # still under way (a dependent's change may start one at any time) may fail on objects
    # the collector removes under it: only its errors are expected.
    since = len(operator.log())
    before = operator.records()
    ended = {
        r.get("job") for r in before if str(r.get("msg", "")).startswith("Ansible-runner exited")
    }
    cut_short = {r["job"] for r in records_of(before, "Starting ansible-runner")} - ended
    crs.delete_namespaced_custom_object(GROUP, VERSION, namespace, "stacks", "app")
    wait_until(
        lambda: (
            gone(lambda: apps.read_namespaced_deployment("app-web", namespace))
            and gone(lambda: core.read_namespaced_service("app-web", namespace))
            and gone(lambda: core.read_namespaced_config_map("app-config", namespace))
        ),
        what="the dependents garbage-collected",
    )

    def told_of_every_deletion():
        records = operator.records(since)
        deleted = [r for r in dependent_changes(records) if r["event"] == "DELETED"]
        kinds = {r["dependent"].split(", ")[-1] for r in deleted}
        if not {"Kind=Deployment", "Kind=Service", "Kind=ConfigMap"} <= kinds:
            return None
        return reconciles(after(records, deleted[-1]), namespace, "app")

    last = wait_until(told_of_every_deletion, what="the reconciles the deletions caused")
    assert {r["msg"] for r in last} == {"reconciled"}
    assert operator.proc.poll() is None
    errors = [
        r
        for r in operator.records()
        if r.get("level") in ("error", "raw") and r.get("job") not in cut_short
    ]
    assert not errors, errors


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


@pytest.mark.ansible_core  # what the role's run gives depends on the core
def test_a_cluster_scoped_dependent_gets_annotations_and_is_watched(
    operator, crs, core, namespace, dependent_crds
):
    made = f"{namespace}-made"
    operator.namespaces = []  # cluster-scoped dependents are watched only across all namespaces
    operator.write_watches(
        [{"kind": "NsMaker", "role": "ns_maker", "watchClusterScopedResources": True}]
    )
    operator.start(*STRUCTURED_LOG)
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
        # The run that made it is over, and with it the start of the Namespace watch.
        wait_until(lambda: reconciles(operator.records(), namespace, "maker"), what="the run")

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
    operator.start(*STRUCTURED_LOG)
    create_cr(crs, namespace, "Keeper", "k", {"touch": True})
    wait_until(lambda: config_map_data(core, namespace, "k-kept"), what="the kept ConfigMap")
    wait_until(lambda: reconciles(operator.records(), namespace, "k"), what="the first run")
    operator.kill()

    # While the operator is down the role is told to make no API call at all: after the
    # restart nothing but the operator's own recovery can know the ConfigMap's kind.
    crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, "keepers", "k", {"spec": {"touch": False}}
    )
    offset = len(operator.log())
    operator.start(*STRUCTURED_LOG)
    wait_until(
        lambda: (
            reconciles(operator.records(offset), namespace, "k")
            and "Kind=ConfigMap" in watched_dependents(operator.records(offset))
        ),
        what="the first run after the restart and the ConfigMap watched again",
    )
    since = len(operator.log())
    core.delete_namespaced_config_map("k-kept", namespace)

    def run_after_configmap_deleted():
        records = operator.records(since)
        deleted = [r for r in dependent_changes(records, "ConfigMap") if r["event"] == "DELETED"]
        return deleted and reconciles(after(records, deleted[0]), namespace, "k")

    wait_until(
        run_after_configmap_deleted,
        what="a run caused by deleting the dependent after the restart",
    )

    # And with the role touching it again, the deleted ConfigMap comes back.
    crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, "keepers", "k", {"spec": {"touch": True}}
    )
    wait_until(lambda: config_map_data(core, namespace, "k-kept"), what="the ConfigMap back")


@pytest.mark.ansible_core  # what the role's run gives depends on the core
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
    # kwok pods have no containers: exec and log go through the proxy and the API server to the
    # kubelet (kwok), and bring back its answer, which names the container it looked for.
    for verb, subresource in (("exec", "exec"), ("log", "logs")):
        said = f"no {subresource} found for container[^a-z]+main[^a-z]+in pod[^a-z]+"
        assert re.fullmatch(said + f"{namespace}/runner", results[verb]), results[verb]
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
    operator.start("--inject-owner-ref=false", *STRUCTURED_LOG)
    create_cr(crs, namespace, "Keeper", "plain", {"touch": True})
    wait_until(lambda: config_map_data(core, namespace, "plain-kept"), what="the ConfigMap")
    assert not core.read_namespaced_config_map("plain-kept", namespace).metadata.owner_references
    wait_until(lambda: reconciles(operator.records(), namespace, "plain"), what="the run")
    log = operator.log()
    assert "Warning: injection of owner references and dependent watches is turned off" in log
    assert "Watching dependent resource" not in log

    # Deleting the ConfigMap starts no run: a spec change after it does (and makes it again),
    # and by the end of that run nothing but the spec change has asked for one.
    since = len(operator.log())
    core.delete_namespaced_config_map("plain-kept", namespace)
    crs.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, "keepers", "plain", {"spec": {"touch": True, "round": 2}}
    )
    wait_until(
        lambda: (
            config_map_data(core, namespace, "plain-kept") is not None
            and reconciles(operator.records(since), namespace, "plain")
        ),
        what="the run of the spec change",
    )
    records = operator.records(since)
    passed = records_of(records, "event passes", key=f"{namespace}/plain")
    assert [r["event"] for r in passed] == ["update"]
    assert not dependent_changes(operator.records())
