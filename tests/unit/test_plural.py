"""Kind plurals as kubebuilder makes them (gobuffalo/flect on the lowercased kind)."""

from __future__ import annotations

import pytest

from ansible_operator.gocompat.plural import pluralize


@pytest.mark.parametrize(
    ("kind", "plural"),
    [
        # what kubebuilder scaffolds for common kinds
        ("Memcached", "memcacheds"),
        ("NginxOperator", "nginxoperators"),
        ("At", "ats"),
        ("Foo", "foos"),
        ("Policy", "policies"),
        ("NetworkPolicy", "networkpolicies"),
        ("Ingress", "ingresses"),
        ("IngressClass", "ingressclasses"),
        ("Gateway", "gateways"),
        ("Proxy", "proxies"),
        ("Status", "statuses"),
        ("Box", "boxes"),
        ("Patch", "patches"),
        ("Hash", "hashes"),
        ("Quiz", "quizzes"),
        ("Index", "indices"),
        ("Matrix", "matrices"),
        ("Analysis", "analyses"),
        ("Leaf", "leaves"),
        ("Shelf", "shelves"),
        ("Person", "people"),
        ("Child", "children"),
        ("Sheep", "sheep"),
        ("Database", "databases"),
        ("Cactus", "cacti"),
        ("Photo", "photos"),
        ("Hero", "heroes"),
        ("Datum", "data"),
        ("Alias", "aliases"),
        ("Ox", "oxen"),
        # flect's quirks, kept because the served resource must match
        ("Redis", "redis"),  # ends in s: taken as a plural already
        ("Endpoints", "endpoints"),
        ("Video", "videoes"),
        ("Safe", "saves"),
        ("Batman", "batmen"),  # irregular words also act as suffixes
        ("Human", "humans"),
        ("Policies", "policies"),  # already a plural
        ("News", "news"),
    ],
)
def test_kinds_get_kubebuilders_plural(kind, plural):
    assert pluralize(kind) == plural


def test_an_empty_kind_has_an_empty_plural():
    assert pluralize("") == ""
