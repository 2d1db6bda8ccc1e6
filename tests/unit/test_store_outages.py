"""Issue 19: a node's store outages and backlog bound (cluster/store_outages.py)."""

from __future__ import annotations

import pytest

from trawl.cluster.store_outages import BacklogBound, Store, StoreOutages


def test_an_outage_runs_from_the_first_failure_to_the_next_success() -> None:
    outages = StoreOutages()
    assert outages.note_failure(Store.S3, 100.0, "down") is True
    assert outages.note_failure(Store.S3, 105.0, "still down") is False
    (outage,) = outages.stats().failing
    assert (outage.since, outage.error) == (100.0, "still down")
    assert outages.note_success(Store.S3, 121.0) == 21.0
    assert outages.note_success(Store.S3, 122.0) is None
    stats = outages.stats()
    assert (stats.failing, stats.outages, stats.longest_outage_s) == ((), 1, 21.0)


def test_postgres_failing_pauses_fetches_until_it_answers_again() -> None:
    outages = StoreOutages()
    outages.note_failure(Store.POSTGRES, 10.0, "refused")
    assert outages.is_paused()
    outages.note_success(Store.POSTGRES, 30.0)
    assert not outages.is_paused()


def test_a_failing_object_store_pauses_only_past_the_backlog_bound() -> None:
    outages = StoreOutages(BacklogBound(max_cuts=3, max_bytes=1000))
    outages.note_failure(Store.S3, 10.0, "refused")
    outages.note_backlog(2, 999)
    assert not outages.is_paused()
    outages.note_backlog(3, 10)
    assert outages.is_paused()
    outages.note_backlog(1, 1000)
    assert outages.is_paused()
    outages.note_backlog(0, 0)  # drained: fetching resumes by itself
    assert not outages.is_paused()
    stats = outages.stats()
    assert (stats.peak_cuts_waiting, stats.peak_chunk_bytes_waiting) == (3, 1000)


def test_member_info_names_the_failing_store_since_when_and_the_backlog() -> None:
    outages = StoreOutages(BacklogBound(max_cuts=2))
    assert outages.member_info() == {
        "failing": "-", "backlog_cuts": "0", "backlog_bytes": "0", "paused": "no",
    }  # fmt: skip
    outages.note_failure(Store.POSTGRES, 1700000000.4, "x")
    outages.note_backlog(2, 512)
    assert outages.member_info() == {
        "failing": "postgres@1700000000", "backlog_cuts": "2", "backlog_bytes": "512",
        "paused": "yes",
    }  # fmt: skip


def test_a_bound_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        BacklogBound(max_cuts=0)
