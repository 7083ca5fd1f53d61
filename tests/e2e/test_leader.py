"""Leader election with several operator processes on one namespace (run --leader-elect).

Each replica runs the `replica` role, which counts its runs per replica in a ConfigMap, so a
test can tell who reconciled what; each replica's metrics say whether it leads. The Lease is
read from the API server. Waits are generous; where a bound proves something (a release
instead of an expiry), the Lease is made long enough that the bound is far from it.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from .crds import GROUP, VERSION
from .operators import Replica, processes_matching
from .project import RepoOperator, install_repo_crds, kubectl
from .resources import config_map_data, new_cr, wait_condition
from .test_config import install, service_account_kubeconfig, uninstall
from .waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.long]

LEASE = "replicas-test"


def start_elected(replica: Replica, *args: str) -> None:
    replica.start_replica(
        "--leader-elect",
        f"--leader-election-id={LEASE}",
        f"--leader-election-namespace={replica.namespace}",
        *args,
    )


def leads(replica: Replica) -> bool:
    return f'leader_election_master_status{{name="{LEASE}"}} 1.0' in replica.metrics()


def reconciled(replica: Replica) -> bool:
    return "ansible_operator_reconcile_result{" in replica.metrics()


@pytest.fixture
def replicas(cluster, namespace, test_crds, tmp_path) -> Iterator[dict[str, Replica]]:
    group = {
        name: Replica(name, tmp_path / name, cluster.kubeconfig, namespace, "Counter", "replica")
        for name in ("one", "two")
    }
    try:
        yield group
    finally:
        for replica in group.values():
            if replica.launched is not None and replica.proc.poll() is None:
                os.kill(replica.proc.pid, signal.SIGCONT)  # in case a test left it stopped
            replica.stop()
            print(
                f"---- replica {replica.name} log ----\n{replica.log()[-15000:]}", file=sys.stderr
            )


@pytest.fixture
def coordination(cluster) -> Iterator[client.CoordinationV1Api]:
    with cluster.api_client() as api_client:
        yield client.CoordinationV1Api(api_client)


def holder(coordination, namespace: str) -> str | None:
    try:
        lease = coordination.read_namespaced_lease(LEASE, namespace)
    except ApiException as err:
        if err.status == 404:
            return None
        raise
    return lease.spec.holder_identity or ""


def runs_by_replica(core, namespace: str, name: str) -> dict[str, str]:
    return config_map_data(core, namespace, f"{name}-replicas") or {}


def create_counter(crs, namespace: str, name: str) -> None:
    crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "counters", new_cr("Counter", name, {"size": 1})
    )


def leader_and_follower(replicas, coordination, namespace, *args: str) -> tuple[Replica, Replica]:
    """`one` elected, then `two` started and waiting: it has seen `one` hold the Lease."""
    one, two = replicas["one"], replicas["two"]
    start_elected(one, *args)
    wait_until(lambda: holder(coordination, namespace) == one.identity, what="one to lead")
    start_elected(two, *args)
    wait_until(lambda: f"leader={one.identity}" in two.log(), what="two to see one lead")
    return one, two


def test_only_the_leader_reconciles_and_a_killed_leader_is_replaced(
    replicas, coordination, crs, core, namespace
):
    one, two = leader_and_follower(replicas, coordination, namespace)
    create_counter(crs, namespace, "before")
    wait_condition(crs, namespace, "Counter", "before", "Successful")
    assert runs_by_replica(core, namespace, "before") == {"one": "1"}
    wait_until(lambda: leads(one) and reconciled(one), what="one's metrics: leader, a run")
    assert not leads(two) and not reconciled(two)
    assert "Successfully acquired lease" not in two.log()

    one.kill()
    create_counter(crs, namespace, "meanwhile")  # changed while nobody leads
    wait_until(
        lambda: holder(coordination, namespace) == two.identity,
        what="two to take the Lease once one's term has run out",
        timeout=180,
    )
    wait_condition(crs, namespace, "Counter", "meanwhile", "Successful")
    assert runs_by_replica(core, namespace, "meanwhile") == {"two": "1"}
    # The new leader reconciles every CR again, as any starting operator does.
    wait_until(
        lambda: "two" in runs_by_replica(core, namespace, "before"), what="two to run `before`"
    )
    assert runs_by_replica(core, namespace, "before")["one"] == "1"
    wait_until(lambda: leads(two), what="two's metrics to say it leads")


def test_a_terminated_leader_releases_the_lease_and_the_follower_takes_it(
    replicas, coordination, crs, core, namespace
):
    # A minute-long term: if one did not release the Lease, two would wait that long.
    one, two = leader_and_follower(
        replicas, coordination, namespace, "--leader-elect-lease-duration=60s"
    )
    assert one.stop() == 0
    assert "Released the Lease" in one.log()
    wait_until(
        lambda: holder(coordination, namespace) == two.identity,
        what="two to take the released Lease, well within its 60 s term",
        timeout=30,
    )
    lease = coordination.read_namespaced_lease(LEASE, namespace)
    assert lease.spec.lease_transitions == 1
    assert lease.spec.lease_duration_seconds == 60
    create_counter(crs, namespace, "after")
    wait_condition(crs, namespace, "Counter", "after", "Successful")
    assert runs_by_replica(core, namespace, "after") == {"two": "1"}


def test_a_leader_frozen_past_its_term_stops_when_it_wakes(
    replicas, coordination, crs, core, namespace
):
    one, two = leader_and_follower(replicas, coordination, namespace)
    assert one.proc is not None
    os.kill(one.proc.pid, signal.SIGSTOP)
    create_counter(crs, namespace, "while-frozen")
    wait_until(
        lambda: holder(coordination, namespace) == two.identity,
        what="two to take the Lease from the frozen leader",
        timeout=180,
    )
    wait_condition(crs, namespace, "Counter", "while-frozen", "Successful")

    os.kill(one.proc.pid, signal.SIGCONT)
    assert one.proc.wait(60) == 1
    last = one.log().strip().splitlines()[-1]
    assert last.startswith(f"ansible-operator run: lost the Lease {namespace}/{LEASE}: ")
    assert "Leader election lost, stopping" in one.log()
    # The woken replica never ran the role: every run of the CR was two's.
    assert set(runs_by_replica(core, namespace, "while-frozen")) == {"two"}
    assert holder(coordination, namespace) == two.identity


def test_the_shipped_rbac_lets_the_operator_hold_and_release_its_lease(
    cluster, coordination, tmp_path
):
    """config/testing's ServiceAccount (config/rbac's leader election Role) runs the election."""
    installed = install(cluster.kubeconfig, tmp_path, "testing")
    kubectl(cluster.kubeconfig, "apply", "-k", str(installed.directory))
    try:
        with cluster.api_client() as api_client:
            install_repo_crds(api_client)
        ns = installed.namespace
        token = kubectl(
            cluster.kubeconfig, "create", "token", installed.name("osdk-controller-manager"),
            "-n", ns, "--duration=1h",
        ).stdout.strip()  # fmt: skip
        kubeconfig = service_account_kubeconfig(installed, token, tmp_path / "sa.kubeconfig")
        op = RepoOperator(tmp_path, kubeconfig, [ns])
        op.start(
            "--leader-elect", f"--leader-election-id={LEASE}", f"--leader-election-namespace={ns}"
        )
        try:
            wait_until(lambda: "Successfully acquired lease" in op.log(), what="the Lease")
            identity = re.search(r"identity=(\S+)", op.log()).group(1)
            assert holder(coordination, ns) == identity
            renewed = coordination.read_namespaced_lease(LEASE, ns).metadata.resource_version
            wait_until(
                lambda: (
                    coordination.read_namespaced_lease(LEASE, ns).metadata.resource_version
                    != renewed
                ),
                what="a renewal",
            )
            assert op.stop() == 0
            assert holder(coordination, ns) == ""
            lease_trouble = ("Error retrieving the Lease", "Failed to take the Lease", "slow path")
            troubles = [
                line for line in op.log().splitlines() if any(t in line for t in lease_trouble)
            ]
            assert not troubles
        finally:
            op.stop()
            print(f"---- operator log ----\n{op.log()[-15000:]}", file=sys.stderr)
    finally:
        uninstall(installed)


def test_a_leader_whose_lease_is_taken_kills_its_runs_and_exits(
    replicas, coordination, crs, namespace
):
    one = replicas["one"]
    one.write_watches([{"kind": "Sleeper", "role": "sleeper"}])
    start_elected(one)
    wait_until(lambda: holder(coordination, namespace) == one.identity, what="one to lead")
    crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "sleepers", new_cr("Sleeper", "nap", {"seconds": 4321})
    )
    wait_condition(crs, namespace, "Sleeper", "nap", "Running", reason="Running")
    wait_until(lambda: processes_matching("sleep 4321"), what="the role's sleep to run")

    # Someone else holds the Lease now: one's next renewal finds out.
    lease = coordination.read_namespaced_lease(LEASE, namespace)
    lease.spec.holder_identity = "intruder"
    coordination.replace_namespaced_lease(LEASE, namespace, lease)

    assert one.proc is not None and one.proc.wait(60) == 1
    assert "the Lease is held by intruder" in one.log().strip().splitlines()[-1]
    assert not processes_matching("sleep 4321"), "the run was killed before the exit"
    assert holder(coordination, namespace) == "intruder"  # not one's to release
