"""Cross-kind watches: `relatedResources` parsed and refused, and which CRs a related object's
events reconcile (core.related), through the runtime's handler too (runtime.related)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from ansible_operator.core import (
    GVK,
    CRIndex,
    LabelSelector,
    RelatedResource,
    Watch,
    related_event,
    triggers,
)
from ansible_operator.core.watches import ALL_IN_NAMESPACE, CR_SELECTOR, OBJECT_REF, WatchesError
from ansible_operator.project import load_watches
from ansible_operator.runtime.control.related import RelatedWatches
from ansible_operator.runtime.control.sources import Sources

PROMETHEUS = GVK("monitoring.example.com", "v1alpha1", "Prometheus")
MONITOR = GVK("monitoring.example.com", "v1alpha1", "ServiceMonitor")

ENTRY = """\
- version: v1alpha1
  group: monitoring.example.com
  kind: Prometheus
  role: prometheus
  relatedResources:
"""


def load(tmp_path: Path, related: str) -> list[Watch]:
    (tmp_path / "roles/prometheus/tasks").mkdir(parents=True, exist_ok=True)
    path = tmp_path / "watches.yaml"
    path.write_text(ENTRY + textwrap.indent(textwrap.dedent(related), "    "))
    return load_watches(path, environ={}, cwd=tmp_path)


# --- parsing ------------------------------------------------------------------------------------


def test_each_mapping_is_read(tmp_path: Path) -> None:
    [watch] = load(
        tmp_path,
        """\
        - group: monitoring.example.com
          version: v1alpha1
          kind: ServiceMonitor
          selector: {matchLabels: {example: "yes"}}
          mapBy: {crSelector: spec.serviceMonitorSelector}
        - {version: v1, kind: ConfigMap, mapBy: {objectRef: data.prometheus}}
        - {group: "", version: v1, kind: Secret, mapBy: {allInNamespace: true}}
        """,
    )
    assert watch.related == (
        RelatedResource(
            MONITOR,
            CR_SELECTOR,
            ("spec", "serviceMonitorSelector"),
            LabelSelector(match_labels={"example": "yes"}),
        ),
        RelatedResource(GVK("", "v1", "ConfigMap"), OBJECT_REF, ("data", "prometheus")),
        RelatedResource(GVK("", "v1", "Secret"), ALL_IN_NAMESPACE),
    )


def test_a_watch_without_related_resources_has_none(tmp_path: Path) -> None:
    (tmp_path / "roles/prometheus/tasks").mkdir(parents=True)
    path = tmp_path / "watches.yaml"
    path.write_text(ENTRY.replace("  relatedResources:\n", ""))
    [watch] = load_watches(path, environ={}, cwd=tmp_path)
    assert watch.related == ()


@pytest.mark.parametrize(
    ("related", "problem"),
    [
        ("{kind: ServiceMonitor}", "relatedResources must be a list, got mapping"),
        ("- ServiceMonitor", "relatedResources[0] must be a mapping, got string"),
        (
            "- {version: v1, kind: Pod, mapBy: {allInNamespace: true}, namespace: x}",
            "relatedResources[0]: unknown key 'namespace' (known: group, version, kind, "
            "selector, mapBy)",
        ),
        (
            "- {kind: Pod, mapBy: {allInNamespace: true}}",
            "relatedResources[0].version must not be empty",
        ),
        (
            "- {version: v1, mapBy: {allInNamespace: true}}",
            "relatedResources[0].kind must not be empty",
        ),
        (
            "- {group: monitoring.example.com, version: v1, kind: Prometheus, "
            "mapBy: {allInNamespace: true}}",
            "relatedResources[0]: Prometheus.monitoring.example.com is the watched kind itself, "
            "whose changes reconcile its CRs already",
        ),
        (
            "- {version: v1, kind: Pod}",
            "relatedResources[0].mapBy must be a mapping with one of crSelector, objectRef, "
            "allInNamespace, got nothing",
        ),
        (
            "- {version: v1, kind: Pod, mapBy: {}}",
            "relatedResources[0].mapBy must have exactly one of crSelector, objectRef, "
            "allInNamespace, got 0",
        ),
        (
            "- {version: v1, kind: Pod, mapBy: {crSelector: spec.a, allInNamespace: true}}",
            "relatedResources[0].mapBy must have exactly one of crSelector, objectRef, "
            "allInNamespace, got 2",
        ),
        (
            "- {version: v1, kind: Pod, mapBy: {ownerRef: spec.a}}",
            "relatedResources[0].mapBy: unknown key 'ownerRef' (one of crSelector, objectRef, "
            "allInNamespace)",
        ),
        (
            "- {version: v1, kind: Pod, mapBy: {allInNamespace: false}}",
            "relatedResources[0].mapBy.allInNamespace must be true (unquoted), got boolean false",
        ),
        (
            "- {version: v1, kind: Pod, mapBy: {allInNamespace: 'true'}}",
            "relatedResources[0].mapBy.allInNamespace must be true (unquoted), got string 'true'",
        ),
        (
            "- {version: v1, kind: Pod, mapBy: {crSelector: spec..selector}}",
            "relatedResources[0].mapBy.crSelector: 'spec..selector' is not a dotted field path "
            "such as spec.serviceMonitorSelector (field names of letters, digits, '-' and '_', "
            "joined by '.')",
        ),
        (
            "- {version: v1, kind: Pod, mapBy: {objectRef: ''}}",
            "relatedResources[0].mapBy.objectRef: '' is not a dotted field path such as "
            "spec.serviceMonitorSelector (field names of letters, digits, '-' and '_', "
            "joined by '.')",
        ),
        (
            "- {version: v1, kind: Pod, mapBy: {objectRef: [spec]}}",
            "relatedResources[0].mapBy.objectRef must be a dotted field path, got list",
        ),
        (
            "- {version: v1, kind: Pod, selector: {matchLabels: [a]}, "
            "mapBy: {allInNamespace: true}}",
            "relatedResources[1].selector: matchLabels must be a mapping",
        ),
    ],
)
def test_nonsense_is_refused_in_one_line(tmp_path: Path, related: str, problem: str) -> None:
    if problem.startswith("relatedResources[1]"):  # after a valid one
        related = "- {version: v1, kind: Pod, mapBy: {allInNamespace: true}}\n" + related
    with pytest.raises(WatchesError) as caught:
        load(tmp_path, related)
    where = f"{tmp_path}/watches.yaml:1: entry 1 ({PROMETHEUS}): "
    assert str(caught.value) == where + problem


# --- which CRs an object concerns ---------------------------------------------------------------


def cr(namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"metadata": metadata, "spec": spec}


def monitor(namespace: str, name: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": labels}
    if namespace:
        metadata["namespace"] = namespace
    return {"metadata": metadata, "spec": spec}


BY_SELECTOR = RelatedResource(
    MONITOR,
    CR_SELECTOR,
    ("spec", "serviceMonitorSelector"),
    LabelSelector(match_labels={"example": "yes"}),
)
BY_REF = RelatedResource(MONITOR, OBJECT_REF, ("spec", "prometheus"))
ALL = RelatedResource(MONITOR, ALL_IN_NAMESPACE)
WATCH = Watch(PROMETHEUS, role="/r", related=(BY_SELECTOR, BY_REF, ALL))


def index_of(*crs: dict[str, Any]) -> CRIndex:
    index = CRIndex(WATCH)
    for obj in crs:
        assert index.observe("ADDED", obj) == []
    return index


def test_cr_selector_picks_the_crs_whose_selector_matches_in_the_namespace() -> None:
    index = index_of(
        cr("a", "team", serviceMonitorSelector={"matchLabels": {"team": "x"}}),
        cr("a", "all", serviceMonitorSelector={}),  # {} selects everything
        cr("a", "none"),  # no selector: nothing
        cr("a", "null", serviceMonitorSelector=None),
        cr(
            "a",
            "expr",
            serviceMonitorSelector={
                "matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["x"]}]
            },
        ),
        cr("b", "elsewhere", serviceMonitorSelector={}),
    )
    on = {"example": "yes"}
    assert index.keys_for(BY_SELECTOR, monitor("a", "m", {**on, "team": "x"})) == {
        ("a", "team"),
        ("a", "all"),
    }
    assert index.keys_for(BY_SELECTOR, monitor("a", "m", {**on, "team": "y"})) == {
        ("a", "all"),
        ("a", "expr"),
    }
    # the related resource's own selector first: without example=yes, nothing
    assert index.keys_for(BY_SELECTOR, monitor("a", "m", {"team": "x"})) == set()
    # a cluster-scoped related object concerns the CRs of every namespace
    assert index.keys_for(BY_SELECTOR, monitor("", "m", on)) == {
        ("a", "all"),
        ("a", "expr"),
        ("b", "elsewhere"),
    }


def test_an_invalid_selector_selects_nothing_and_is_said_once() -> None:
    index = index_of()
    bad = cr("a", "bad", serviceMonitorSelector={"matchLabels": "x"})
    assert index.observe("ADDED", bad) == [
        "spec.serviceMonitorSelector: matchLabels must be a mapping"
    ]
    assert index.observe("MODIFIED", bad) == []  # a status update, say: not said again
    assert index.keys_for(BY_SELECTOR, monitor("a", "m", {"example": "yes"})) == set()
    assert index.observe("MODIFIED", cr("a", "bad", serviceMonitorSelector={})) == []
    assert index.keys_for(BY_SELECTOR, monitor("a", "m", {"example": "yes"})) == {("a", "bad")}


def test_object_ref_names_a_known_cr_of_its_namespace_or_a_cluster_scoped_one() -> None:
    index = index_of(cr("a", "p1"), cr("b", "p1"), cr("", "global"))
    assert index.keys_for(BY_REF, monitor("a", "m", {}, prometheus="p1")) == {("a", "p1")}
    assert index.keys_for(BY_REF, monitor("c", "m", {}, prometheus="p1")) == set()
    assert index.keys_for(BY_REF, monitor("a", "m", {}, prometheus="global")) == {("", "global")}
    assert index.keys_for(BY_REF, monitor("a", "m", {})) == set()
    assert index.keys_for(BY_REF, monitor("a", "m", {}, prometheus=3)) == set()


def test_all_in_namespace_and_deleted_crs() -> None:
    index = index_of(cr("a", "p1"), cr("a", "p2"), cr("b", "p3"))
    assert index.keys_for(ALL, monitor("a", "m", {})) == {("a", "p1"), ("a", "p2")}
    index.observe("DELETED", {"metadata": {"namespace": "a", "name": "p2"}})
    assert index.keys_for(ALL, monitor("a", "m", {})) == {("a", "p1")}
    assert index.keys_for(ALL, monitor("", "m", {})) == {("a", "p1"), ("b", "p3")}


# --- which events reconcile ---------------------------------------------------------------------


def test_creates_changes_and_deletes_reconcile_status_changes_do_not() -> None:
    index = index_of(cr("a", "p", serviceMonitorSelector={"matchLabels": {"team": "x"}}))
    state: dict[Any, Any] = {}

    def keys_of(obj: Any) -> frozenset[tuple[str, str]]:
        return index.keys_for(BY_SELECTOR, obj)

    selected = monitor("a", "m", {"example": "yes", "team": "x"}, port=1)
    assert related_event(state, "ADDED", selected, keys_of) == {("a", "p")}
    assert related_event(state, "MODIFIED", {**selected, "status": {"up": True}}, keys_of) == set()
    assert related_event(state, "MODIFIED", {**selected, "spec": {"port": 2}}, keys_of) == {
        ("a", "p")
    }
    # relabelled away: the CR it concerned hears of it once, then nothing is kept
    away = monitor("a", "m", {"example": "yes", "team": "y"})
    assert related_event(state, "MODIFIED", away, keys_of) == {("a", "p")}
    assert state == {}
    assert related_event(state, "MODIFIED", away, keys_of) == set()
    assert related_event(state, "ADDED", selected, keys_of) == {("a", "p")}
    assert related_event(
        state, "DELETED", {"metadata": {"namespace": "a", "name": "m"}}, keys_of
    ) == {("a", "p")}
    unrelated = monitor("a", "u", {"example": "yes", "team": "z"})
    assert related_event(state, "ADDED", unrelated, keys_of) == set()
    assert related_event(state, "DELETED", unrelated, keys_of) == set()
    assert state == {}
    # A list's items carry no apiVersion or kind, a watch's objects do: not a change.
    listed = monitor("a", "l", {"team": "x"}, port=1)
    related_event(state, "ADDED", listed, keys_of)
    typed = {"apiVersion": MONITOR.api_version, "kind": MONITOR.kind, **listed}
    assert related_event(state, "MODIFIED", {**typed, "status": {"up": True}}, keys_of) == set()


# --- the runtime's handler ----------------------------------------------------------------------


def test_related_watches_enqueue_after_the_initial_list_and_count_it() -> None:
    registry = CollectorRegistry()
    counted: list[GVK] = []
    sources = Sources(
        None,  # type: ignore[arg-type]  # the informers are not run here
        None,  # type: ignore[arg-type]
        namespaces=("a", "b"),
        count=counted.append,
    )
    related = RelatedWatches(sources, registry=registry)
    enqueued: list[tuple[str, str]] = []
    whys: list[triggers.Trigger] = []
    related.add_owner(Watch(GVK("x", "v1", "Other"), role="/r"), lambda request: None)  # none
    related.add_owner(
        WATCH, lambda request: (enqueued.append(request.key), whys.append(request.trigger))
    )
    assert related.index_of(Watch(GVK("x", "v1", "Other"), role="/r")) is None
    index = related.index_of(WATCH)
    assert index is not None
    index("ADDED", cr("a", "p", serviceMonitorSelector={}))
    informers = related.sources()
    # one per related resource and watched namespace; the API server selects the labels
    assert [(i.gvk, i.namespace) for i in informers] == [(MONITOR, "a"), (MONITOR, "b")] * 3
    selecting = informers[0]
    assert selecting._params is not None and selecting._params() == {"labelSelector": "example=yes"}
    selected = monitor("a", "m", {"example": "yes"}, prometheus="p")
    selecting._deliver("ADDED", selected)  # the initial list: nothing
    assert enqueued == []
    selecting.synced.set()
    selecting._deliver("MODIFIED", {**selected, "spec": {"port": 2}})
    assert enqueued == [("a", "p")]
    # The run's record names the object that triggered it.
    [why] = whys
    assert (why.reason, why.object) == (
        triggers.RELATED_CHANGED,
        triggers.ObjectRef(MONITOR.api_version, MONITOR.kind, "a", "m"),
    )
    assert counted == [MONITOR, MONITOR]
    value = registry.get_sample_value(
        "ansible_operator_related_events_total", {"GVK": str(PROMETHEUS), "related": str(MONITOR)}
    )
    assert value == 1.0


def test_a_cluster_scoped_kind_seen_in_every_namespace_counts_once() -> None:
    enqueued: list[tuple[str, str]] = []
    related = RelatedWatches(Sources(None, None, namespaces=("a", "b")))  # type: ignore[arg-type]
    watch = Watch(PROMETHEUS, role="/r", related=(ALL,))
    related.add_owner(watch, lambda request: enqueued.append(request.key))
    index = related.index_of(watch)
    assert index is not None
    index("ADDED", cr("a", "p"))
    for informer in related.sources():
        informer.synced.set()
        informer._deliver("ADDED", monitor("", "cluster-wide", {}))
    assert enqueued == [("a", "p")]
