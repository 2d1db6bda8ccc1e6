"""Issue 15's suspected bug, through the crawl's real context as a node wires it: an
operator's override applied after a partition take-over must keep the full politeness gap
from the take-over (`restarted_at(site)`), as `site_state` does when it loads the site.

Before issue 15's split, `CrawlContext.set_site_limits` passed the node's start instead
(`started_at if resumed`), so the override moved the site's next request back to a gap after
its previous owner's last *recorded* exchange: too early when that owner fetched again
before it let the partition go (this test failed with 1092.0 != 1102.0). SiteBook.set_limits
now asks the placement's `restarted_at(site)`. The pure core's half is
tests/unit/test_override_restart_gap.py.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tests.fakes.cluster import FreeIpSlots, never_cut

from trawl.cluster.link_router import LinkBuffers
from trawl.cluster.partition_table import PartitionTable
from trawl.cluster.placement import NodePlacement
from trawl.cluster.redis_links import START
from trawl.config import Settings, with_overrides
from trawl.politeness.site_limits import SiteLimits
from trawl.politeness.site_state import SiteState
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.loop.context import CrawlContext

N = 8
SITE = "a.test"
GAP_S = 2.0
NODE_STARTED_AT = 1000.0
LAST_RECORDED_AT = 1090.0  # the previous owner's last host record: an exchange ended then
TAKEN_OVER_AT = 1100.0


@dataclass
class StoppedClock:
    """Time stands still unless the test moves it (nothing here waits)."""

    t: float

    def now(self) -> float:
        return self.t

    async def sleep_until(self, at: float) -> None:
        raise AssertionError("nothing sleeps in this test")

    async def wait_for(self, event: asyncio.Event, timeout_s: float) -> bool:
        raise AssertionError("nothing waits in this test")


class AllLeases:
    def may_fetch(self, partition: int) -> bool:
        return True


class NoCoordinator(FreeIpSlots):
    async def publish(self) -> bool:
        return True


def node_context(tmp_path: Path, clock: StoppedClock, table: PartitionTable) -> CrawlContext:
    """The context as cluster/wiring.py builds a node's (its placement passed in)."""
    settings = with_overrides(
        Settings(),
        crawl={"contact_url": "https://trawl.invalid/t"},
        politeness={"min_delay_s": GAP_S},
    )
    placement = NodePlacement(
        owner="n2", table=table, leases=AllLeases(), router=LinkBuffers(N, sent_capacity=100),
        publisher=NoCoordinator(), ip_slots=NoCoordinator(), cuts=never_cut(N),
    )  # fmt: skip
    return build_context(settings, tmp_path, clock, placement=placement)


def previous_owners_record() -> dict[str, object]:
    state = SiteState(SITE)
    state.clock.last_finished_at = LAST_RECORDED_AT
    state.clock.next_allowed_at = LAST_RECORDED_AT + GAP_S
    return state.to_host_record("n1")


def test_issue_15_an_override_after_a_take_over_keeps_the_take_over_gap(
    tmp_path: Path,
) -> None:
    clock = StoppedClock(NODE_STARTED_AT)
    table = PartitionTable(N, started_at=NODE_STARTED_AT)
    ctx = node_context(tmp_path, clock, table)
    try:
        ctx.records.put_host(SITE, previous_owners_record())
        ctx.records.commit()
        clock.t = TAKEN_OVER_AT
        table.load(table.partition_of(SITE), START, now=TAKEN_OVER_AT, wall_now=TAKEN_OVER_AT)
        loaded = ctx.sites.state(SITE).clock.next_allowed_at
        assert loaded == TAKEN_OVER_AT + GAP_S, "loading leaves a gap after the take-over"

        ctx.set_site_limits(SITE, SiteLimits(crawl_delay_s=GAP_S))  # the same gap, even
        assert ctx.sites.state(SITE).clock.next_allowed_at == TAKEN_OVER_AT + GAP_S
    finally:
        asyncio.run(ctx.durability.close())
