"""CRDs from argument specs: field names, types, defaults, enums, descriptions, versions, names."""

from __future__ import annotations

import pytest

from ansible_operator.gocompat.strcase import to_snake
from ansible_operator.scaffold import crd_columns, crds
from ansible_operator.scaffold.crds import CrdError, Names, VersionSource, option_schema


def schema(option: dict, camel: bool = True) -> dict:
    return option_schema(option, camel=camel, where="roles/x: o")


# --- field names ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "field"),
    [
        ("size", "size"),
        ("deployment_name", "deploymentName"),
        ("force_redeploy", "forceRedeploy"),
        ("egress_ips", "egressIps"),
        ("http_port", "httpPort"),
        ("max_k8s_version", "maxK8sVersion"),
        ("_private", "Private"),
    ],
)
def test_options_become_camel_case_fields_that_convert_back(option, field):
    assert crds.field_name(option, camel=True, where="w") == field
    assert to_snake(field) == option


@pytest.mark.parametrize("option", ["double__underscore", "a1b2_c", "camelCase", "trailing_"])
def test_an_option_that_cannot_round_trip_is_refused_with_the_name_to_use(option):
    with pytest.raises(CrdError, match=f"option '{option}' cannot be a CR field.*rename"):
        crds.field_name(option, camel=True, where="roles/x/meta/argument_specs.yml")


def test_without_snake_case_parameters_names_are_kept():
    assert crds.field_name("camelCase", camel=False, where="w") == "camelCase"


# --- types ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        ({}, {"type": "string"}),
        ({"type": "str"}, {"type": "string"}),
        ({"type": "path"}, {"type": "string"}),
        ({"type": "int"}, {"type": "integer"}),
        ({"type": "float"}, {"type": "number"}),
        ({"type": "bool"}, {"type": "boolean"}),
        ({"type": "raw"}, {"x-kubernetes-preserve-unknown-fields": True}),
        ({"type": "bytes"}, {"x-kubernetes-int-or-string": True}),
        ({"type": "dict"}, {"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
        (
            {"type": "list"},
            {"type": "array", "items": {"x-kubernetes-preserve-unknown-fields": True}},
        ),
        ({"type": "list", "elements": "int"}, {"type": "array", "items": {"type": "integer"}}),
    ],
)
def test_ansible_types_map_to_structural_schemas(option, expected):
    assert schema(option) == expected


def test_an_unknown_type_is_refused():
    with pytest.raises(CrdError, match="roles/x: o: type 'callable' has no OpenAPI equivalent"):
        schema({"type": "callable"})


def test_nested_options_recurse_with_camel_case_and_required():
    result = schema(
        {
            "type": "dict",
            "options": {
                "pool_size": {"type": "int", "required": True},
                "labels": {"type": "dict"},
                "ports": {
                    "type": "list",
                    "elements": "dict",
                    "options": {"container_port": {"type": "int", "required": True}},
                },
            },
        }
    )
    assert result == {
        "type": "object",
        "required": ["poolSize"],
        "properties": {
            "poolSize": {"type": "integer"},
            "labels": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "ports": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["containerPort"],
                    "properties": {"containerPort": {"type": "integer"}},
                },
            },
        },
    }


def test_a_nested_option_that_cannot_round_trip_names_its_path():
    with pytest.raises(CrdError, match=r"roles/x: o\.options\.inner: option 'bad__name'"):
        schema(
            {"type": "dict", "options": {"inner": {"type": "dict", "options": {"bad__name": {}}}}}
        )


# --- choices, defaults, descriptions -------------------------------------------------------------


def test_choices_become_an_enum_of_the_options_type():
    assert schema({"type": "int", "choices": [1, "2"]}) == {"type": "integer", "enum": [1, 2]}
    assert schema({"type": "list", "elements": "str", "choices": ["a", "b"]}) == {
        "type": "array",
        "items": {"type": "string", "enum": ["a", "b"]},
    }


