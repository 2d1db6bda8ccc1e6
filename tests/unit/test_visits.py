"""Visit history and the refetch plan (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from trawl.recrawl.schedule import RecrawlPolicy
from trawl.recrawl.visits import add_visit, plan_refetch

POLICY = RecrawlPolicy(min_interval_s=2.0, max_interval_s=3600.0)


def _plan(visits: list[list[float]], **kw: float) -> float:
    plan = plan_refetch(
        visits,
        1000.0,
        importance=kw.get("importance", 1.0),
        slowdown=kw.get("slowdown", 1.0),
        previous_interval_s=kw.get("previous"),
        policy=POLICY,
    )
    return plan.next_fetch_at - 1000.0


def test_history_keeps_the_last_visits_only() -> None:
    visits: list[list[float]] = []
    for i in range(20):
        visits = add_visit(visits, 10.0 + i, i % 2 == 0, keep=16)
    assert len(visits) == 16
    assert visits[-1] == [29.0, 0.0]
    assert visits[0] == [14.0, 1.0]


def test_damaged_entries_are_dropped_not_fatal() -> None:
    damaged: list[list[float]] = [[1.0], [-5.0, 1.0], [float("inf"), 0.0], [10.0, 1.0]]
    assert add_visit(damaged, 5.0, False, keep=16) == [[10.0, 1.0], [5.0, 0.0]]


def test_page_that_changed_on_9_of_10_visits_comes_back_far_sooner() -> None:
    busy = [[60.0, 1.0]] * 9 + [[60.0, 0.0]]
    quiet = [[60.0, 0.0]] * 10
    assert _plan(busy) < 60.0
    assert _plan(quiet, previous=600.0) == 1200.0  # doubling from the last interval
    assert _plan(quiet, previous=3000.0) == POLICY.max_interval_s


def test_copy_heavy_sites_wait_longer_and_important_pages_less() -> None:
    busy = [[600.0, 1.0], [600.0, 0.0]]
    plain = _plan(busy)
    assert _plan(busy, slowdown=4.0) == min(4 * plain, POLICY.max_interval_s)
    assert _plan(busy, importance=4.0) < plain


@given(
    st.lists(
        st.tuples(st.floats(0.01, 1e7, allow_nan=False), st.booleans()), min_size=0, max_size=40
    ),
    st.floats(1.0, 100.0),
)
def test_next_fetch_stays_within_the_policy_bounds(
    raw: list[tuple[float, bool]], importance: float
) -> None:
    visits: list[list[float]] = []
    for interval, changed in raw:
        visits = add_visit(visits, interval, changed, keep=16)
    wait = _plan(visits, importance=importance)
    assert POLICY.min_interval_s <= wait <= POLICY.max_interval_s
