"""snake_case conversion: every upstream vector, in every order of the special words."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from ansible_operator.gocompat.strcase import _to_snake, map_to_snake, to_snake

# Upstream's unit vectors (AOP paramconv_test.go).
UPSTREAM_VECTORS = [
    ("ThisShouldHaveUnderscores", "_this_should_have_underscores"),
    ("sizeK8sBuckets", "size_k8s_buckets"),
    ("_CanYou_Handle_mixedVars", "_can_you_handle_mixed_vars"),
    ("egressIPs", "egress_ips"),
    ("IPsegress", "_ips_egress"),
    ("URLegressIPEgressHTTP", "url_egress_ip_egress_http"),
    ("URLsegressIPsEgressHTTPs", "_urls_egress_ips_egress_https"),
    ("888", "888"),
    ("k8s_var", "k8s_var"),
    ("k8s var", "k8s_var"),
    ("db2_init", "db2_init"),
    ("s3_bucket", "s3_bucket"),
]

# Derived from the algorithm (not run in Go); the surprises are upstream's, kept on purpose.
PORT_VECTORS = [
    ("ID", "_id"),
    ("ABC", "_abc"),
    ("URLs", "__urls"),
    ("HTTPSProxy", "http_s_proxy"),
    ("egress-IPs", "egress__ips"),
    ("aB", "ab"),
    ("a1b2", "a_1_b2"),
    ("clusterIPs", "cluster_ips"),
]

OTHER_VECTORS = [
    ("", ""),  # upstream panics
    ("   ", ""),  # upstream panics after trimming
    ("size", "size"),
    ("replicaCount", "replica_count"),
    ("JSONData", "_json_data"),
    ("  paddedKey  ", "padded_key"),
    ("already_snake_case", "already_snake_case"),
    ("kebab-case-key", "kebab_case_key"),
    ("x", "x"),
    ("X", "_x"),
    ("serviceURL", "service_url"),
    ("httpPort", "http_port"),
]


@pytest.mark.parametrize(("key", "expected"), UPSTREAM_VECTORS + PORT_VECTORS + OTHER_VECTORS)
def test_to_snake(key: str, expected: str) -> None:
    assert to_snake(key) == expected


@pytest.mark.parametrize("order", list(itertools.permutations(("HTTP", "URL", "IP"))))
@pytest.mark.parametrize(("key", "expected"), UPSTREAM_VECTORS + PORT_VECTORS)
def test_vectors_hold_in_every_special_word_order(
    order: tuple[str, ...], key: str, expected: str
) -> None:
    # Upstream walks a Go map, so the order of HTTP/URL/IP is random at run time.
    assert _to_snake(key, order) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({}, {}),
        ({"sizeK8s": 1}, {"size_k8s": 1}),
        (
            {"outerKey": {"innerKey": [{"listKey": "Value"}, "plainString", 3]}},
            {"outer_key": {"inner_key": [{"list_key": "Value"}, "plainString", 3]}},
        ),
        ([{"aB": {"cD": None}}], [{"ab": {"cd": None}}]),
        ("camelCaseString", "camelCaseString"),
        (42, 42),
        (None, None),
        # Values are never converted, only keys.
        ({"k": "someValue"}, {"k": "someValue"}),
        # A key already in snake form wins over one that converts into it, whatever the order.
        ({"foo_bar": 1, "fooBar": 2}, {"foo_bar": 1}),
        ({"fooBar": 2, "foo_bar": 1}, {"foo_bar": 1}),
        # Two converted keys colliding: the later one wins.
        ({"fooBar": 1, "foo-bar": 2}, {"foo_bar": 2}),
    ],
)
def test_map_to_snake(value: Any, expected: Any) -> None:
    assert map_to_snake(value) == expected


def test_map_to_snake_copies() -> None:
    inner = {"innerKey": [1, 2]}
    source = {"outerKey": inner}
    result = map_to_snake(source)
    result["outer_key"]["inner_key"].append(3)
    assert inner == {"innerKey": [1, 2]}
