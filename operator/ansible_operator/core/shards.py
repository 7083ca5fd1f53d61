"""Sharding: which replica reconciles which custom resource, decided without any I/O.

A CR belongs to one of a fixed number of virtual shards, equal ranges of the 64-bit FNV-1a hash
of its ``metadata.uid`` (the hash the API server's ``shardSelector`` uses, KEP-5866). Replicas
hold shards, not CRs, so that membership changes move whole ranges. ``balance`` is the plan every
replica computes from the same view (the live members, who holds what): each member gets the
same number of shards give or take one, and a shard stays with its holder whenever the count
allows, so that members coming and going move as few shards as possible.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

FNV_OFFSET_BASIS = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
HASH_SPACE = 1 << 64
DEFAULT_SHARDS = 32  # fair within one shard for up to a few replicas, cheap to renew
MAX_SHARDS = 256


def fnv1a64(text: str) -> int:
    """The 64-bit FNV-1a hash of ``text``'s UTF-8 bytes."""
    value = FNV_OFFSET_BASIS
    for byte in text.encode():
        value = ((value ^ byte) * FNV_PRIME) % HASH_SPACE
    return value


class ShardSpace:
    """``count`` equal ranges of the hash space; shard ``i`` is ``[start(i), start(i+1))``."""

    def __init__(self, count: int) -> None:
        if not 1 <= count <= MAX_SHARDS:
            raise ValueError(f"the number of shards must be between 1 and {MAX_SHARDS}")
        self.count = count

    def start(self, shard: int) -> int:
        return shard * HASH_SPACE // self.count

    def shard_of(self, uid: str) -> int:
        return fnv1a64(uid) * self.count // HASH_SPACE

    def selector(self, shards: Iterable[int]) -> str:
        """The ``shardSelector`` of ``shards``: adjacent shards merged into one range, ranges
        joined with ``||``; "" for no shard (there is no selector that matches nothing)."""
        ranges: list[tuple[int, int]] = []
        for shard in sorted(set(shards)):
            if ranges and ranges[-1][1] == shard:
                ranges[-1] = (ranges[-1][0], shard + 1)
            else:
                ranges.append((shard, shard + 1))
        # The end of the last shard is 2**64, written with 17 hex digits as the API accepts.
        return " || ".join(
            f"shardRange(object.metadata.uid, '0x{self.start(a):016x}', '0x{self.start(b):016x}')"
            for a, b in ranges
        )


def balance(
    count: int, members: Sequence[str], holders: Mapping[int, str]
) -> dict[str, frozenset[int]]:
    """Which shards each of ``members`` should hold, given who holds which now (``holders``;
    holders that are not members count as nobody).

    Every member gets ``count // len(members)`` shards or one more; the members that hold the
    most now get the extra ones. Each member keeps its lowest-numbered current shards up to its
    share; the shards left over go, lowest first, to the members short of their share, in name
    order. The result depends only on the arguments, so every replica computes the same plan.
    """
    if not members:
        return {}
    names = sorted(set(members))
    held: dict[str, list[int]] = {name: [] for name in names}
    for shard in sorted(holders):
        holder = holders[shard]
        if holder in held and 0 <= shard < count:
            held[holder].append(shard)
    base, extra = divmod(count, len(names))
    by_holding = sorted(names, key=lambda name: (-len(held[name]), name))
    share = {name: base + (1 if rank < extra else 0) for rank, name in enumerate(by_holding)}
    plan: dict[str, set[int]] = {name: set(held[name][: share[name]]) for name in names}
    taken = set().union(*plan.values())
    free = iter(shard for shard in range(count) if shard not in taken)
    for name in names:
        while len(plan[name]) < share[name]:
            plan[name].add(next(free))
    return {name: frozenset(shards) for name, shards in plan.items()}
