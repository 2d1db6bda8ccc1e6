"""The crawl loop: lease → fetch → store + event → parse → normalise → seen → enqueue.

A dispatcher pops sites whose clock allows a request (frontier.site_schedule) and runs one
*site turn* per popped site: robots.txt first if the origin has no fresh rules, otherwise
one leased URL. The site is released as soon as its request ends; storing and parsing
continue after that, in a worker process. See docs/ARCHITECTURE.md for the numbered loop.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from trawl.errors import StoreUnavailable
from trawl.loop import idle_sites, lag
from trawl.loop.content import StoredContent
from trawl.loop.outcomes import PageOutcomes
from trawl.loop.render_fetches import RenderFetches
from trawl.loop.renders import Renders
from trawl.loop.requests import NotSent, SiteRequests
from trawl.loop.sitemaps import Sitemaps
from trawl.model import Line

if TYPE_CHECKING:
    from trawl.loop.context import CrawlContext
    from trawl.model import CrawlUrl, PageRecord

log = logging.getLogger(__name__)


# Pages fetched and waiting for the worker processes at most before a new turn starts: at
# 200-400 pages/s a few tenths of a second of work. Without it a CPU-bound crawl fills every
# turn with pages waiting seconds to be worked out (stale by then, and a node's stop waits
# for them all before it can hand its partitions over).
PAGE_BACKLOG = 128


class Crawler:
    """`watch_lag=False` for a virtual clock: the lag watch sleeps on real time."""

    def __init__(self, ctx: CrawlContext, *, watch_lag: bool = True) -> None:
        self.ctx = ctx
        self._watch_lag = watch_lag
        self._admission = lag.AdmissionGate(ctx.stats.loop_lag)
        sitemaps = Sitemaps(ctx)
        content = StoredContent(ctx)
        self.requests = SiteRequests(ctx, sitemaps, content)
        self.renders = None
        if ctx.render is not None:
            fetches = RenderFetches(
                ctx,
                self.requests,
                content,
                max_body_bytes=ctx.render.settings.max_subresource_bytes,
            )
            self.renders = Renders(ctx, ctx.render, fetches, content)
        self.outcomes = PageOutcomes(ctx, sitemaps, content, self.renders)
        self._turns = asyncio.Semaphore(ctx.policy.concurrency)
        self._wakeup = asyncio.Event()

    async def run(self) -> None:
        """Crawl until max pages, max time, an empty frontier or `stop()`."""
        run = self.ctx.run
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self.ctx.durability.commit_loop())
            tasks.create_task(idle_sites.sweep_loop(self.ctx))
            if self.renders is not None:
                tasks.create_task(self.renders.run())
            if self._watch_lag:
                tasks.create_task(lag.watch(self.ctx.stats.loop_lag, run.stopped))
            if run.time_left() is not None:
                tasks.create_task(self._end_at_time_limit())
            while not run.should_stop():
                await self._admission.wait(run.should_stop)
                await self.ctx.page_workers.wait_below(PAGE_BACKLOG)
                await self._turns.acquire()
                if run.should_stop():  # it came while this waited for a turn slot
                    self._turns.release()
                    break
                self.ctx.inbox.drain()
                turn = run.take_site()
                if turn is None:
                    self._turns.release()
                    if run.is_finished():
                        break
                    await self._wait_for_work()
                    continue
                tasks.create_task(self._site_turn(*turn))
            run.request_stop()

    async def _end_at_time_limit(self) -> None:
        """At the time limit the crawl stops and sends no new request: turns still waiting
        for their IP's gap give up, their URLs back in line. `--max-time 20` had run 172 s
        when 5,000 new sites on one address each waited there for a robots.txt turn."""
        run = self.ctx.run
        if not await run.wait_stopped_for(run.time_left() or 0.0):
            run.interrupt()
            self._wakeup.set()

    async def _site_turn(self, site: str, line: Line) -> None:
        """1-2: choose the site's next request and make it; 3-7 run after release."""
        run = self.ctx.run
        run.turns += 1
        run.begin_work(site)
        released = False
        try:
            try:
                lease = await self.requests.take_turn(site, line)
            except StoreUnavailable as exc:
                # A host record could not be read: the site's (its first turn, or back in
                # memory: loop.idle_sites), or that of the site its robots.txt redirects to
                # (RunState.hold_site). Its URLs stay queued; its robots.txt, if asked, is
                # asked again at its next turn.
                log.warning("%s: turn skipped, a host record unreadable: %s", site, exc)
                return
            if lease is not None:
                try:
                    previous = self._previous_record(lease.item)
                    result = await self.requests.fetch_page(lease, previous)
                except (NotSent, StoreUnavailable):
                    self.ctx.frontier.put_back(lease)  # no attempt, no outcome
                    return
                self.ctx.inbox.drain()  # the API's calls, between steps (loop.inbox)
                run.release_site(site)
                released = True
                try:
                    await self.outcomes.handle(lease, result, previous)
                except StoreUnavailable as exc:
                    # A cluster's shared store went away mid-outcome: nothing of it is
                    # committed (its record comes last), so the page is fetched again
                    # once the store is back (fetches pause meanwhile).
                    log.warning(
                        "%s: outcome not kept, fetched again later: %s", lease.item.url, exc
                    )
                    self.ctx.frontier.put_back(lease)
        finally:
            # Only this turn's own hold: once released, the site may already belong to the
            # next turn, which an outcome taking longer than the site's gap must not free.
            if not released:
                run.release_site(site)
            run.turns -= 1
            run.end_work(site)
            self._turns.release()
            self._wakeup.set()

    def _previous_record(self, item: CrawlUrl) -> PageRecord | None:
        """The page's record before this fetch, for a refetch (conditional GET, history)."""
        return self.ctx.records.get_page(item.url_hash) if item.line is Line.REFRESH else None

    async def _wait_for_work(self) -> None:
        ctx = self.ctx
        ready_at = ctx.frontier.next_ready_at()
        delay = 0.5 if ready_at is None else max(0.0, min(0.5, ready_at - ctx.clock.now()))
        self._wakeup.clear()
        await ctx.clock.wait_for(self._wakeup, delay)
