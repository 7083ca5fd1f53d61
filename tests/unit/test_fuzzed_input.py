"""Fuzzed input (Hypothesis): watches.yaml, CR specs on their way to extra vars, kubeconfigs.

Whatever a user writes, the answer is a result or one clear line naming where: never a crash,
never a traceback, never a parser dump.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ansible_operator.core import extravars
from ansible_operator.core.extravars import (
    MAX_SPEC_BYTES,
    MAX_SPEC_DEPTH,
    MAX_SPEC_NODES,
    META_VAR,
    ReservedVariableError,
    SpecError,
    build_extra_vars,
    check_spec,
    extravars_document,
    mark_unsafe,
    marker_key,
    too_deep,
)
from ansible_operator.core.reserved_vars import is_reserved
from ansible_operator.core.watches import GVK, Watch, WatchesError
from ansible_operator.gocompat.strcase import map_to_snake, to_snake
from ansible_operator.kube.config import ConfigError, from_kubeconfig
from ansible_operator.project import load_watches

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Keys as users and attackers write them: unicode and emoji, camelCase and snake_case twins.
KEYS = st.one_of(
    st.text(min_size=1, max_size=12),
    st.sampled_from(["fooBar", "foo_bar", "FooBar", "HTTPPort", "httpPort", "🙂", "ключ", "a-b"]),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.text(min_size=2000, max_size=5000),  # huge strings
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=25,
)
WATCH = Watch(gvk=GVK("cache.example.com", "v1alpha1", "Memcached"), role="/roles/memcached")


def one_line(text: str) -> bool:
    return "\n" not in text and "Traceback" not in text


@FUZZ
@given(spec=st.dictionaries(KEYS, JSON, max_size=6))
def test_any_json_spec_becomes_variables_that_read_back_as_written(spec):
    assume(not any(is_reserved(to_snake(key)) for key in spec))  # refused: the test below
    assume(marker_key(spec) is None)  # refused: test_a_marker_key_anywhere_is_refused_by_path
    obj = {"metadata": {"name": "x", "namespace": "ns"}, "spec": spec}
    params = build_extra_vars(obj, WATCH, finalizing=False)
    # What the runner writes to env/extravars, read back: every value as it was.
    assert yaml.load(extravars_document(params), Loader=UnsafeLoader) == params
    assert params[META_VAR] == {"name": "x", "namespace": "ns"}
    assert params["_cache_example_com_memcached_spec"] == mark_unsafe(spec)
    for key in spec:
        if to_snake(key) != META_VAR:
            assert to_snake(key) in params


class UnsafeLoader(yaml.SafeLoader):
    """`!unsafe` read as the text it tags (Ansible reads it as its unsafe text)."""


UnsafeLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


@FUZZ
@given(
    spec=JSON,
    marker=st.sampled_from(
        ["__ansible_unsafe", "__ansible_vault", "__ansible_type", "__ansible_x"]
    ),
    data=st.data(),
)
def test_a_marker_key_anywhere_is_refused_by_path(spec, marker, data):
    """A key of ansible-core's serialization markers, put at a random place of any spec."""
    path, here = ["spec"], {"wrapper": spec}
    node: Any = here
    while isinstance(node, dict | list) and node and data.draw(st.booleans()):
        if isinstance(node, dict):
            key = data.draw(st.sampled_from(sorted(node)))
            path.append(f".{key}")
        else:
            key = data.draw(st.integers(0, len(node) - 1))
            path.append(f"[{key}]")
        if not isinstance(node[key], dict | list) or not node[key]:
            break
        node = node[key]
    if isinstance(node, dict):
        node[marker] = 1
        path.append(f".{marker}")
    else:
        node.append({marker: 1})
        path.append(f"[{len(node) - 1}].{marker}")
    assume(marker_key(here) == "".join(path[1:]).lstrip("."))  # the first one found is ours
    obj = {"metadata": {"name": "x", "namespace": "ns"}, "spec": here}
    with pytest.raises(SpecError) as refused:
        check_spec(obj, WATCH)
    assert str(refused.value).startswith("".join(path) + ": a key starting with __ansible_")
    assert one_line(str(refused.value))


