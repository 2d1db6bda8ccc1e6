from __future__ import annotations

import pytest

from trawl.errors import DataError
from trawl.politeness.origin_health import OriginFailure
from trawl.politeness.robots import robots_from_response
from trawl.politeness.site_clock import ClockPolicy, FetchOutcome
from trawl.politeness.site_limits import SiteLimits
from trawl.politeness.site_state import SiteState


def test_host_record_has_the_design_fields_and_round_trips() -> None:
    state = SiteState("example.com")
    rules = robots_from_response(
        "https://www.example.com", 200, b"User-agent: *\nCrawl-delay: 3\n", 100.0
    )
    state.set_robots(rules, "trawl")
    state.count_page(100.0)
    state.note_error(101.0, "https://www.example.com/x", "timeout")
    record = state.to_host_record("machine-1")
    for key in (
        "host", "nextAllowedAt", "crawlDelay", "robotsRules", "robotsFetchedAt",
        "errorCount", "avgResponseMs", "pagesToday", "ownerMachine",
    ):  # fmt: skip
        assert key in record
    assert record["crawlDelay"] == 3.0
    assert record["pagesToday"] == 1
    again = SiteState.from_host_record(record)
    assert again.to_host_record("machine-1") == record


def test_crawl_delay_is_the_largest_of_the_sites_origins() -> None:
    state = SiteState("example.com")
    state.set_robots(
        robots_from_response("http://a.example.com", 200, b"User-agent: *\nCrawl-delay: 2", 0),
        "trawl",
    )
    state.set_robots(
        robots_from_response("http://b.example.com", 200, b"User-agent: *\nCrawl-delay: 5", 0),
        "trawl",
    )
    assert state.clock.crawl_delay_s == 5.0


def test_pages_today_resets_on_a_new_day() -> None:
    state = SiteState("example.com")
    state.count_page(10.0)
    state.count_page(20.0)
    state.count_page(86400.0 + 5)
    assert state.pages_today == 1


def test_damaged_host_record_names_the_site() -> None:
    with pytest.raises(DataError, match=r"example\.com"):
        SiteState.from_host_record({"host": "example.com", "clock": "nonsense"})


IDLE_S = 600.0
POLICY = ClockPolicy(min_delay_s=1.0, park_after_failures=2, park_s=7_200.0)


def finished(state: SiteState, at: float, outcome: FetchOutcome = FetchOutcome.OK) -> None:
    state.clock.start(at)
    state.clock.finish(at, 0.1, outcome, policy=POLICY)


def test_a_site_is_idle_once_unused_for_idle_s() -> None:
    state = SiteState("a.test", loaded_at=100.0)
    assert not state.is_idle(699.0, IDLE_S)  # loaded, never fetched: counts from the load
    assert state.is_idle(700.0, IDLE_S)
    finished(state, 650.0)
    assert not state.is_idle(1_249.0, IDLE_S)
    assert state.is_idle(1_250.0, IDLE_S)


def test_a_request_in_flight_or_a_wait_still_running_keeps_a_site() -> None:
    state = SiteState("a.test")
    state.clock.start(100.0)
    assert not state.is_idle(10_000.0, IDLE_S)  # in flight
    state.clock.finish(100.0, 0.1, FetchOutcome.OK, policy=POLICY, retry_after_s=3_600.0)
    assert not state.is_idle(3_699.0, IDLE_S)  # Retry-After still running
    assert state.is_idle(3_700.0, IDLE_S)


def test_a_parked_site_stays_while_parked() -> None:
    state = SiteState("dead.test")
    finished(state, 100.0, FetchOutcome.NETWORK_ERROR)
    finished(state, state.clock.next_allowed_at, FetchOutcome.NETWORK_ERROR)
    parked_until = state.clock.parked_until
    assert parked_until is not None
    state.clock.next_allowed_at = 0.0  # the park alone holds it
    assert not state.is_idle(parked_until - 1, IDLE_S)
    assert state.is_idle(parked_until, IDLE_S)


def test_a_paused_site_stays() -> None:
    paused = SiteState("p.test")
    paused.set_limits(SiteLimits(paused=True), POLICY)
    assert not paused.is_idle(10_000.0, IDLE_S)  # the API counts paused sites from memory


def test_a_failing_origin_keeps_a_site_while_its_hold_runs_and_leaves_with_it() -> None:
    failing = SiteState("f.test")
    failing.origins.failing = {"http://www.f.test": OriginFailure(2, 10_000.0)}
    assert not failing.is_idle(9_999.0, IDLE_S)  # its hold still runs
    assert failing.is_idle(10_000.0, IDLE_S)
    # The failures leave with the site and come back with it: the next one doubles on.
    again = SiteState.from_host_record(failing.to_host_record("machine-1"))
    assert again.origins.failing == {"http://www.f.test": OriginFailure(2, 10_000.0)}


def test_a_host_record_from_before_origins_reads_as_no_failures() -> None:
    record = SiteState("old.test").to_host_record("machine-1")
    del record["origins"]
    assert SiteState.from_host_record(record).origins.failing is None


def test_damaged_origins_in_a_host_record_name_the_site() -> None:
    record = SiteState("example.com").to_host_record("machine-1")
    record["origins"] = {"failing": {"http://example.com": {"failures": "x"}}}
    with pytest.raises(DataError, match=r"example\.com.*origins"):
        SiteState.from_host_record(record)


def test_the_main_text_window_hint_survives_the_host_record() -> None:
    state = SiteState("example.com")
    state.main_text_window = 6_144
    record = state.to_host_record("m1")
    assert SiteState.from_host_record(record).main_text_window == 6_144
    # Records from before the hint, and damaged hints, read as none; the rest still loads.
    del record["mainTextWindow"]
    assert SiteState.from_host_record(record).main_text_window == 0
    for damaged in ("6144", -1, True, 1 << 40, 2.5, None):
        again = SiteState.from_host_record({**record, "mainTextWindow": damaged})
        assert again.main_text_window == 0
        assert again.site == "example.com"
