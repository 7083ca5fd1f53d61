"""Which fields of a dependent changed: a small memory of an object, compared with its next
version, so that a run can say what woke it (``data.timestamp``, not just "the ConfigMap").

An object is remembered as the paths of what DependentPredicate compares
(``predicates.dependent_view``), down to ``DEPTH`` levels (``spec.replicas``,
``data.timestamp``, ``metadata.annotations.example.com/last-run``), each with an 8-byte hash of
its value; a deeper value is hashed whole under its path at that depth. ``apiVersion`` and
``kind`` are left out: they never change for an object of one watch, and the items of a list
come without them while watch events carry them. Past ``MAX_PATHS``
paths (in sorted order), the rest are hashed together under ``REST``, so two ``Fields`` are
equal exactly when the views are (up to a hash collision): the memory decides whether an update
counts, and names what changed.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ansible_operator.core.predicates import dependent_view

DEPTH = 3  # metadata.annotations.<key>, spec.template.spec
MAX_PATHS = 64  # per object; the rest hashed together
HASH_BYTES = 8
REST = "(other fields)"  # the paths past MAX_PATHS, as one
NAMED = 3  # fields a message names before "and N more"


@dataclass(frozen=True, slots=True)
class Fields:
    """An object's paths (sorted, strings interned: objects of one shape share them) and the
    hash of each path's value, ``HASH_BYTES`` each, in the same order."""

    paths: tuple[str, ...]
    hashes: bytes

    def as_dict(self) -> dict[str, bytes]:
        step = HASH_BYTES
        return {p: self.hashes[i * step : (i + 1) * step] for i, p in enumerate(self.paths)}


def _leaves(value: Any, path: str, depth: int) -> Iterator[tuple[str, Any]]:
    if depth < DEPTH and isinstance(value, Mapping) and value:
        for key in sorted(value, key=str):
            yield from _leaves(value[key], f"{path}.{key}" if path else str(key), depth + 1)
    else:
        yield path, value


def _hash(value: Any) -> bytes:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=HASH_BYTES).digest()


def fields_of(obj: Mapping[str, Any]) -> Fields:
    """What is remembered of ``obj``: its view's paths and their values' hashes."""
    leaves = list(_leaves(dependent_view(obj), "", 0))
    if len(leaves) > MAX_PATHS:
        kept, rest = leaves[: MAX_PATHS - 1], leaves[MAX_PATHS - 1 :]
        leaves = [*kept, (REST, dict(rest))]
    paths = tuple(sys.intern(path) for path, _ in leaves)
    return Fields(paths, b"".join(_hash(value) for _, value in leaves))


def changed(old: Fields, new: Fields) -> tuple[str, ...]:
    """The paths whose value differs, appeared or went, sorted (``REST`` last); () when equal."""
    if old == new:
        return ()
    before, after = old.as_dict(), new.as_dict()
    paths = sorted(
        (p for p in before.keys() | after.keys() if before.get(p) != after.get(p)),
        key=lambda p: (p == REST, p),
    )
    return tuple(paths)


def describe(paths: tuple[str, ...], limit: int = NAMED) -> str:
    """``data.timestamp, metadata.annotations.x and 2 more``; "" for none."""
    if len(paths) <= limit:
        return ", ".join(paths)
    return f"{', '.join(paths[:limit])} and {len(paths) - limit} more"
