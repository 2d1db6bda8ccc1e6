"""Issue 15's suspected bug, decided at the pure core: an operator's override re-times a
site's gap from the restart time its caller passes (`SiteState.set_limits`).

Cluster mode: loading a site leaves a full gap after the partition's take-over (the
placement's `restarted_at(site)`, `PartitionTable.restarted_at`). Before issue 15's split,
`CrawlContext.set_site_limits` passed `started_at if resumed else None` instead — the node's
start — and lost it; `SiteBook.set_limits` now passes `restarted_at(site)`. These tests show
that the restart time passed decides whether the take-over gap survives the override; the
check through a node's real context is tests/integration/test_cluster_override_gap.py.
"""

from __future__ import annotations

from trawl.politeness.site_clock import ClockPolicy
from trawl.politeness.site_limits import SiteLimits
from trawl.politeness.site_state import SiteState

POLICY = ClockPolicy(min_delay_s=2.0)
NODE_STARTED_AT = 1000.0
TAKEN_OVER_AT = 1100.0  # the partition's previous owner may have fetched until then
LAST_RECORDED_AT = 1090.0  # its last host record: an exchange ended then


def taken_over_site() -> SiteState:
    """The site as `site_state` loads it after the take-over: its previous owner's clock,
    then the restart gap from the take-over."""
    state = SiteState("example.com")
    state.clock.last_finished_at = LAST_RECORDED_AT
    state.clock.next_allowed_at = LAST_RECORDED_AT + state.clock.gap_s(POLICY)
    restart_gap = TAKEN_OVER_AT + state.clock.gap_s(POLICY)
    state.clock.next_allowed_at = max(state.clock.next_allowed_at, restart_gap)
    return state


def test_issue_15_an_override_given_the_take_over_time_keeps_the_take_over_gap() -> None:
    state = taken_over_site()
    assert state.clock.next_allowed_at == TAKEN_OVER_AT + 2.0
    state.set_limits(SiteLimits(crawl_delay_s=2.0), POLICY, restarted_at=TAKEN_OVER_AT)
    assert state.clock.next_allowed_at == TAKEN_OVER_AT + 2.0


def test_issue_15_an_override_given_the_node_start_loses_the_take_over_gap() -> None:
    # What a node's CrawlContext.set_site_limits passed before issue 15: the next request may go
    # 2 s after the previous owner's last *recorded* exchange, less than a gap after one
    # it may have made later, before it let the partition go.
    state = taken_over_site()
    state.set_limits(SiteLimits(crawl_delay_s=2.0), POLICY, restarted_at=NODE_STARTED_AT)
    assert state.clock.next_allowed_at == LAST_RECORDED_AT + 2.0
    assert state.clock.next_allowed_at < TAKEN_OVER_AT + 2.0


def test_issue_15_removing_an_override_loses_it_the_same_way() -> None:
    state = taken_over_site()
    state.set_limits(None, POLICY, restarted_at=NODE_STARTED_AT)
    assert state.clock.next_allowed_at == LAST_RECORDED_AT + 2.0
    state = taken_over_site()
    state.set_limits(None, POLICY, restarted_at=TAKEN_OVER_AT)
    assert state.clock.next_allowed_at == TAKEN_OVER_AT + 2.0
