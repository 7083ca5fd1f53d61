"""The spec is data: hostile CRs through real runs of the common idioms, on both runners.

Each spec is turned into extra vars as the reconciler does (`build_extra_vars`, then the input
dir's document) and run through `spec_idioms.yml`, which hands its keys and values to Ansible in
the ways roles do. What the role saw must equal what the CR held, at every depth (so nothing was
decoded as one of ansible-core's serialization markers, nor templated), no command a template
would run left its mark, and no file a template would read reached the output. It runs on every
core (tests/runner is marked ansible_core), Hypothesis drawing the specs.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from ansible_operator.core.extravars import SpecError, build_extra_vars
from ansible_operator.core.watches import GVK, Watch
from ansible_operator.gocompat.strcase import map_to_snake
from ansible_operator.runner import ColdRunner

from .runs import PLAYBOOKS, MakeRequest

pytestmark = pytest.mark.ansible_core  # the core's own behaviour, on each core

PROBE = Path(tempfile.gettempdir()) / f"ansible-operator-spec-probe-{uuid.uuid4().hex[:8]}"
MARKS = PROBE / "marks"  # a template that ran a command leaves a file here
CANARY = PROBE / "canary"  # a template that read a file brings this text into the output
# What a CR author writes to be run: commands, file reads, arithmetic, our own variables, broken
# syntax (an error if templated), a vault payload.
PAYLOADS = [
    f"{{{{ lookup('pipe', 'touch {MARKS}/pipe') }}}}",
    f"{{{{ query('pipe', 'touch {MARKS}/query') }}}}",
    f"{{% if lookup('pipe', 'touch {MARKS}/statement') %}}{{% endif %}}",
    f"{{{{ lookup('file', '{CANARY}') }}}}",
    "{{ 7 * 191 }}",
    "{{ ansible_operator_meta }}",
    "{{ lookup('env', 'HOME') }}",
    "{#",
    "{{",
    "{% raw %}",
    "$ANSIBLE_VAULT;1.1;AES256\n6162636465",
]
# The keys ansible-core's decoders give a meaning are refused before any run (check_spec, whose
# tests are in tests/unit); what is handed to Ansible may still look like them, or hold them as
# values.
MARKER_KEYS = ["__ansible_unsafe", "__ansible_vault", "__ansible_type"]
MARKERS = [
    "__ANSIBLE_UNSAFE",
    "__ansible",
    "__Ansible_unsafe",
    " __ansible_vault",
    "_\u200b_ansible_unsafe",
    "\uff3f_ansible_vault",
    "_ansible_unsafe",
]
KEYS = st.one_of(st.sampled_from(MARKERS), st.sampled_from(PAYLOADS), st.text(max_size=6))
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(PAYLOADS + MARKER_KEYS),
    st.text(max_size=10),
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(KEYS, inner, max_size=3),
        st.builds(lambda marker, value: {marker: value}, st.sampled_from(MARKERS), inner),
        st.builds(
            lambda marker, value: {"value": value, "key": marker},
            st.sampled_from(MARKER_KEYS),
            inner,
        ),
    ),
    max_leaves=16,
)
LABELS = st.dictionaries(
    st.one_of(st.sampled_from(MARKERS + PAYLOADS), st.text(max_size=6)),
    st.one_of(st.sampled_from(PAYLOADS), st.text(max_size=6)),
    max_size=3,
)
# The playbook's own names: a spec key that became one would win over it (extra vars do).
PLAYBOOK_NAMES = {"data", "spec", "definition", "looped", "key_strings", "seen", "probe_dir"}
GVK_THING = GVK("example.com", "v1", "Thing")


def watch(probe_dir: Path) -> Watch:
    return Watch(gvk=GVK_THING, role="/unused", vars={"probe_dir": str(probe_dir)})


def cr(spec: dict[str, Any], labels: dict[str, str], annotations: dict[str, str]) -> dict:
    return {
        "apiVersion": GVK_THING.api_version,
        "kind": GVK_THING.kind,
        "metadata": {
            "name": "hostile",
            "namespace": "tenant",
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec,
    }


@pytest.fixture(scope="module", autouse=True)
def probe() -> Any:
    MARKS.mkdir(parents=True)
    CANARY.write_text(secrets.token_hex(16))
    yield
    for path in [*MARKS.iterdir(), CANARY]:
        path.unlink()
    MARKS.rmdir()
    PROBE.rmdir()


def run_idioms(runner: ColdRunner, make_request: MakeRequest, obj: dict, tmp: Path) -> dict:
    """The run of spec_idioms.yml on `obj`: what it saw, once checked that nothing ran."""
    probe_dir = tmp / uuid.uuid4().hex
    probe_dir.mkdir(parents=True)
    extravars = build_extra_vars(obj, watch(probe_dir), finalizing=False)
    request = make_request(playbook=str(PLAYBOOKS / "spec_idioms.yml"), extravars=extravars)
    result = asyncio.run(runner.run(request))
    stdout = result.stdout_path.read_text()
    assert result.ok, f"{result.outcome.failures}\n{stdout[-3000:]}"
    assert list(MARKS.iterdir()) == [], "a template in the CR ran a command"
    seen_text = (probe_dir / "seen.json").read_text()
    canary = CANARY.read_text()
    assert canary not in seen_text and canary not in stdout, "a template in the CR read a file"
    return json.loads(seen_text)


def assert_seen_as_written(seen: dict, obj: dict) -> None:
    spec = obj["spec"]
    pairs = [[key, value] for key, value in spec.items()]
    assert seen["spec"] == spec
    assert seen["data"] == map_to_snake(spec).get("data")
    assert seen["dict2items"] == [{"key": key, "value": value} for key, value in spec.items()]
    assert seen["looped"] == [f"{key}={json.dumps(value)}" for key, value in spec.items()]
    assert seen["key_strings"] == [f"key {key}" for key in spec]
    for fact in ("fact_copy", "fact_combined", "fact_round_trip", "fact_yaml_round_trip"):
        assert seen[fact] == spec, fact
    assert (seen["fact_keys"], seen["fact_items"]) == (list(spec), pairs)
    assert seen["definition"]["data"] == spec
    assert seen["definition"]["metadata"]["labels"] == obj["metadata"]["labels"]
    assert seen["definition"]["metadata"]["annotations"] == obj["metadata"]["annotations"]
    assert seen["meta"] == {"name": "hostile", "namespace": "tenant"}


def test_every_marker_and_template_at_every_depth_is_data(
    runner: ColdRunner, make_request: MakeRequest, tmp_path: Path
) -> None:
    """One spec holding every payload and marker look-alike, as keys and values, and the markers
    as values, at the top, in the middle and at the deepest level a spec may have."""
    hostile: dict[str, Any] = {marker: {text: text for text in PAYLOADS} for marker in MARKERS}
    hostile.update({text: [text, {marker: text for marker in MARKERS}] for text in PAYLOADS})
    hostile["values"] = [*MARKER_KEYS, {"x": MARKER_KEYS}]
    deep: Any = hostile
    for _ in range(90):
        deep = {"__ANSIBLE_UNSAFE": deep, "{{ 7 * 191 }}": [1]}
    spec = {"data": hostile, "deep": deep, **{marker: hostile for marker in MARKERS}}
    labels = {payload: payload for payload in PAYLOADS if "\n" not in payload}
    obj = cr(spec, labels, {marker: PAYLOADS[0] for marker in MARKERS})
    assert_seen_as_written(run_idioms(runner, make_request, obj, tmp_path), obj)


@settings(
    max_examples=6,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no shrinking: each example is a run
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    data=st.dictionaries(KEYS, VALUES, max_size=4),  # a mapping: Ansible shows a null as ''
    top=st.dictionaries(KEYS, VALUES, max_size=3),
    labels=LABELS,
    annotations=LABELS,
)
def test_hostile_specs_are_data(
    runner: ColdRunner,
    make_request: MakeRequest,
    tmp_path: Path,
    data: dict[str, Any],
    top: dict[str, Any],
    labels: dict[str, str],
    annotations: dict[str, str],
) -> None:
    spec = {"data": data, **top}
    assume(
        not (set(map_to_snake(top)) & PLAYBOOK_NAMES)
        and not any(k.startswith("fact_") for k in map_to_snake(top))
    )
    obj = cr(spec, labels, annotations)
    try:
        build_extra_vars(obj, watch(tmp_path), finalizing=False)
    except SpecError:
        assume(False)  # a reserved variable: refused before any run (test_reserved_vars)
    assert_seen_as_written(run_idioms(runner, make_request, obj, tmp_path), obj)
