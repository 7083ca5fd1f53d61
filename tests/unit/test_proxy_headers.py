"""The headers the proxy passes on: never the hop-by-hop ones, but an upgrade's own."""

from __future__ import annotations

from ansible_operator.proxy.headers import UPGRADE, end_to_end

REQUEST = [
    ("Host", "127.0.0.1:8888"),
    ("Authorization", "Bearer run-token"),
    ("Accept", "application/json"),
    ("Connection", "Upgrade"),
    ("Upgrade", "websocket"),
    ("Keep-Alive", "timeout=5"),
    ("TE", "trailers"),
    ("Transfer-Encoding", "chunked"),
    ("Proxy-Authorization", "Basic eA=="),
    ("X-Custom", "1"),
    ("x-custom", "2"),
]


def test_hop_by_hop_headers_are_dropped_whatever_their_case() -> None:
    assert end_to_end(REQUEST, drop=["host", "authorization"]) == [
        ("Accept", "application/json"),
        ("X-Custom", "1"),
        ("x-custom", "2"),
    ]


def test_an_upgrade_keeps_connection_and_upgrade() -> None:
    assert end_to_end(REQUEST, keep=UPGRADE, drop=["host", "authorization"]) == [
        ("Accept", "application/json"),
        ("Connection", "Upgrade"),
        ("Upgrade", "websocket"),
        ("X-Custom", "1"),
        ("x-custom", "2"),
    ]


def test_nothing_else_is_dropped() -> None:
    headers = [("Content-Type", "application/json"), ("Content-Length", "2")]
    assert end_to_end(headers) == headers