@pytest.mark.parametrize(
    ("option", "default"),
    [
        ({"type": "int", "default": 3}, 3),
        ({"type": "int", "default": "3"}, 3),
        ({"type": "bool", "default": "yes"}, True),
        ({"type": "float", "default": 1}, 1.0),
        ({"type": "str", "default": 80}, "80"),
        ({"type": "list", "elements": "int", "default": ["1", 2]}, [1, 2]),
        (
            {
                "type": "dict",
                "options": {"cpu_limit": {"type": "int"}},
                "default": {"cpu_limit": 2},
            },
            {"cpuLimit": 2},
        ),
        (
            {"type": "dict", "default": {"free_form": {"inner_key": 1}}},
            {"freeForm": {"innerKey": 1}},
        ),
        ({"type": "raw", "default": [{"a_key": 1}]}, [{"aKey": 1}]),
    ],
)
def test_defaults_are_converted_like_ansible_and_keyed_like_the_cr(option, default):
    assert schema(option)["default"] == default


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"type": "int", "default": "many"}, "'many' is not a valid int"),
        ({"type": "int", "default": 1.5}, "1.5 is not a valid int"),
        ({"type": "bool", "default": "perhaps"}, "is not a valid bool"),
        ({"type": "str", "choices": ["a"], "default": "b"}, "not one of the choices"),
        ({"type": "dict", "default": [1]}, "is not a dict"),
        ({"type": "list", "default": "x"}, "is not a list"),
    ],
)
def test_bad_defaults_are_refused_naming_the_option(option, message):
    with pytest.raises(CrdError, match=f"roles/x: o.default: .*{message}"):
        schema(option)


def test_a_null_default_is_no_default():
    assert "default" not in schema({"type": "str", "default": None})


def test_descriptions_are_joined_and_ansible_markup_made_plain():
    result = schema(
        {
            "description": [
                "Keeps C(<name>-memcached) at O(pool_size) replicas,",
                "see L(the docs,https://example.com) and I(never) V(none).",
            ]
        }
    )
    assert result["description"] == (
        "Keeps `<name>-memcached` at `poolSize` replicas, "
        "see the docs (https://example.com) and never `none`."
    )


# --- the CRD -------------------------------------------------------------------------------------


def source(version: str = "v1alpha1", **entry) -> VersionSource:
    return VersionSource(
        version=version,
        role_name="memcached",
        spec_path="roles/memcached/meta/argument_specs.yml",
        entry=entry or {"options": {"size": {"type": "int", "default": 1}}},
    )


def test_a_crd_has_schema_status_subresource_and_columns():
    crd = crds.build_crd("cache.example.com", Names.for_kind("Memcached"), [source()])
    assert crd["metadata"]["name"] == "memcacheds.cache.example.com"
    assert crd["spec"]["names"] == {
        "kind": "Memcached",
        "listKind": "MemcachedList",
        "plural": "memcacheds",
        "singular": "memcached",
    }
    [version] = crd["spec"]["versions"]
    assert version["storage"] and version["served"]
    assert version["subresources"] == {"status": {}}
    root = version["schema"]["openAPIV3Schema"]
    assert root["properties"]["spec"]["properties"]["size"] == {"type": "integer", "default": 1}
    assert root["properties"]["status"] == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    assert "required" not in root
    columns = {c["name"]: c for c in version["additionalPrinterColumns"]}
    assert list(columns) == ["Size", "Successful", "Reason", "Message", "Age"]
    assert columns["Successful"]["jsonPath"] == '.status.conditions[?(@.type=="Successful")].status'
    assert columns["Message"]["priority"] == 1
    assert columns["Age"]["type"] == "date"


def test_required_options_make_spec_required():
    crd = crds.build_crd(
        "x.example.com", Names.for_kind("At"), [source(options={"when": {"required": True}})]
    )
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert root["required"] == ["spec"]
    assert root["properties"]["spec"]["required"] == ["when"]


