from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from trawl.api.site_ranking import (
    busiest,
    most_troubled,
    parse_recent_error,
    recent_errors,
    site_condition,
    site_row,
)
from trawl.politeness.site_clock import ClockPolicy, FetchOutcome
from trawl.politeness.site_state import SiteState

NOW = 86400.0 * 20000 + 3600.0  # an hour into an epoch day
POLICY = ClockPolicy(park_after_failures=3, park_s=600.0)


def site(name: str, pages: int = 0, failures: int = 0, ok_after: bool = False) -> SiteState:
    state = SiteState(name)
    for _ in range(pages):
        state.count_page(NOW - 60)
    t = NOW - 100.0
    outcomes = [FetchOutcome.SERVER_ERROR] * failures + [FetchOutcome.OK] * ok_after
    for outcome in outcomes:
        state.clock.next_allowed_at = t  # the test drives the clock, not its gaps
        state.clock.parked_until = None
        state.clock.start(t)
        state.clock.finish(t + 0.1, 0.1, outcome, policy=POLICY)
        t += 1.0
    return state


def no_queue(site: str) -> int:
    return 0


def test_busiest_ranks_by_pages_today_then_queue_and_leaves_out_idle_sites() -> None:
    sites = [site("a.test", 2), site("b.test", 5), site("c.test", 2), site("idle.test")]
    queues = {"c.test": 7, "a.test": 1}
    rows = busiest(sites, NOW, lambda s: queues.get(s, 0), limit=10)
    assert [r["host"] for r in rows] == ["b.test", "c.test", "a.test"]
    assert rows[1]["queueLength"] == 7
    assert [r["host"] for r in busiest(sites, NOW, no_queue, limit=1)] == ["b.test"]


def test_yesterdays_pages_do_not_make_a_site_busy() -> None:
    assert busiest([site("a.test", 3)], NOW + 86400.0, no_queue, limit=5) == []


def test_most_troubled_puts_parked_sites_first_and_skips_healthy_ones() -> None:
    sites = [
        site("healthy.test", 4),
        site("recovered.test", failures=2, ok_after=True),
        site("failing.test", failures=2),
        site("parked.test", failures=3),
    ]
    rows = most_troubled(sites, NOW, no_queue, limit=10)
    assert [r["host"] for r in rows] == ["parked.test", "failing.test", "recovered.test"]
    assert [r["state"] for r in rows] == ["parked", "backingOff", "ok"]
    assert rows[0]["parkedUntil"] is not None


def test_a_site_whose_parking_ran_out_without_failures_is_not_troubled() -> None:
    state = site("quiet.test")
    state.clock.parked_until = NOW - 1.0
    assert most_troubled([state], NOW, no_queue, limit=10) == []
    state.clock.parked_until = NOW + 1.0
    assert [r["state"] for r in most_troubled([state], NOW, no_queue, limit=10)] == ["parked"]


@given(
    st.lists(
        st.tuples(
            st.integers(0, 4),  # failures in a row
            st.booleans(),  # a success after them
            st.sampled_from([None, NOW - 5.0, NOW + 5.0]),  # parked until
        ),
        max_size=12,
    ),
    st.integers(1, 6),
)
def test_most_troubled_ranks_as_the_clocks_stats_say(
    shapes: list[tuple[int, bool, float | None]], limit: int
) -> None:
    sites = []
    for i, (failures, ok_after, parked_until) in enumerate(shapes):
        state = site(f"s{i}.test", failures=failures, ok_after=ok_after)
        state.clock.parked_until = parked_until
        sites.append(state)

    def trouble(state: SiteState) -> tuple[bool, int, int]:  # from a stats copy, as before
        c = state.clock.stats()
        parked = c.parked_until is not None and c.parked_until > NOW
        return parked, c.consecutive_failures, c.error_count

    troubled = [s for s in sites if any(trouble(s))]
    expected = sorted(troubled, key=trouble, reverse=True)[:limit]  # stable, as nlargest
    rows = most_troubled(sites, NOW, no_queue, limit=limit)
    assert [r["host"] for r in rows] == [s.site for s in expected]


def test_recent_errors_are_newest_first_across_sites_and_skip_damaged_entries() -> None:
    a, b = SiteState("a.test"), SiteState("b.test")
    a.note_error(10.0, "http://a.test/1", "timeout")
    b.note_error(30.0, "http://b.test/x y", "503")
    a.note_error(20.0, "http://a.test/2", "reset")
    b.recent_errors += ["garbage", "nan kind http://b.test/", "12 no-url"]
    rows = recent_errors([a, b], limit=2)
    assert rows == [
        {"at": 30.0, "host": "b.test", "kind": "503", "url": "http://b.test/x y"},
        {"at": 20.0, "host": "a.test", "kind": "reset", "url": "http://a.test/2"},
    ]


def test_parse_recent_error() -> None:
    parsed = parse_recent_error("12.5 timeout http://a.test/ b")
    assert parsed == (12.5, "timeout", "http://a.test/ b")
    for damaged in ("", "12.5 timeout", "x timeout http://a.test/", "inf dns http://a.test/"):
        assert parse_recent_error(damaged) is None


def test_site_row_names_the_last_error() -> None:
    state = site("a.test", 1)
    state.note_error(NOW - 5, "http://a.test/z", "dns")
    row = site_row(state, NOW, 4)
    assert row["lastError"] == {"at": NOW - 5, "kind": "dns", "url": "http://a.test/z"}
    assert (row["pagesToday"], row["queueLength"], row["state"]) == (1, 4, "ok")


def test_site_condition_shows_a_request_in_flight() -> None:
    state = SiteState("a.test")
    state.clock.start(NOW)
    assert site_condition(state.clock.stats(), NOW) == "fetching"
