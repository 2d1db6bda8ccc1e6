"""Idle sites leave memory: every site a page links to gets a `SiteState` (its referrers are
counted), so a broad crawl that meets a few new sites a second grew by gigabytes a day.

Every `sweep_interval_s(idle_s)` the loaded sites are walked in slices, the loop turning
between them, and those idle for `LoopPolicy.site_idle_s` and not busy leave (SiteBook
`forget_idle`: host record written first, read back when next needed). Busy: a turn or a
request holds the site, a page of it waits for the browser (its render still changes the
site's state), or (cluster mode) the node's hold on its partition is in doubt. Politeness
loses nothing: the site clock is in the host record whole, and a site with a wait still
running stays (`SiteState.is_idle`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trawl.loop.slices import in_slices

if TYPE_CHECKING:
    from collections.abc import Sequence

    from trawl.loop.context import CrawlContext

# Sites checked between two turns of the loop: ~0.3 ms of checks, or up to ~16 ms when
# every one of them leaves (~80 us each, its host record written: bench.site_memory).
SWEEP_SLICE = 200


def sweep_interval_s(idle_s: float) -> float:
    """A site leaves between `idle_s` and 1.25 times `idle_s` after its last use."""
    return idle_s / 4


async def forget_idle_sites(ctx: CrawlContext) -> int:
    """One sweep; returns the sites dropped."""
    sites, clock, idle_s = ctx.sites, ctx.clock, ctx.policy.site_idle_s
    frontier, working, placement = ctx.frontier, ctx.run.working, ctx.placement
    # Read once: a page queued for the browser during the sweep was fetched just now.
    rendering = ctx.render.queue.sites() if ctx.render is not None else frozenset()

    def busy(site: str) -> bool:
        # A cluster node whose hold on the site is in doubt (a hand-over, a lease unsure)
        # writes no host record of it: the partition's next owner may be writing it.
        return (
            working[site] > 0
            or frontier.is_held(site)
            or site in rendering
            or not placement.may_fetch(site)
        )

    forgotten = 0

    def take(names: Sequence[str]) -> None:
        nonlocal forgotten
        forgotten += sites.forget_idle(names, clock.now(), idle_s, busy)

    await in_slices(list(sites), take, SWEEP_SLICE)
    ctx.stats.sites_forgotten += forgotten
    return forgotten


async def sweep_loop(ctx: CrawlContext) -> None:
    """Sweep until the crawl stops."""
    interval_s = sweep_interval_s(ctx.policy.site_idle_s)
    while not await ctx.run.wait_stopped_for(interval_s):
        await forget_idle_sites(ctx)