def test_without_managed_status_only_age_is_a_status_column():
    unmanaged = VersionSource(
        version="v1", role_name="r", spec_path="p", entry={"options": {}}, manage_status=False
    )
    crd = crds.build_crd("x.example.com", Names.for_kind("Thing"), [unmanaged])
    assert [c["name"] for c in crd["spec"]["versions"][0]["additionalPrinterColumns"]] == ["Age"]


def test_the_highest_version_is_stored():
    crd = crds.build_crd(
        "x.example.com",
        Names.for_kind("Thing"),
        [source("v1alpha1"), source("v1"), source("v1beta2"), source("v2alpha1")],
    )
    versions = [(v["name"], v["storage"]) for v in crd["spec"]["versions"]]
    assert versions == [("v1", True), ("v1beta2", False), ("v2alpha1", False), ("v1alpha1", False)]


def test_names_scope_and_columns_are_kept_from_an_existing_crd():
    existing = {
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": "x.example.com",
            "names": {"kind": "Policy", "plural": "policies", "shortNames": ["pol"]},
            "scope": "Cluster",
            "versions": [
                {
                    "name": "v1alpha1",
                    "additionalPrinterColumns": [
                        {"name": "Mine", "type": "string", "jsonPath": ".status.x"}
                    ],
                }
            ],
        },
    }
    assert crds.describes(existing, "x.example.com", "Policy")
    names = crds.names_from(existing, "Policy")
    crd = crds.build_crd("x.example.com", names, [source()], existing=existing)
    assert crd["metadata"]["name"] == "policies.x.example.com"
    assert crd["spec"]["names"]["shortNames"] == ["pol"]
    assert crd["spec"]["scope"] == "Cluster"
    columns = crd["spec"]["versions"][0]["additionalPrinterColumns"]
    mine = {"name": "Mine", "type": "string", "jsonPath": ".status.x"}
    assert {**mine, "description": crd_columns.HAND_MARK} in columns
    assert columns[-1]["name"] == "Age", "the columns of the spec and status are there too"


@pytest.mark.parametrize(
    ("group", "problem"),
    [
        ("", "core group"),
        ("cache", "must contain a dot"),
        ("Cache.Example.com", "DNS subdomain"),
        ("cache.example.com", None),
    ],
)
def test_group_validation(group, problem):
    result = crds.validate_group(group)
    assert (result is None) if problem is None else (problem in result)


def test_first_difference_names_the_path():
    a = {"spec": {"versions": [{"schema": {"x": {"type": "integer"}}}]}}
    b = {"spec": {"versions": [{"schema": {"x": {"type": "string"}}}]}}
    assert crds.first_difference(a, b) == "spec.versions[0].schema.x.type"
    assert crds.first_difference(a, a) is None
    assert crds.first_difference({"a": [1]}, {"a": [1, 2]}) == "a[1]"
    assert crds.first_difference({"a": 1}, {"a": 1, "b": 2}) == "b"


