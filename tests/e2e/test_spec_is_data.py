"""The spec is data, through the operator on the cluster, on both runners: a tenant's hostile CRs
(templates in keys and values, ansible-core's serialization markers, in spec and annotations, on
a CRD that keeps unknown fields; specs past what a run may cost) reach the role as written or are
refused naming the field or the limit, no command runs, and the other CRs of the kind are
reconciled all the while.
"""

from __future__ import annotations

import json
import secrets

import pytest

from .crds import GROUP, VERSION
from .resources import condition, config_map_data, new_cr, wait_condition, wait_event
from .waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.ansible_core]


def payloads(marks, canary) -> list[str]:
    return [
        f"{{{{ lookup('pipe', 'touch {marks}/pipe') }}}}",
        f"{{% if lookup('pipe', 'touch {marks}/statement') %}}{{% endif %}}",
        f"{{{{ lookup('file', '{canary}') }}}}",
        "{{ 7 * 191 }}",
        "{{ ansible_operator_meta }}",
        "{#",
    ]


def create(crs, namespace, name, spec, annotations=None):
    cr = new_cr("Echo", name, spec)
    cr["metadata"]["annotations"] = annotations or {}
    crs.create_namespaced_custom_object(GROUP, VERSION, namespace, "echos", cr)


def seen(core, namespace, name) -> dict:
    data = wait_until(
        lambda: config_map_data(core, namespace, f"{name}-seen"), what=f"{name}-seen", timeout=180
    )
    return json.loads(data["seen"])


@pytest.mark.parametrize("runner", ["warm", "cold"])
def test_hostile_crs_are_data_or_refused_and_the_others_still_reconcile(
    operator, crs, core, namespace, tmp_path, runner
):
    marks, canary = tmp_path / "marks", tmp_path / "canary"
    marks.mkdir()
    canary.write_text(secrets.token_hex(16))
    texts = payloads(marks, canary)
    operator.write_watches([{"kind": "Echo", "role": "idioms"}])
    operator.start(f"--runner={runner}")

    hostile = {
        **{text: text for text in texts},
        "nested": {"deeper": [{text: [text, {"__ANSIBLE_UNSAFE": text}] for text in texts}]},
        "values": ["__ansible_unsafe", "__ansible_vault", {"k": "__ansible_type"}],
        "numbers": {"123": "123", "true": "true", "": ""},
    }
    annotations = {f"example.com/{i}": text for i, text in enumerate(texts)}
    create(crs, namespace, "hostile", hostile, annotations)
    # ansible-core's own markers, deep in one CR and at the top of another: refused, by name.
    create(crs, namespace, "marker-deep", {"a": {"b": [{"__ansible_unsafe": {"x": 1}}]}})
    create(crs, namespace, "marker-top", {"__ansible_vault": "$ANSIBLE_VAULT;1.1;AES256\n61"})
    # Past what one run may cost (core.extravars): refused, saying which limit.
    create(crs, namespace, "too-many", {"items": list(range(10_001))})
    create(crs, namespace, "too-big", {"blob": "x" * 2**20})
    create(crs, namespace, "plain", {"message": "hello"})

    saw = seen(core, namespace, "hostile")
    # The spec as the API server holds it (its keys in its order) is what the role must see.
    held = crs.get_namespaced_custom_object(GROUP, VERSION, namespace, "echos", "hostile")["spec"]
    assert held == hostile
    assert saw["spec"] == held
    assert saw["fact_combined"] == held and saw["fact_round_trip"] == held
    assert saw["fact_keys"] == list(held)
    assert saw["looped"] == [f"{key}={json.dumps(value)}" for key, value in held.items()]
    config_map = core.read_namespaced_config_map("hostile-seen", namespace)
    assert {k: v for k, v in config_map.metadata.annotations.items() if k in annotations} == (
        annotations
    )
    wait_condition(crs, namespace, "Echo", "hostile", "Successful")
    assert seen(core, namespace, "plain")["spec"] == {"message": "hello"}

    for name, message in [
        ("marker-deep", "spec.a.b[0].__ansible_unsafe: a key starting with"),
        ("marker-top", "spec.__ansible_vault: a key starting with"),
        ("too-many", "spec has more than 10,000 keys and list items, the most one run takes"),
        ("too-big", "spec is 1.0 MiB as JSON, more than the 1 MiB one run takes"),
    ]:
        obj = wait_condition(crs, namespace, "Echo", name, "Failure", reason="SpecRefused")
        assert condition(obj, "Failure")["message"].startswith(message)
        wait_event(core, namespace, name, "SpecRefused", timeout=60)
        assert config_map_data(core, namespace, f"{name}-seen") is None, "no run may start"

    assert list(marks.iterdir()) == [], "a template in a CR ran a command"
    assert canary.read_text() not in operator.log(), "a template in a CR read a file"
