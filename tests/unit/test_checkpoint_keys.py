"""Checkpoint key names (issue 7): the greatest key of a partition is its latest checkpoint."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trawl.cluster.checkpoint_keys import CheckpointKey, key_for, latest, parse, prefix_for

AT = 1_790_000_000.123  # epoch seconds


def test_the_key_format() -> None:
    assert key_for(7, 1_790_000_000_456, AT) == (
        "checkpoints/p00007/00000001790000000456-1790000000123.ckpt"
    )
    assert prefix_for(65535) == "checkpoints/p65535/"


def test_parse_round_trips() -> None:
    key = key_for(1023, 42, AT)
    parsed = parse(key)
    assert parsed == CheckpointKey(1023, 42, 1_790_000_000_123)
    assert parsed is not None
    assert (parsed.key, parsed.at) == (key, 1_790_000_000.123)


@pytest.mark.parametrize(
    "key",
    [
        "checkpoints/readme.txt",
        "checkpoints/p00007/",
        "checkpoints/p7/00000000000000000042-1790000000123.ckpt",  # unpadded
        "checkpoints/p00007/00000000000000000042-1790000000123.ckpt.tmp",
        "checkpoints/p00007/00000000000000000042-1790000000123",
        "warc/p00007/00000000000000000042-1790000000123.ckpt",
        "checkpoints/p0000\u0667/00000000000000000042-1790000000123.ckpt",  # an Arabic-Indic 7
        "",
    ],
)
def test_foreign_keys_parse_to_none(key: str) -> None:
    assert parse(key) is None


def test_a_higher_fence_wins_over_a_later_time() -> None:
    # The stale owner (fence 5) writes its last checkpoint after its successor (fence 9)
    # wrote one: the successor's is the latest whatever the clocks say.
    successor = key_for(3, 9, AT)
    stale_late = key_for(3, 5, AT + 60)
    found = latest([stale_late, successor, "checkpoints/junk"])
    assert found[3].key == successor


def test_within_one_lease_the_later_time_wins() -> None:
    keys = [key_for(3, 9, AT + 5), key_for(3, 9, AT), key_for(4, 1, AT)]
    assert {p: c.key for p, c in latest(keys).items()} == {3: keys[0], 4: keys[2]}


def test_latest_of_nothing() -> None:
    assert latest([]) == {}
    assert latest(["checkpoints/p00001/x.ckpt"]) == {}


@pytest.mark.parametrize(
    ("partition", "fence", "at"),
    [
        (-1, 1, AT),
        (100_000, 1, AT),
        (1, -1, AT),
        (1, 10**20, AT),
        (1, 1, -0.5),
        (1, 1, 10**13),
        (1, 1, float("nan")),
        (1, 1, float("inf")),
    ],
)
def test_out_of_range_fields_are_refused(partition: int, fence: int, at: float) -> None:
    with pytest.raises(ValueError, match="outside"):
        key_for(partition, fence, at)


fields = st.tuples(
    st.integers(0, 65535), st.integers(0, 2**64 - 1), st.integers(0, 10**13 - 1)
).map(lambda t: CheckpointKey(*t))


@given(st.lists(fields, min_size=1, max_size=20))
def test_key_order_is_fence_then_time_order(checkpoints: list[CheckpointKey]) -> None:
    keys = [c.key for c in checkpoints]
    assert [parse(k) for k in keys] == checkpoints
    for partition, found in latest(keys).items():
        mine = [c for c in checkpoints if c.partition == partition]
        assert found == max(mine, key=lambda c: (c.fence, c.at_ms))
        assert found.key == max(c.key for c in mine)
