from __future__ import annotations

import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from trawl.api.stats_history import (
    STATUS_CLASSES,
    StatsHistory,
    StatsSample,
    count_by_class,
    interval_row,
    status_class,
)


def sample(at: float, fetched: int = 0, **kw: object) -> StatsSample:
    values: dict[str, object] = {
        "pages_fetched": fetched,
        "pages_stored": fetched,
        "bytes_downloaded": 1000 * fetched,
        "errors": 0,
        "statuses": (fetched, 0, 0, 0, 0, 0),
        "queued": (5, 3, 1),
        "handed_out": (fetched, 0, 0),
    }
    values.update(kw)
    return StatsSample(at, **values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("key", "cls"),
    [("200", "2xx"), ("304", "3xx"), ("404", "4xx"), ("503", "5xx"), ("599", "5xx"),
     ("error:timeout", "error"), ("999", "other"), ("100", "other"),
     ("robots:rules", None), ("sitemap:200", None), ("sitemap:error:dns", None), ("²", None)],
)  # fmt: skip
def test_status_class_sorts_page_answers_and_leaves_out_robots_and_sitemaps(
    key: str, cls: str | None
) -> None:
    assert status_class(key) == cls


def test_count_by_class_adds_codes_of_one_class() -> None:
    counts = count_by_class({"200": 7, "203": 1, "404": 2, "error:reset": 3, "robots:rules": 9})
    assert dict(zip(STATUS_CLASSES, counts, strict=True)) == {
        "2xx": 8, "3xx": 0, "4xx": 2, "5xx": 0, "error": 3, "other": 0
    }  # fmt: skip


def test_a_row_is_the_interval_between_two_samples() -> None:
    before = sample(100.0, 10, handed_out=(6, 2, 1), statuses=(8, 1, 1, 0, 0, 0), errors=1)
    after = sample(102.0, 16, handed_out=(9, 3, 4), statuses=(12, 1, 2, 1, 0, 0), errors=2)
    row = interval_row(before, after)
    assert row["at"] == 102.0
    assert row["intervalS"] == 2.0
    assert row["pagesPerSecond"] == 3.0
    assert row["bytesPerSecond"] == 3000.0
    assert row["newErrors"] == 1
    assert row["statuses"] == {"2xx": 4, "3xx": 0, "4xx": 1, "5xx": 1, "error": 0, "other": 0}
    assert row["frontier"] == {"fast": 5, "slow": 3, "refresh": 1}
    assert row["turns"] == {"discovery": 4, "refresh": 3}


def test_a_counter_that_shrank_counts_as_zero() -> None:
    row = interval_row(sample(1.0, 9), sample(2.0, 4))
    assert row["pagesPerSecond"] == 0.0
    assert row["statuses"]["2xx"] == 0  # type: ignore[index]


def test_rows_since_returns_only_newer_intervals() -> None:
    history = StatsHistory()
    for i in range(5):
        assert history.add(sample(100.0 + 2 * i, 3 * i))
    assert [r["at"] for r in history.rows_since(0.0)] == [102.0, 104.0, 106.0, 108.0]
    assert [r["at"] for r in history.rows_since(104.0)] == [106.0, 108.0]
    assert [r["at"] for r in history.rows_since(105.0)] == [106.0, 108.0]
    assert history.rows_since(108.0) == []
    assert history.rows_since(1e18) == []


def test_one_sample_makes_no_row() -> None:
    history = StatsHistory()
    assert history.rows_since(0.0) == []
    history.add(sample(1.0, 1))
    assert history.rows_since(0.0) == []


def test_a_sample_that_does_not_move_time_forward_is_dropped() -> None:
    history = StatsHistory()
    assert history.add(sample(10.0, 1))
    assert not history.add(sample(10.0, 2))
    assert not history.add(sample(9.0, 3))  # the wall clock stepped back
    assert history.add(sample(12.0, 4))
    assert [r["pagesPerSecond"] for r in history.rows_since(0.0)] == [1.5]


def test_the_ring_keeps_the_newest_samples() -> None:
    history = StatsHistory(capacity=3)
    for i in range(10):
        history.add(sample(float(i), i))
    stats = history.stats()
    assert (stats.samples, stats.capacity, stats.first_at, stats.last_at) == (3, 3, 7.0, 9.0)
    assert [r["at"] for r in history.rows_since(0.0)] == [8.0, 9.0]
    assert repr(history) == "<StatsHistory 3/3 samples, 7.0..9.0>"


def test_capacity_below_two_is_refused() -> None:
    with pytest.raises(ValueError, match="capacity"):
        StatsHistory(capacity=1)


@given(st.lists(st.floats(-1e12, 1e12, allow_nan=False), max_size=40), st.floats(0, 1e12))
@example([0.0, 2.225073858507e-311], 0.0)  # 1 page over a subnormal interval overflowed to inf
def test_rates_are_always_finite_and_rows_ordered(times: list[float], since: float) -> None:
    history = StatsHistory(capacity=16)
    for n, at in enumerate(times):
        history.add(sample(at, n))
    rows = history.rows_since(since)
    ats = [r["at"] for r in rows]
    assert ats == sorted(set(ats))
    assert all(at > since for at in ats)  # type: ignore[operator]
    assert all(math.isfinite(r["pagesPerSecond"]) for r in rows)  # type: ignore[arg-type]


def test_pages_per_second_now_spans_about_the_window() -> None:
    history = StatsHistory()
    assert history.pages_per_second(10.0) is None
    history.add(sample(0.0, 0))
    assert history.pages_per_second(10.0) is None
    for t in range(2, 21, 2):  # 1 page/s for 10 s, then 5 pages/s
        history.add(sample(float(t), t // 2 if t <= 10 else 5 + 5 * (t - 10)))
    assert history.pages_per_second(10.0) == pytest.approx(5.0)
    assert history.pages_per_second(1000.0) == pytest.approx(55 / 20)
