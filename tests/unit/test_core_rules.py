"""Failures from the new rules of ansible-core 2.19 and 2.21 get a message naming the rule, where,
and the ways out; on real job events captured from ansible-runner with ansible-core 2.19 (the e2e
role `legacy`, tests/e2e/roles/legacy, or a one-task role) and 2.21 (a two-task role, the one of
`loop-result-skipped`), under tests/unit/data/core_rules/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_operator.runner import core_rules, summarize

DATA = Path(__file__).parent / "data" / "core_rules"


def event(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def test_a_length_conditional_names_the_rule_the_line_and_the_boolean_to_write():
    message = core_rules.explain(event("length-conditional"))
    assert message is not None
    assert message.startswith(
        "ansible-core 2.19 rule: a conditional must be a boolean "
        "(/tmp/cap/roles/legacy/tasks/main.yml:18). "
        "Fix the role: `members | length` gives an int: make it `members | length > 0`; "
        "or run the operator on ansible-core 2.18, the default; "
        "or set ANSIBLE_ALLOW_BROKEN_CONDITIONALS=true in the operator's environment "
        "(conditionals only). Ansible said: Task failed: Conditional result (True)"
    )


def test_a_string_conditional_from_the_cr_says_where_the_value_comes_from():
    message = core_rules.explain(event("string-conditional"))
    assert message is not None
    assert "(/tmp/cap/roles/strwhen/tasks/main.yml:5)" in message
    assert "`write_settings` gives a str: make it `write_settings | bool`" in message
    assert "(the value comes from /tmp/cap/pdd/env/extravars)" in message


def test_a_failed_when_length_names_its_line_from_the_result():
    message = core_rules.explain(event("failed-when-length"))
    assert message is not None
    assert message.startswith(
        "ansible-core 2.19 rule: a conditional must be a boolean "
        "(/tmp/cap/roles/failedwhen/tasks/main.yml:6). "
        "Fix the role: the value is an int: make the condition a boolean;"
    )


def test_none_reaching_a_filter_names_the_native_types_rule_and_the_filter():
    message = core_rules.explain(event("none-into-indent"))
    assert message is not None
    assert message.startswith(
        "ansible-core 2.19 rule: templates keep native types, so a value 2.18 rendered as text"
    )
    assert (
        "reaches 'ansible.builtin.indent' as it is (/tmp/cap/roles/legacy/tasks/main.yml:35)"
        in (message)
    )
    assert "`| default('', true)` or `| string`" in message
    assert "or run the operator on ansible-core 2.18, the default" in message
    assert "ALLOW_BROKEN_CONDITIONALS" not in message  # that switch is for conditionals only


def test_a_templated_number_refused_by_the_api_names_the_field_and_the_fix():
    message = core_rules.explain(event("number-in-configmap"))
    assert message is not None
    assert message.startswith(
        "ansible-core 2.19 rule: templates keep native types, so a templated number "
        "(such as `{{ size + 1 }}`) stays a number, and the API server refuses it for the "
        "string field ConfigMap.data (task at /tmp/cap/roles/legacy/tasks/main.yml:20). "
        "Fix the role: end the template with `| string`; "
        "or run the operator on ansible-core 2.18, the default. "
        "Ansible said: Failed to create object:"
    )


@pytest.mark.parametrize(
    "res",
    [
        {"msg": "spec.broken is true, refusing"},
        {"msg": "The filter plugin 'ansible.builtin.from_json' failed: Expecting value"},
        {"reason": "no msg at all"},
    ],
)
def test_other_failures_are_left_alone(res):
    failed = event("length-conditional")
    failed["event_data"]["res"] = res
    assert core_rules.explain(failed) is None


def test_the_run_outcome_carries_the_explanation():
    outcome = summarize([event("length-conditional")])
    assert outcome.failures[0].message == core_rules.explain(event("length-conditional"))
    assert outcome.failures[0].task == "List the members when there are any"


@pytest.mark.parametrize(
    ("expression", "type_name", "fix"),
    [
        ("members | length", "int", "members | length > 0"),
        ("size + 1", "int", "(size + 1) > 0"),
        ("write_settings", "str", "write_settings | bool"),
        ("spec.items", "list", "spec.items | length > 0"),
        ("labels", "dict", "labels | length > 0"),
        ("owner", "NoneType", "owner is not none"),
        ("thing", "Unknown", None),
    ],
)
def test_the_boolean_to_write_depends_on_the_type_the_condition_gave(expression, type_name, fix):
    assert core_rules._boolean_fix(expression, type_name) == fix


def test_a_loop_result_read_for_skipped_names_the_2_21_rule_and_the_default_to_write():
    message = core_rules.explain(event("loop-result-skipped"))
    assert message == (
        "ansible-core 2.21 rule: a registered result has a `skipped` key only when something was "
        "skipped; 2.18 to 2.20 also gave a loop's result `skipped: false` "
        "(/tmp/cap/roles/loopskipped/tasks/main.yml:11). Fix the role: write "
        "`not (made.skipped | default(false))` for `not made.skipped`; or run the operator on "
        "ansible-core 2.18, the default. Ansible said: Task failed: A 'when' expression failed: "
        "Error while evaluating conditional: object of type 'dict' has no attribute 'skipped'"
    )