# Keys written to become Ansible's own variables, in every spelling an attacker might try.
SUFFIX = st.text(min_size=0, max_size=10)
LOOK_ALIKES = {"a": ["\uff41", "\u0430", "\U0001d41a"], "_": ["\uff3f", "\u2017"], "s": ["\u0455"]}


def look_alike(text: str, data: st.DataObject) -> str:
    return "".join(
        data.draw(st.sampled_from([c, *LOOK_ALIKES[c]])) if c in LOOK_ALIKES else c for c in text
    )


@FUZZ
@given(
    form=st.sampled_from(["ansible_{}", "Ansible{}", "ansible{}", "ANSIBLE_{}", "_ansible_{}"]),
    suffix=SUFFIX,
    snake_case=st.booleans(),
    data=st.data(),
)
def test_keys_that_become_ansible_variables_are_refused_or_harmless(form, suffix, snake_case, data):
    key = form.format(suffix.capitalize() if form[0] == "A" else suffix)
    if data.draw(st.booleans()):
        key = look_alike(key, data)
    watch = Watch(gvk=WATCH.gvk, role=WATCH.role, snake_case_parameters=snake_case)
    obj = {"metadata": {"name": "x", "namespace": "ns"}, "spec": {key: "v", "size": 1}}
    try:
        params = build_extra_vars(obj, watch, finalizing=False)
    except ReservedVariableError as refused:
        assert one_line(str(refused)) and "would set the Ansible variable" in str(refused)
        return
    # Harmless: no variable that Ansible reads as its own (its names are case-sensitive).
    assert [name for name in params if name.startswith("ansible_")] == [META_VAR]


@FUZZ
@given(value=JSON)
def test_snake_case_twins_keep_the_key_already_in_snake_case(value):
    spec = {"fooBar": "camel", "foo_bar": value}
    params = build_extra_vars({"metadata": {"name": "x"}, "spec": spec}, WATCH, finalizing=False)
    assert params["foo_bar"] == mark_unsafe(map_to_snake(value))  # nested keys too


@pytest.mark.parametrize("depth", [MAX_SPEC_DEPTH + 1, 5000])
def test_a_spec_nested_too_deep_is_refused_naming_the_field(depth):
    nested: object = "bottom"
    for _ in range(depth):
        nested = {"level": nested}
    obj = {"metadata": {"name": "x"}, "spec": {"ok": 1, "deepField": nested}}
    with pytest.raises(SpecError) as err:
        build_extra_vars(obj, WATCH, finalizing=False)
    message = str(err.value)
    assert message.startswith(f"spec.deepField is nested more than {MAX_SPEC_DEPTH} levels deep")
    assert one_line(message)


def test_a_spec_at_the_depth_limit_is_accepted():
    nested: object = "bottom"
    for _ in range(MAX_SPEC_DEPTH - 1):
        nested = {"level": nested}
    assert too_deep({"f": nested}, MAX_SPEC_DEPTH) is None
    build_extra_vars({"metadata": {"name": "x"}, "spec": {"f": nested}}, WATCH, finalizing=False)


def test_a_spec_with_more_keys_and_items_than_a_run_takes_is_refused():
    # "items" and its MAX_SPEC_NODES - 1 entries: the limit, then one past it.
    at_limit = {"metadata": {"name": "x"}, "spec": {"items": list(range(MAX_SPEC_NODES - 1))}}
    build_extra_vars(at_limit, WATCH, finalizing=False)
    past = {"metadata": {"name": "x"}, "spec": {"items": list(range(MAX_SPEC_NODES)), "a": {}}}
    with pytest.raises(SpecError) as err:
        build_extra_vars(past, WATCH, finalizing=False)
    assert str(err.value).startswith(f"spec has more than {MAX_SPEC_NODES:,} keys and list items")
    assert one_line(str(err.value))


