"""What a planned run's dry-run writes amount to (core.plan): one change per object, the fields
that differ, Secrets' values hidden, the summary and the exit code."""

from __future__ import annotations

import json

from ansible_operator.core.plan import (
    MAX_FIELDS,
    MAX_WRITES,
    SENSITIVE,
    TaskChange,
    Write,
    WriteLog,
    cr_plan,
    exit_code,
    field_changes,
    held_message,
    object_changes,
    render_text,
)

CR = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t", "namespace": "n"}}


def deployment(replicas: int, image: str, rv: str = "1") -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "d",
            "namespace": "n",
            "resourceVersion": rv,
            "uid": "u1",
            "generation": int(rv),
            "managedFields": [{"manager": rv}],
        },
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "c", "image": image}]}},
        },
        "status": {"replicas": replicas, "observedGeneration": int(rv)},
    }


def write(verb: str, before, after, **kw) -> Write:
    where = {"api_version": "apps/v1", "kind": "Deployment", "namespace": "n", "name": "d"}
    return Write(verb=verb, before=before, after=after, **{**where, **kw})


def test_an_update_names_the_fields_that_change_and_not_what_the_server_sets():
    (change,) = object_changes([write("patch", deployment(1, "a:1"), deployment(3, "a:2", "7"))])
    assert change.action == "update"
    assert [(f.path, f.before, f.after) for f in change.fields] == [
        ("spec.replicas", 1, 3),
        ("spec.template.spec.containers[0].image", "a:1", "a:2"),
    ]


def test_a_write_that_changes_nothing_is_none():
    (change,) = object_changes([write("patch", deployment(1, "a"), deployment(1, "a", "2"))])
    assert (change.action, change.fields) == ("none", ())
    assert not change.changes


def test_two_writes_to_one_object_are_one_change_first_before_against_last_after():
    first = write("patch", deployment(1, "a"), deployment(2, "a", "2"))
    second = write("patch", deployment(2, "a", "2"), deployment(1, "a", "3"))
    (change,) = object_changes([first, second])
    assert change.action == "none", "written back as it was: nothing changes"


def test_create_lists_the_new_object_s_fields_and_delete_needs_it_to_exist():
    created, deleted, gone = object_changes(
        [
            write("create", None, deployment(1, "a")),
            write("delete", deployment(1, "b"), None, name="old"),
            write("delete", None, None, name="never"),
        ]
    )
    assert created.action == "create"
    assert "spec.replicas" in [f.path for f in created.fields]
    assert not [f for f in created.fields if f.path.startswith(("status", "metadata.uid"))]
    assert (deleted.name, deleted.action) == ("old", "delete")
    assert gone.action == "none"


def test_a_refused_write_is_an_error_not_a_change():
    (change,) = object_changes([write("create", None, None, code=422, message="spec.x: Invalid")])
    assert (change.action, change.error) == ("none", "spec.x: Invalid")


def test_deletecollection_lists_each_object_it_would_delete():
    items = {
        "items": [
            {"metadata": {"name": "a", "namespace": "n"}},
            {"metadata": {"name": "b", "namespace": "n"}},
        ]
    }
    changes = object_changes([write("deletecollection", None, items, name="")])
    assert [(c.name, c.action) for c in changes] == [("a", "delete"), ("b", "delete")]


def test_a_secret_s_values_are_never_shown():
    before = {"kind": "Secret", "metadata": {"name": "s"}, "data": {"password": "b2xk"}}
    after = {
        "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"password": "bmV3"},
        "type": "Opaque",
    }
    (change,) = object_changes(
        [Write("update", "v1", "Secret", "n", "s", before=before, after=after)]
    )
    shown = {f.path: (f.before, f.after) for f in change.fields}
    assert shown == {"data.password": (SENSITIVE, SENSITIVE), "type": (None, "Opaque")}
    assert "b2xk" not in json.dumps(change.to_json()) and "bmV3" not in json.dumps(change.to_json())


def test_fields_past_the_limit_are_counted():
    before = {"data": {}}
    after = {"data": {f"k{i:04}": "v" for i in range(MAX_FIELDS + 5)}}
    (change,) = object_changes(
        [Write("update", "v1", "ConfigMap", "n", "c", before=before, after=after)]
    )
    assert (len(change.fields), change.more_fields) == (MAX_FIELDS, 6)  # and data: {} went


