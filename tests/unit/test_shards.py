"""core/shards.py: the hash, the ranges and the balancing plan."""

from __future__ import annotations

import itertools
import random
import uuid

import pytest

from ansible_operator.core.shards import HASH_SPACE, ShardSpace, balance, fnv1a64


@pytest.mark.parametrize(
    ("text", "expected"),
    [  # the published FNV-1a 64 test vectors
        ("", 0xCBF29CE484222325),
        ("a", 0xAF63DC4C8601EC8C),
        ("foobar", 0x85944171F73967E8),
    ],
)
def test_fnv1a64_vectors(text: str, expected: int) -> None:
    assert fnv1a64(text) == expected


def test_shards_cover_the_hash_space_in_order() -> None:
    space = ShardSpace(3)
    assert [space.start(i) for i in range(4)] == [
        0,
        HASH_SPACE // 3,
        2 * HASH_SPACE // 3,
        HASH_SPACE,
    ]
    for uid in (str(uuid.UUID(int=random.getrandbits(128))) for _ in range(200)):
        shard = space.shard_of(uid)
        assert space.start(shard) <= fnv1a64(uid) < space.start(shard + 1)


def test_selector_merges_adjacent_shards_and_ends_at_two_to_the_64() -> None:
    space = ShardSpace(4)
    assert space.selector([3, 0, 1]) == (
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
        " || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"
    )
    assert space.selector([]) == ""


@pytest.mark.parametrize("count", [0, 257])
def test_shard_count_is_bounded(count: int) -> None:
    with pytest.raises(ValueError, match="between 1 and 256"):
        ShardSpace(count)


def _check_fair(count: int, plan: dict[str, frozenset[int]]) -> None:
    sizes = [len(shards) for shards in plan.values()]
    assert max(sizes) - min(sizes) <= 1
    assert sorted(itertools.chain(*plan.values())) == list(range(count))


@pytest.mark.parametrize("members", [1, 2, 3, 4, 5, 7, 32, 40])
def test_balance_from_nothing_is_fair_and_covers_every_shard_once(members: int) -> None:
    names = [f"r{i}" for i in range(members)]
    plan = balance(32, names, {})
    if members <= 32:
        _check_fair(32, plan)
    else:
        assert sorted(itertools.chain(*plan.values())) == list(range(32))
        assert sum(1 for shards in plan.values() if not shards) == members - 32


def test_balance_keeps_holders_and_moves_only_the_surplus_to_a_new_member() -> None:
    before = balance(32, ["a", "b", "c"], {})
    holders = {shard: name for name, shards in before.items() for shard in shards}
    after = balance(32, ["a", "b", "c", "d"], holders)
    _check_fair(32, after)
    moved = sum(1 for shard, name in holders.items() if shard not in after[name])
    assert moved == len(after["d"]) == 8  # only what d needs moves, nothing between a, b, c


def test_balance_gives_a_departed_members_shards_to_the_others() -> None:
    before = balance(32, ["a", "b", "c"], {})
    holders = {shard: name for name, shards in before.items() for shard in shards}
    after = balance(32, ["a", "c"], holders)
    _check_fair(32, after)
    assert before["a"] <= after["a"] and before["c"] <= after["c"]


def test_balance_ignores_holders_that_are_not_members() -> None:
    plan = balance(4, ["a"], {0: "gone", 1: "a"})
    assert plan == {"a": frozenset({0, 1, 2, 3})}


def test_balance_is_the_same_whatever_the_order_of_members() -> None:
    holders = {i: random.choice("abcx") for i in range(32)}
    names = ["a", "b", "c", "d"]
    plans = {
        repr(sorted(balance(32, order, holders).items())) for order in itertools.permutations(names)
    }
    assert len(plans) == 1
