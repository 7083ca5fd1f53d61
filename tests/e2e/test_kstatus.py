"""How GitOps tools read our CRs, by their own code, through a CR's life on the real cluster and
the real operator: kstatus and Argo CD's health check (health.py), and `kubectl wait
--for=condition=Ready`."""

from __future__ import annotations

import pytest

from .crds import GROUP, VERSION
from .health import argo, verdict
from .project import kubectl
from .resources import condition, new_cr, wait_condition
from .waiting import wait_until

pytestmark = [pytest.mark.e2e]


@pytest.mark.parametrize("runner", ["warm", "cold"])
def test_kstatus_and_argo_cd_read_a_cr_through_its_life(
    operator, crs, namespace, cluster, kstatus_check, runner
):
    operator.write_watches([{"kind": "Flaky", "role": "flaky"}])
    operator.start(f"--runner={runner}")

    def read(name: str) -> dict:
        return crs.get_namespaced_custom_object(GROUP, VERSION, namespace, "flakys", name)

    def patch(name: str, spec: dict) -> None:
        crs.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, "flakys", name, {"spec": spec}
        )

    created = crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "flakys", new_cr("Flaky", "f", {"broken": False})
    )
    assert argo(kstatus_check, created)[0] == "Progressing"  # no status yet
    obj = wait_condition(crs, namespace, "Flaky", "f", "Ready")
    assert verdict(kstatus_check, obj)[0] == "Current"
    assert argo(kstatus_check, obj) == ("Healthy", "Last reconciliation succeeded")
    assert obj["status"]["observedGeneration"] == 1
    # kubectl wait, as a user waits for a CR: it returns at once for a ready one.
    kubectl(cluster.kubeconfig, "wait", "-n", namespace, "--for=condition=Ready", "flaky/f")

    # A spec that fails: in progress (the operator retries it), not current, not given up.
    patch("f", {"broken": True})
    failing = wait_condition(
        crs, namespace, "Flaky", "f", "Reconciling", reason="RetryingAfterFailure"
    )
    assert condition(failing, "Ready")["status"] == "False"
    status, message = verdict(kstatus_check, failing)
    assert status == "InProgress"
    assert "spec.broken is true, refusing" in message
    status, message = argo(kstatus_check, failing)
    assert status == "Degraded"
    assert "spec.broken is true, refusing" in message

    # Fixed: current again, for the generation the fix made.
    patch("f", {"broken": False})
    wait_until(
        lambda: (
            read("f")["status"].get("observedGeneration") == 3
            and verdict(kstatus_check, read("f"))[0] == "Current"
        ),
        what="kstatus Current at generation 3",
    )
    assert argo(kstatus_check, read("f"))[0] == "Healthy"

    # A spec the operator refuses (a reserved variable): failed, until the spec changes.
    crs.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "flakys", new_cr("Flaky", "g", {"ansibleHost": "elsewhere"})
    )
    obj = wait_condition(crs, namespace, "Flaky", "g", "Stalled", reason="ReservedVariable")
    status, message = verdict(kstatus_check, obj)
    assert status == "Failed"
    assert "not retried until the resource changes" in message
    assert condition(obj, "Reconciling")["status"] == "False"
    assert argo(kstatus_check, obj) == ("Degraded", message)
