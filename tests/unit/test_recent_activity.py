"""Issue 14 (3): the progress line's rate and site count, as pure code on a fake clock."""

from __future__ import annotations

import pytest

from trawl.loop.recent_activity import RateWindow, RecentSites


def test_issue_14_a_steady_page_a_second_reads_one_per_second_every_tick() -> None:
    """One page a second, the line redrawn every 0.5 s: the last-tick rate flipped 0.0/2.0."""
    rates = RateWindow(window_s=10.0)
    pages, readings = 0, []
    for tick in range(1, 81):  # 40 s of ticks
        now = tick * 0.5
        if tick % 2 == 0:
            pages += 1  # the page lands on every other tick
        readings.append(rates.add(now, pages))
    settled = readings[20:]  # once a full window is behind us
    assert min(settled) >= 0.9
    assert max(settled) <= 1.1


def test_rate_follows_a_change_within_about_a_window() -> None:
    rates = RateWindow(window_s=10.0)
    assert rates.add(0.0, 0) == 0.0
    for tick in range(1, 41):
        rate = rates.add(tick * 0.5, tick * 5)  # 10 pages/s for 20 s
    assert rate == pytest.approx(10.0)
    for tick in range(41, 71):
        rate = rates.add(tick * 0.5, 200)  # then nothing for 15 s
    assert rate == 0.0


def test_issue_14_sites_count_those_fetched_from_lately_not_those_mid_turn() -> None:
    """47 pages/s over 12 sites: each turn lasts milliseconds, so a count of the sites
    holding a turn read 0; each was fetched from within the last second."""
    recent = RecentSites(window_s=10.0)
    now = 0.0
    for n in range(470):  # 10 s at 47 requests/s, round robin
        now = n / 47
        recent.note(f"site{n % 12}.test", now)
    assert recent.count(now) == 12
    recent.note("site0.test", now + 9.0)  # one site goes on, the others stop
    assert recent.count(now + 9.5) == 12
    assert recent.count(now + 10.5) == 1
    assert recent.count(now + 19.5) == 0
    assert "sites=0" in repr(recent)


def test_a_site_stays_while_its_latest_request_is_in_the_window() -> None:
    recent = RecentSites(window_s=10.0)
    recent.note("a.test", 1.0)
    recent.note("a.test", 8.0)
    assert recent.count(12.0) == 1  # the request at 1.0 left the window, the one at 8.0 not
    assert recent.count(18.0) == 0