# --- keys: unknown, misplaced, not expressible ---------------------------------------------------


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"type": "int", "require": True}, "roles/x: o: unknown key 'require'"),
        (
            {"type": "str", "elements": "str"},
            "key 'elements' is only for type: list, not type: str",
        ),
        ({"type": "dict", "elements": "str"}, "key 'elements' is only for type: list"),
        (
            {"type": "str", "options": {"a": {}}},
            "key 'options' is only for type: dict or type: list with elements: dict, not type: str",
        ),
        (
            {"type": "list", "elements": "str", "options": {"a": {}}},
            "key 'options' is only for type: dict or type: list with elements: dict, not type: "
            "list with elements: str",
        ),
        (
            {"type": "list", "options": {"a": {}}},
            "not type: list without elements",
        ),
        (
            {"type": "int", "mutually_exclusive": [["a", "b"]]},
            "key 'mutually_exclusive' is only for type: dict",
        ),
        ({"type": "dict", "required_one_of": [["a", "b"]]}, "key 'required_one_of' needs the sub"),
        (
            {"type": "list", "elements": "dict", "apply_defaults": True, "options": {}},
            "key 'apply_defaults' is only for type: dict, not type: list",
        ),
        (
            {"type": "dict", "apply_defaults": True, "options": {"a": {"required": True}}},
            "apply_defaults with the required sub-option 'a' would refuse every CR",
        ),
        (
            {"type": "dict", "options": {"inner": {"type": "int", "defualt": 1}}},
            "roles/x: o.options.inner: unknown key 'defualt'",
        ),
        (
            {"type": "dict", "options": {"a": {}}, "required_one_of": [["a", "b"]]},
            "roles/x: o: required_one_of names 'b', which is not an option here",
        ),
    ],
)
def test_unknown_and_misplaced_keys_are_refused_naming_option_and_key(option, message):
    with pytest.raises(CrdError) as caught:
        schema(option)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_what_a_crd_cannot_express_is_noted_with_where_and_otherwise_left_out():
    notes: crds.Unexpressed = []
    result = option_schema(
        {
            "type": "dict",
            "no_log": True,
            "version_added": "1.0",
            "options": {"host_name": {"type": "str", "aliases": ["host"], "fallback": ["x"]}},
        },
        camel=True,
        where="roles/x: o",
        unexpressed=notes,
    )
    assert result == {"type": "object", "properties": {"hostName": {"type": "string"}}}
    assert notes == [
        ("no_log", "roles/x: o"),
        ("aliases", "roles/x: o.options.host_name"),
        ("fallback", "roles/x: o.options.host_name"),
    ]


def test_an_unknown_entry_point_key_is_refused():
    with pytest.raises(CrdError, match="roles/x: main: unknown key 'mutualy_exclusive'"):
        crds.spec_schema(
            {"options": {}, "mutualy_exclusive": []}, camel=True, where="roles/x: main"
        )


# --- constraints: where the rules go -------------------------------------------------------------


def test_constraints_become_rules_on_spec_on_dicts_and_on_list_elements():
    entry = {
        "author": "me",
        "options": {
            "size": {"type": "int"},
            "replica_count": {"type": "int"},
            "backend": {
                "type": "dict",
                "options": {"host": {}, "socket": {}},
                "required_one_of": [["host", "socket"]],
            },
            "ports": {
                "type": "list",
                "elements": "dict",
                "options": {"port": {"type": "int"}, "target_port": {"type": "int"}},
                "required_by": {"target_port": "port"},
            },
        },
        "mutually_exclusive": [["size", "replica_count"]],
    }
    spec = crds.spec_schema(entry, camel=True, where="w")
    assert spec["x-kubernetes-validations"] == [
        {
            "rule": "!(has(self.size) && has(self.replicaCount))",
            "message": "size and replicaCount are mutually exclusive",
        }
    ]
    assert spec["properties"]["backend"]["x-kubernetes-validations"] == [
        {
            "rule": "has(self.host) || has(self.socket)",
            "message": "one of host or socket is required",
        }
    ]
    ports = spec["properties"]["ports"]
    assert "x-kubernetes-validations" not in ports
    assert ports["items"]["x-kubernetes-validations"] == [
        {
            "rule": "!has(self.targetPort) || has(self.port)",
            "message": "port is required when targetPort is set",
        }
    ]


def test_without_snake_case_parameters_rules_use_the_option_names():
    spec = crds.spec_schema(
        {"options": {"a_b": {}, "c": {}}, "required_together": [["a_b", "c"]]},
        camel=False,
        where="w",
    )
    assert spec["x-kubernetes-validations"][0]["message"] == "a_b and c must be set together"


def test_a_broken_constraint_is_refused_naming_where_it_is():
    with pytest.raises(
        CrdError, match=r"^roles/x: main: mutually_exclusive must be a list of lists"
    ):
        crds.spec_schema(
            {"options": {"a": {}, "b": {}}, "mutually_exclusive": ["a", "b"]},
            camel=True,
            where="roles/x: main",
        )


