"""Sites to partitions and partitions to members (cluster mode, issue 7).

Balance tolerances: with a uniform hash, the number of partitions one of N members owns is
Binomial(P, 1/N), and the number that move to an (N+1)th member is Binomial(P, 1/(N+1)).
Each test allows 6 standard deviations (for P = 1,024 and N = 3: 341 ± 91), where a fair
hash fails once in ~10^9 draws, so hypothesis can't flake, while a biased or broken hash
(say one member taking half) is still far outside.
"""

from __future__ import annotations

import math
import string
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trawl.cluster.partitions import Move, assign, moved, owned_by, owner_of, partition_of

PARTITIONS = 1024
member_ids = st.text(alphabet=string.ascii_lowercase + string.digits + "-.:", min_size=1)


def six_sigma(n: int, p: float) -> float:
    return 6 * math.sqrt(n * p * (1 - p))


def test_partition_of_is_pinned_across_processes_and_versions() -> None:
    # Golden values: a change here re-partitions every running cluster's sites.
    assert partition_of("example.com", 1024) == 614
    assert partition_of("bbc.co.uk", 1024) == 884
    assert partition_of("bücher.de", 1024) == 907
    assert assign(8, ["a", "b", "c"]) == ["b", "c", "a", "a", "b", "b", "b", "a"]


@given(site=st.text(min_size=1), partitions=st.integers(1, 100_000))
def test_partition_of_is_in_range(site: str, partitions: int) -> None:
    assert 0 <= partition_of(site, partitions) < partitions


def test_sites_spread_over_partitions() -> None:
    counts = Counter(partition_of(f"site-{i}.test", 64) for i in range(64_000))
    assert len(counts) == 64
    assert all(abs(n - 1000) < six_sigma(64_000, 1 / 64) for n in counts.values())


@given(members=st.lists(member_ids, min_size=1, max_size=6, unique=True), data=st.data())
def test_assignment_ignores_member_order(members: list[str], data: st.DataObject) -> None:
    shuffled = data.draw(st.permutations(members))
    assert assign(64, members) == assign(64, shuffled)
    assert assign(64, [*members, *members]) == assign(64, members)


@settings(max_examples=30, deadline=None)
@given(members=st.lists(member_ids, min_size=3, max_size=3, unique=True))
def test_three_members_each_own_about_a_third(members: list[str]) -> None:
    counts = Counter(assign(PARTITIONS, members))
    assert set(counts) == set(members)
    for member in members:
        assert abs(counts[member] - PARTITIONS / 3) < six_sigma(PARTITIONS, 1 / 3), counts


@settings(max_examples=30, deadline=None)
@given(members=st.lists(member_ids, min_size=2, max_size=9, unique=True))
def test_a_new_member_takes_about_its_share_and_only_for_itself(members: list[str]) -> None:
    *old_members, newcomer = members
    n = len(members)
    moves = moved(assign(PARTITIONS, old_members), assign(PARTITIONS, members))
    assert {move.to_member for move in moves} <= {newcomer}
    assert abs(len(moves) - PARTITIONS / n) < six_sigma(PARTITIONS, 1 / n)


@settings(max_examples=30, deadline=None)
@given(members=st.lists(member_ids, min_size=2, max_size=9, unique=True), data=st.data())
def test_a_leaving_member_moves_only_its_own_partitions(
    members: list[str], data: st.DataObject
) -> None:
    leaver = data.draw(st.sampled_from(members))
    before = assign(PARTITIONS, members)
    after = assign(PARTITIONS, [m for m in members if m != leaver])
    moves = moved(before, after)
    assert {move.partition for move in moves} == owned_by(before, leaver)
    assert all(move.from_member == leaver and move.to_member != leaver for move in moves)


def test_moved_and_owned_by() -> None:
    assert moved(["a", "b", "a"], ["a", "c", "c"]) == [Move(1, "b", "c"), Move(2, "a", "c")]
    assert owned_by(["a", "b", "a"], "a") == frozenset({0, 2})
    assert owner_of(5, ["a", "b", "c"]) == assign(8, ["a", "b", "c"])[5]


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="no live members"):
        assign(8, [])
    with pytest.raises(ValueError, match="partitions must be >= 1"):
        partition_of("a.test", 0)
    with pytest.raises(ValueError, match="don't compare"):
        moved(["a"], ["a", "b"])
