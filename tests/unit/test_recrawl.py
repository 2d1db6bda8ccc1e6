"""Change-rate estimate and recrawl schedule (issue 5 groundwork; pure)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trawl.recrawl.change_rate import Visit, change_rate
from trawl.recrawl.schedule import RecrawlPolicy, next_fetch_at, next_interval_s

POLICY = RecrawlPolicy()
HOUR = 3600.0


def simulate(rate_per_s: float, intervals: list[float], seed: int) -> list[Visit]:
    """Visits to a page whose changes are a Poisson process of `rate_per_s`."""
    rng = random.Random(seed)
    visits = []
    for t in intervals:
        changed = rng.random() < 1 - math.exp(-rate_per_s * t)
        visits.append(Visit(t, changed))
    return visits


def test_no_change_seen_means_rate_zero() -> None:
    assert change_rate([Visit(HOUR, False)] * 10) == 0.0
    assert change_rate([]) == 0.0


def test_estimate_recovers_the_true_rate_from_irregular_visits() -> None:
    true_rate = 1 / (6 * HOUR)  # a change every 6 hours on average
    rng = random.Random(1)
    intervals = [rng.uniform(0.5, 12) * HOUR for _ in range(4000)]
    estimate = change_rate(simulate(true_rate, intervals, seed=2))
    assert estimate == pytest.approx(true_rate, rel=0.1)


def test_changing_on_every_visit_gives_a_finite_high_rate() -> None:
    rate = change_rate([Visit(HOUR, True)] * 10)
    assert math.isfinite(rate)
    assert rate > 1 / HOUR


def test_nine_of_ten_changed_comes_back_far_sooner_than_never_changed() -> None:
    busy = change_rate([Visit(HOUR, i != 0) for i in range(10)])
    quiet = change_rate([Visit(HOUR, False) for _ in range(10)])
    busy_next = next_interval_s(busy, policy=POLICY)
    quiet_next = next_interval_s(quiet, previous_interval_s=10 * HOUR, policy=POLICY)
    assert busy_next < HOUR
    assert quiet_next == 20 * HOUR
    assert quiet_next > 20 * busy_next


def test_quiet_pages_drift_out_to_the_maximum() -> None:
    interval = None
    for _ in range(40):
        interval = next_interval_s(0.0, previous_interval_s=interval, policy=POLICY)
    assert interval == POLICY.max_interval_s


def test_importance_shortens_the_interval_within_bounds() -> None:
    rate = 1 / (10 * HOUR)
    plain = next_interval_s(rate, policy=POLICY)
    important = next_interval_s(rate, importance=4.0, policy=POLICY)
    assert important == pytest.approx(plain / 4)
    assert next_interval_s(1.0, importance=100.0, policy=POLICY) == POLICY.min_interval_s


def test_next_fetch_at_is_fetch_time_plus_interval() -> None:
    assert next_fetch_at(1000.0, 0.0, policy=POLICY) == 1000.0 + POLICY.min_interval_s


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        Visit(0.0, True)
    with pytest.raises(ValueError, match="min_interval_s"):
        RecrawlPolicy(min_interval_s=10.0, max_interval_s=5.0)


@given(
    st.lists(
        st.tuples(st.floats(1.0, 1e7, allow_nan=False), st.booleans()), min_size=1, max_size=50
    )
)
def test_rate_is_finite_and_more_changes_never_lower_it(visits: list[tuple[float, bool]]) -> None:
    history = [Visit(t, c) for t, c in visits]
    rate = change_rate(history)
    assert math.isfinite(rate)
    assert rate >= 0.0
    if not all(c for _, c in visits):
        first_quiet = next(i for i, (_, c) in enumerate(visits) if not c)
        busier = list(history)
        busier[first_quiet] = Visit(history[first_quiet].interval_s, True)
        assert change_rate(busier) >= rate * (1 - 1e-9)
    interval = next_interval_s(rate, policy=POLICY)
    assert POLICY.min_interval_s <= interval <= POLICY.max_interval_s


def test_refresh_priority_puts_busy_pages_first_and_quiet_ones_last() -> None:
    from trawl.recrawl.schedule import refresh_priority

    busy = refresh_priority(1 / 60, 600.0, visits=5)
    unknown = refresh_priority(0.0, 600.0, visits=0)
    quiet = refresh_priority(0.0, 600.0, visits=5)
    assert busy > unknown > quiet == 0.0
    assert refresh_priority(1 / 60, 600.0, visits=5, importance=3.0) == pytest.approx(3 * busy)
    assert refresh_priority(1 / 3600, 60.0, visits=5) < busy  # less likely changed yet