def test_apply_defaults_makes_an_absent_dict_default_to_its_sub_defaults():
    result = schema(
        {"type": "dict", "apply_defaults": True, "options": {"cpu": {"type": "int", "default": 2}}}
    )
    assert result["default"] == {}
    assert result["properties"]["cpu"]["default"] == 2


# --- names and columns ----------------------------------------------------------------------------


def test_the_default_plural_is_kubebuilders():
    assert Names.for_kind("Policy").plural == "policies"
    assert Names.for_kind("Ingress", "ingressen").plural == "ingressen"
    crd = crds.build_crd("x.example.com", Names.for_kind("Policy"), [source()])
    assert crd["metadata"]["name"] == "policies.x.example.com"


@pytest.mark.parametrize(
    ("path", "exists"),
    [
        (".spec.size", True),
        (".spec.gone", False),
        (".spec.backend.host", True),
        (".spec.backend.gone", False),
        (".spec.labels.anything", True),  # free-form
        (".spec.ports[0].port", True),
        (".spec.gone[0].port", False),
        (".status.anything", True),
        (".metadata.creationTimestamp", True),
        (".spec", True),
    ],
)
def test_a_column_path_exists_while_its_spec_fields_do(path, exists):
    spec = crds.spec_schema(
        {
            "options": {
                "size": {"type": "int"},
                "backend": {"type": "dict", "options": {"host": {}}},
                "labels": {"type": "dict"},
                "ports": {"type": "list", "elements": "dict", "options": {"port": {}}},
            }
        },
        camel=True,
        where="w",
    )
    assert crd_columns.spec_path_exists(path, spec) is exists


def test_kept_columns_of_options_that_are_gone_are_removed():
    columns = [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        {"name": "Old", "type": "string", "jsonPath": ".spec.oldOption"},
        {"name": "Mine", "type": "string", "jsonPath": ".status.x"},
    ]
    existing = {
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": "x.example.com",
            "names": {"kind": "Memcached"},
            "versions": [{"name": "v1alpha1", "additionalPrinterColumns": columns}],
        },
    }
    crd = crds.build_crd(
        "x.example.com", Names.for_kind("Memcached"), [source()], existing=existing
    )
    kept = crd["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [c["name"] for c in kept] == ["Size", "Mine", "Successful", "Reason", "Message", "Age"]


SPEC = {"properties": {"size": {"type": "integer"}, "name": {"type": "string", "default": "a"}}}


def test_columns_follow_the_spec_and_hand_added_ones_survive_marked():
    """A generated column follows its field (type, priority; gone with it or once it is no
    longer a scalar); an unmarked column that is not the generator's is the author's: kept and
    marked; a marked one is kept as it is, also in place of the generated one of its path."""
    existing = [
        {"name": "Size", "type": "string", "jsonPath": ".spec.size"},  # the type was str
        {"name": "Old", "type": "string", "jsonPath": ".spec.old"},  # an option that is gone
        {"name": "Labels", "type": "string", "jsonPath": ".spec.labels"},  # now a dict
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "P"},
    ]
    spec = {"properties": {**SPEC["properties"], "labels": {"type": "object"}}}
    columns = crd_columns.printer_columns(spec, False, existing)
    assert columns == [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "priority": 1},
        {"name": "Name", "type": "string", "jsonPath": ".spec.name"},
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase",
         "description": f"P {crd_columns.HAND_MARK}"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]  # fmt: skip
    assert crd_columns.printer_columns(spec, False, columns) == columns, "stable"
    mine = {
        "name": "Big",
        "type": "integer",
        "jsonPath": ".spec.size",
        "description": crd_columns.HAND_MARK,
    }
    again = crd_columns.printer_columns(spec, False, [mine])
    assert [c["name"] for c in again] == ["Name", "Big", "Age"]