def test_a_spec_larger_than_a_run_takes_is_refused():
    # {"b":"..."}: 8 bytes around the string, so the limit exactly, then one byte more.
    at_limit = {"metadata": {"name": "x"}, "spec": {"b": "é" * ((MAX_SPEC_BYTES - 8) // 2)}}
    build_extra_vars(at_limit, WATCH, finalizing=False)
    past = {"metadata": {"name": "x"}, "spec": {"b": "é" * ((MAX_SPEC_BYTES - 8) // 2) + "x"}}
    with pytest.raises(SpecError) as err:
        build_extra_vars(past, WATCH, finalizing=False)
    assert str(err.value) == "spec is 1.0 MiB as JSON, more than the 1 MiB one run takes"


def test_an_extra_vars_document_past_its_limit_is_refused(monkeypatch):
    monkeypatch.setattr(extravars, "MAX_EXTRAVARS_BYTES", 4096)
    params = build_extra_vars(
        {"metadata": {"name": "x"}, "spec": {"b": "x" * 2000}}, WATCH, finalizing=False
    )
    with pytest.raises(SpecError, match=r"^the run's extra vars would be 0\.0 MiB, more than"):
        extravars_document(params)


def nested_spec(depth: int, width: int) -> dict[str, Any]:
    node: dict[str, Any] = {f"leaf{i}": f"value-{i}" for i in range(width)}
    for _ in range(depth):
        node = {f"k{i}": f"v{i}" for i in range(width)} | {"next": node}
    return node


def test_a_deep_specs_document_is_no_larger_than_a_flat_one_of_as_many_keys():
    # In block style each line was indented by its depth: a 95-deep spec of 60 keys a level made
    # a document 23 times its JSON, against about 6 times (three copies) for a flat one.
    deep = nested_spec(95, 60)
    flat = {f"k{level}.{i}": f"v{i}" for level in range(96) for i in range(60)}
    flat |= {f"leaf{i}": f"value-{i}" for i in range(60)}
    sizes = {}
    for name, spec in (("deep", deep), ("flat", flat)):
        params = build_extra_vars(
            {"metadata": {"name": "x"}, "spec": spec}, WATCH, finalizing=False
        )
        sizes[name] = len(extravars_document(params))
    assert sizes["deep"] < 1.2 * sizes["flat"]


WATCH_KEYS = st.sampled_from(
    ["group", "version", "kind", "role", "playbook", "vars", "finalizer", "reconcilePeriod",
     "manageStatus", "watchDependentResources", "selector", "blacklist", "markUnsafe",
     "maxRunnerArtifacts", "snakeCaseParameters", "watchClusterScopedResources", "runTimeout"]
)  # fmt: skip
ENTRY = st.dictionaries(st.one_of(WATCH_KEYS, KEYS), JSON, max_size=8)


@FUZZ
@given(document=st.one_of(JSON, st.lists(ENTRY, max_size=4)))
def test_any_watches_document_loads_or_fails_in_one_line(tmp_path_factory, document):
    path = tmp_path_factory.mktemp("watches") / "watches.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True))
    try:
        load_watches(path, environ={}, cwd=path.parent, warn=lambda _: None)
    except WatchesError as err:
        assert one_line(str(err)), str(err)
        assert str(err).startswith(str(path))


@FUZZ
@given(text=st.text(max_size=300))
def test_any_watches_text_loads_or_fails_in_one_line(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("watches") / "watches.yaml"
    path.write_text(text)
    try:
        load_watches(path, environ={}, cwd=path.parent)
    except WatchesError as err:
        assert one_line(str(err)), str(err)


def test_unknown_watches_keys_are_reported_once_each_naming_the_entry(tmp_path: Path):
    (tmp_path / "roles" / "memcached").mkdir(parents=True)
    path = tmp_path / "watches.yaml"
    path.write_text(
        "- version: v1alpha1\n"
        "  group: cache.example.com\n"
        "  kind: Memcached\n"
        "  role: memcached\n"
        "  reconcilePeriod: 1m\n"
        "  reconcilePeriodd: 2m\n"
        "  finalizer: {name: cache.example.com/f, vars: {a: 1}, rolee: x}\n"
    )
    warnings: list[str] = []
    (watch,) = load_watches(path, environ={}, cwd=tmp_path, warn=warnings.append)
    assert watch.reconcile_period == 60
    where = f"{path}:1: entry 1 (cache.example.com/v1alpha1, Kind=Memcached)"
    assert warnings == [
        f"{where}: unknown key 'reconcilePeriodd' ignored",
        f"{where}: unknown key 'finalizer.rolee' ignored",
    ]


@FUZZ
@given(text=st.text(max_size=200))
def test_any_kubeconfig_text_is_read_or_refused_in_one_line(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("kube") / "config"
    path.write_text(text)
    try:
        from_kubeconfig(path)
    except ConfigError as err:
        assert one_line(str(err)), str(err)
