"""Which HTTP headers the proxy passes on, for ordinary requests and upgraded connections alike.

Hop-by-hop headers describe one connection and are never forwarded (RFC 9110 7.6.1, plus the
older Keep-Alive and Proxy-Connection); an upgrade is the exception, as its Connection and
Upgrade headers are the request itself. Headers the proxy writes itself (the operator's
credentials, the upstream host, a length it computes) are dropped by each caller.
"""

from __future__ import annotations

from collections.abc import Iterable

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
UPGRADE = frozenset({"connection", "upgrade"})


def end_to_end(
    headers: Iterable[tuple[str, str]],
    *,
    drop: Iterable[str] = (),
    keep: frozenset[str] = frozenset(),
) -> list[tuple[str, str]]:
    """``headers`` without the hop-by-hop ones (except those in ``keep``) and without ``drop``
    (names in lower case)."""
    dropped = (HOP_BY_HOP - keep) | frozenset(drop)
    return [(name, value) for name, value in headers if name.lower() not in dropped]