def test_field_changes_take_empty_maps_and_lists_as_leaves():
    assert [f.path for f in field_changes({"a": {}, "b": [1]}, {"a": {"x": 1}, "b": []})] == [
        "a",
        "a.x",
        "b",
        "b[0]",
    ]


def test_a_cr_plan_s_outcome_and_exit_codes():
    log = WriteLog(dry_run=True)
    log.add(write("patch", deployment(1, "a"), deployment(2, "a", "2")))
    changes = cr_plan(CR, log, failed=None)
    assert (changes.outcome, changes.pending) == ("Changes", 1)
    unchanged = cr_plan(CR, WriteLog(), failed=None)
    assert unchanged.outcome == "Unchanged"
    # A task's change counts where no object changes (a file, a command).
    tasked = cr_plan(CR, WriteLog(tasks=[TaskChange("touch", "r", "changed")]), failed=None)
    assert (tasked.outcome, tasked.pending) == ("Changes", 1)
    failed = cr_plan(CR, WriteLog(), failed="boom")
    assert (failed.outcome, failed.message) == ("Failed", "boom")
    assert exit_code([unchanged]) == 0
    assert exit_code([unchanged, changes]) == 2
    assert exit_code([changes, failed]) == 1
    assert exit_code([]) == 0


def test_the_json_shape():
    log = WriteLog(dry_run=True)
    log.add(write("patch", deployment(1, "a"), deployment(2, "a", "2")))
    body = cr_plan(CR, log, failed=None).to_json()
    assert {k: body[k] for k in ("apiVersion", "kind", "namespace", "name", "outcome")} == {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "namespace": "n",
        "name": "t",
        "outcome": "Changes",
    }
    [obj] = body["objects"]
    assert obj["action"] == "update" and obj["fields"] == ["spec.replicas"]
    assert obj["changes"] == [{"path": "spec.replicas", "before": 1, "after": 2}]
    assert body["writes"] == {"dryRun": 1, "refused": 0}


def test_the_text_starts_with_a_summary_and_shows_only_what_changes():
    log = WriteLog(
        writes=[
            write("patch", deployment(1, "a"), deployment(2, "a", "2")),
            write("patch", deployment(1, "a"), deployment(1, "a"), name="same"),
        ]
    )
    other = {**CR, "metadata": {"name": "u", "namespace": "n"}}
    text = render_text([cr_plan(CR, log, failed=None), cr_plan(other, WriteLog(), failed=None)])
    lines = text.splitlines()
    assert lines[0].startswith("Plan: 2 CR(s) planned, 1 would change")
    assert "  ~ Deployment n/d (update)" in lines
    assert "      spec.replicas: 1 -> 2" in lines
    assert "same" not in text and "Thing n/u" not in text


def test_a_held_cr_s_message_names_objects_and_fields_and_counts_the_rest():
    writes = [write("patch", deployment(1, "a"), deployment(3, "b", "2"))]
    writes += [
        Write("create", "v1", "ConfigMap", "n", f"c{i}", after={"data": {"k": "v"}})
        for i in range(6)
    ]
    message = held_message(cr_plan(CR, WriteLog(writes=writes), failed=None), "hold")
    assert message == (
        "Held for review (hold): 7 change(s) pending: Deployment n/d (update: spec.replicas, "
        "spec.template.spec.containers[0].image), ConfigMap n/c0 (create), "
        "ConfigMap n/c1 (create), ConfigMap n/c2 (create), ConfigMap n/c3 (create) and 2 more; "
        "remove the hold to apply"
    )
    failing = held_message(cr_plan(CR, WriteLog(), failed="boom"), "hold")
    assert failing == "Held for review (hold): the run would fail: boom; remove the hold to apply"


def test_a_write_whose_before_or_answer_was_not_read_is_a_change_without_fields():
    unread, unseen = object_changes(
        [
            write("create", None, None),  # an answer too large or compressed to read
            write("patch", None, deployment(2, "a"), name="patched"),  # not read before
        ]
    )
    assert (unread.action, unread.fields) == ("create", ())
    assert (unseen.action, unseen.fields) == ("update", ())


def test_a_run_s_log_keeps_so_many_writes_and_counts_the_rest():
    log = WriteLog()
    for i in range(MAX_WRITES + 3):
        log.add(write("patch", deployment(1, "a"), deployment(1, "a"), name=f"d{i}"))
    assert (len(log.writes), log.forwarded, log.dropped) == (MAX_WRITES, MAX_WRITES + 3, 3)
    assert log.to_json()["dropped"] == 3
