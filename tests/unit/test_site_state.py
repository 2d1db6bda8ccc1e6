from __future__ import annotations

import pytest

from trawl.errors import DataError
from trawl.politeness.robots import robots_from_response
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
