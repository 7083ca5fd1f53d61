"""Argument spec constraints as CEL rules: each rule's expression and message, what is refused."""

from __future__ import annotations

import pytest

from ansible_operator.scaffold.cel_rules import ConstraintError, cel_field, validation_rules

OPTIONS = {
    "size": {"type": "int"},
    "replicas": {"type": "int"},
    "image": {"type": "str"},
    "git": {"type": "str"},
    "state": {"type": "str"},
    "path": {"type": "str"},
    "tls": {"type": "bool"},
    "ratio": {"type": "float"},
    "user_name": {"type": "str"},
    "namespace": {"type": "str"},
    "labels": {"type": "dict"},
    "pinned": {"type": "int", "default": 1},
    "needed": {"type": "str", "required": True},
}
FIELDS = {name: name for name in OPTIONS} | {"user_name": "userName"}


def rules(**constraints) -> list[dict[str, str]]:
    return validation_rules(constraints, OPTIONS, FIELDS)


@pytest.mark.parametrize(
    ("constraints", "rule", "message"),
    [
        (
            {"mutually_exclusive": [["size", "replicas"]]},
            "!(has(self.size) && has(self.replicas))",
            "size and replicas are mutually exclusive",
        ),
        (
            {"mutually_exclusive": [["size", "replicas", "image"]]},
            "(has(self.size) ? 1 : 0) + (has(self.replicas) ? 1 : 0) + (has(self.image) ? 1 : 0)"
            " <= 1",
            "size, replicas and image are mutually exclusive",
        ),
        (
            {"required_together": [["user_name", "path"]]},
            "(has(self.userName) && has(self.path)) || !(has(self.userName) || has(self.path))",
            "userName and path must be set together",
        ),
        (
            {"required_one_of": [["image", "git"]]},
            "has(self.image) || has(self.git)",
            "one of image or git is required",
        ),
        (
            {"required_if": [["state", "present", ["path"]]]},
            '!(has(self.state) && self.state == "present") || has(self.path)',
            "path is required when state is present",
        ),
        (
            {"required_if": [["state", "present", ["path", "image"]]]},
            '!(has(self.state) && self.state == "present") || (has(self.path) && has(self.image))',
            "path and image are required when state is present",
        ),
        (
            {"required_if": [["state", "copy", ["image", "git"], True]]},
            '!(has(self.state) && self.state == "copy") || (has(self.image) || has(self.git))',
            "one of image or git is required when state is copy",
        ),
        (
            {"required_if": [["tls", True, ["path"]]]},
            "!(has(self.tls) && self.tls == true) || has(self.path)",
            "path is required when tls is true",
        ),
        (
            {"required_if": [["size", 0, ["path"]]]},
            "!(has(self.size) && self.size == 0) || has(self.path)",
            "path is required when size is 0",
        ),
        (
            {"required_if": [["ratio", 1, ["path"]]]},
            "!(has(self.ratio) && self.ratio == 1.0) || has(self.path)",
            "path is required when ratio is 1",
        ),
        (
            {"required_if": [["state", 'say "hi"', ["path"]]]},
            '!(has(self.state) && self.state == "say \\"hi\\"") || has(self.path)',
            'path is required when state is say "hi"',
        ),
        (
            {"required_by": {"tls": ["path", "image"]}},
            "!has(self.tls) || (has(self.path) && has(self.image))",
            "path and image are required when tls is set",
        ),
        (
            {"required_by": {"tls": "path"}},
            "!has(self.tls) || has(self.path)",
            "path is required when tls is set",
        ),
        (
            {"required_one_of": [["namespace", "labels"]]},
            "has(self.__namespace__) || has(self.labels)",
            "one of namespace or labels is required",
        ),
    ],
)
def test_each_constraint_becomes_a_rule_with_a_message_in_cr_field_names(
    constraints, rule, message
):
    assert rules(**constraints) == [{"rule": rule, "message": message}]


def test_every_term_of_every_constraint_is_a_rule_in_a_fixed_order():
    result = rules(
        required_by={"tls": "path"},
        mutually_exclusive=[["size", "replicas"], ["image", "git"]],
        required_one_of=[["image", "git"]],
    )
    assert [r["message"] for r in result] == [
        "size and replicas are mutually exclusive",
        "image and git are mutually exclusive",
        "one of image or git is required",
        "path is required when tls is set",
    ]


def test_no_constraints_no_rules():
    assert rules() == []


@pytest.mark.parametrize(
    ("name", "cel"),
    [
        ("size", "size"),
        ("namespace", "__namespace__"),
        ("in", "__in__"),
        ("a__b", "a__underscores__b"),
        ("a-b", "a__dash__b"),
        ("a.b", "a__dot__b"),
        ("a/b", "a__slash__b"),
        ("snake_case", "snake_case"),
    ],
)
def test_field_names_are_escaped_as_kubernetes_cel_spells_them(name, cel):
    assert cel_field(name) == cel


@pytest.mark.parametrize(
    ("constraints", "message"),
    [
        # A flat list is a silent no-op in Ansible (each string is a term of one).
        ({"mutually_exclusive": ["size", "replicas"]}, "must be a list of lists"),
        ({"required_together": [["size"]]}, "two or more option names"),
        ({"required_one_of": [["size", "sise"]]}, "required_one_of names 'sise', which is not"),
        ({"required_if": [["state", "present"]]}, "required_if entries are [option, value"),
        ({"required_if": [["state", "present", "path"]]}, "required_if entries are"),
        ({"required_if": [["state", "present", ["path"], "yes"]]}, "fourth item"),
        (
            {"required_if": [["size", "1", ["path"]]]},
            "'1' is not of type int, so the rule could never",
        ),
        ({"required_if": [["tls", 1, ["path"]]]}, "1 is not of type bool"),
        ({"required_if": [["size", True, ["path"]]]}, "True is not of type int"),
        ({"required_if": [["labels", {}, ["path"]]]}, "only an option of type str, int"),
        ({"required_by": [["tls", "path"]]}, "required_by must map an option"),
        ({"required_by": {"tls": []}}, "required_by tls: must name an option"),
        (
            {"mutually_exclusive": [["pinned", "size"]]},
            "pinned has a default the API server fills in, so no CR could set size",
        ),
        (
            {"mutually_exclusive": [["size", "needed", "image"]]},
            "needed is required, so no CR could set size or image",
        ),
    ],
)
def test_a_constraint_that_cannot_work_is_refused_saying_why(constraints, message):
    with pytest.raises(ConstraintError) as caught:
        rules(**constraints)
    assert message in str(caught.value)


def test_a_field_cel_cannot_name_is_refused():
    with pytest.raises(ConstraintError, match="cannot be named in a CEL rule"):
        cel_field("1st")
