"""A cluster node's partition table: loaded partitions, stream positions and their races,
checkpoint timing, and the restart time a site's politeness gap runs from. Pure: values and
`now` in, decisions out."""

from __future__ import annotations

import pytest

from trawl.cluster.partition_table import NodeStats, PartitionTable
from trawl.cluster.partitions import partition_of
from trawl.cluster.redis_links import START

N = 16
STARTED_AT = 1000.0
INTERVAL_S = 60.0


def table() -> PartitionTable:
    return PartitionTable(N, started_at=STARTED_AT)


def site_in(partition: int) -> str:
    return next(s for i in range(10_000) if partition_of(s := f"s{i}.test", N) == partition)


def test_a_partition_is_loaded_from_its_take_over_until_forgotten() -> None:
    t = table()
    assert not t.is_loaded(3)
    assert t.position(3) is None
    t.load(3, START, now=1010.0, wall_now=5000.0)
    assert t.is_loaded(3)
    assert t.loaded() == {3}
    assert t.position(3) == START
    t.forget(3)
    assert not t.is_loaded(3)
    assert t.loaded() == set()


def test_the_stream_position_advances_and_marks_the_partition_changed() -> None:
    t = table()
    t.load(3, START, now=1010.0, wall_now=5000.0)
    assert t.changed() == set(), "a fresh take-over has nothing to checkpoint yet"
    t.advance(3, "1-1")
    t.advance(3, "1-2")
    assert t.position(3) == "1-2"
    assert t.changed() == {3}
    t.forget(3)
    assert t.changed() == set(), "a forgotten partition is nobody's to checkpoint"


def test_a_read_applies_only_to_the_generation_it_began_in() -> None:
    t = table()
    t.load(1, START, now=1010.0, wall_now=5000.0)
    t.load(2, "7-0", now=1010.0, wall_now=5000.0)
    read = t.begin_read()
    assert read.positions == {1: START, 2: "7-0"}
    assert t.is_current(read, 1)
    assert t.is_current(read, 2)
    # While the read awaited: partition 1 was lost and won again, 2 handed over.
    t.forget(1)
    t.load(1, "9-0", now=1020.0, wall_now=5010.0)
    t.forget(2)
    assert not t.is_current(read, 1), "taken over afresh: replayed from the new checkpoint"
    assert not t.is_current(read, 2), "forgotten"
    assert not t.is_current(read, 5), "never part of the read"
    assert t.is_current(t.begin_read(), 1)


def test_a_read_is_current_after_another_partition_changes() -> None:
    t = table()
    t.load(1, START, now=1010.0, wall_now=5000.0)
    read = t.begin_read()
    t.load(2, START, now=1011.0, wall_now=5001.0)
    t.advance(1, "1-1")  # an earlier entry of the same read
    assert t.is_current(read, 1)


def test_a_changed_partition_is_due_an_interval_after_its_last_checkpoint() -> None:
    t = table()
    t.load(4, START, now=1010.0, wall_now=5000.0)
    t.advance(4, "1-1")
    tokens = {4: 77}
    assert t.due_checkpoints(5059.9, interval_s=INTERVAL_S, batch=8, tokens=tokens) == {}
    assert t.due_checkpoints(5060.0, interval_s=INTERVAL_S, batch=8, tokens=tokens) == {4: 77}
    t.checkpointed(4, "1-1", wall_now=5061.0)
    assert t.changed() == set()
    assert t.due_checkpoints(9999.0, interval_s=INTERVAL_S, batch=8, tokens=tokens) == {}


def test_a_partition_whose_stream_moved_during_its_checkpoint_stays_changed() -> None:
    t = table()
    t.load(4, START, now=1010.0, wall_now=5000.0)
    t.advance(4, "1-1")
    positions = t.checkpoint_positions([4])
    t.advance(4, "1-2")  # consumed while the checkpoint was uploaded
    t.checkpointed(4, positions[4], wall_now=5070.0)
    assert t.changed() == {4}
    assert t.due_checkpoints(5129.9, interval_s=INTERVAL_S, batch=8, tokens={4: 1}) == {}
    assert t.due_checkpoints(5130.0, interval_s=INTERVAL_S, batch=8, tokens={4: 1}) == {4: 1}


def test_checkpoints_wait_for_a_fetchable_lease_and_come_lowest_first_in_batches() -> None:
    t = table()
    for p in (9, 2, 5, 7):
        t.load(p, START, now=1010.0, wall_now=5000.0)
        t.advance(p, "1-1")
    tokens = {2: 20, 5: 50, 9: 90}  # 7's lease is in doubt: no token, no checkpoint
    due = t.due_checkpoints(6000.0, interval_s=INTERVAL_S, batch=2, tokens=tokens)
    assert due == {2: 20, 5: 50}
    due = t.due_checkpoints(6000.0, interval_s=INTERVAL_S, batch=8, tokens=tokens)
    assert due == {2: 20, 5: 50, 9: 90}


def test_checkpoint_positions_cover_loaded_partitions_only() -> None:
    t = table()
    t.load(1, "3-0", now=1010.0, wall_now=5000.0)
    assert t.checkpoint_positions([1, 2]) == {1: "3-0"}


def test_a_site_gap_runs_from_the_later_of_node_start_and_take_over() -> None:
    t = table()
    site = site_in(6)
    assert t.partition_of(site) == 6
    assert t.restarted_at(site) == STARTED_AT, "never taken over: the node's start"
    t.load(6, START, now=1500.0, wall_now=5000.0)
    assert t.restarted_at(site) == 1500.0
    assert t.restarted_at(site_in(7)) == STARTED_AT, "another partition's take-over"
    t.forget(6)
    t.load(6, START, now=2500.0, wall_now=6000.0)
    assert t.restarted_at(site) == 2500.0, "the latest take-over"


def test_a_take_over_before_the_node_started_does_not_move_the_gap_back() -> None:
    t = table()
    t.load(6, START, now=STARTED_AT - 5.0, wall_now=5000.0)
    assert t.restarted_at(site_in(6)) == STARTED_AT


def test_counts_and_repr() -> None:
    t = table()
    t.load(1, START, now=1010.0, wall_now=5000.0)
    t.load(2, START, now=1010.0, wall_now=5000.0)
    t.note_restored(5, 2)
    t.note_consumed(10)
    t.note_new()
    t.advance(1, "1-1")
    t.checkpointed(1, "1-1", wall_now=5100.0)
    t.forget(2)
    t.note_handed_over()
    assert t.stats() == NodeStats(
        loaded=1, acquired=2, handed_over=1, checkpoints=1, links_consumed=10, links_new=1,
        rows_restored=5, rows_skipped_fetched=2,
    )  # fmt: skip
    assert repr(t) == "<PartitionTable loaded=1 changed=0 acquired=2 handed_over=1>"


def test_a_table_needs_a_partition() -> None:
    with pytest.raises(ValueError, match="partitions=0"):
        PartitionTable(0, started_at=STARTED_AT)
