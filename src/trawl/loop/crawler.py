"""The crawl loop: lease → fetch → store + event → parse → normalise → seen → enqueue.

A dispatcher pops sites whose clock allows a request (frontier.site_schedule) and runs one
*site turn* per popped site: robots.txt first if the origin has no fresh rules, otherwise
one leased URL. The site is released as soon as its request ends; storing and parsing
continue after that, in a worker process. See docs/ARCHITECTURE.md for the numbered loop.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from trawl.loop.content import StoredContent
from trawl.loop.outcomes import PageOutcomes
from trawl.loop.requests import SiteRequests
from trawl.loop.sitemaps import Sitemaps

if TYPE_CHECKING:
    from trawl.loop.context import CrawlContext
    from trawl.model import Line


class Crawler:
    def __init__(self, ctx: CrawlContext) -> None:
        self.ctx = ctx
        sitemaps = Sitemaps(ctx)
        content = StoredContent(ctx)
        self.requests = SiteRequests(ctx, sitemaps, content)
        self.outcomes = PageOutcomes(ctx, sitemaps, content)
        self._turns = asyncio.Semaphore(ctx.settings.crawl.concurrency)
        self._wakeup = asyncio.Event()

    async def run(self) -> None:
        """Crawl until max pages, max time, an empty frontier or `stop()`."""
        ctx = self.ctx
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(ctx.commit_loop())
            while not ctx.should_stop():
                await self._turns.acquire()
                turn = ctx.take_site()
                if turn is None:
                    self._turns.release()
                    if ctx.is_finished():
                        break
                    await self._wait_for_work()
                    continue
                tasks.create_task(self._site_turn(*turn))
            ctx.request_stop()

    async def _site_turn(self, site: str, line: Line) -> None:
        """1-2: choose the site's next request and make it; 3-7 run after release."""
        ctx = self.ctx
        ctx.in_flight += 1
        ctx.in_turn[site] += 1
        released = False
        try:
            lease = await self.requests.take_turn(site, line)
            if lease is not None:
                previous = ctx.previous_record(lease.item)
                result = await self.requests.fetch_page(lease, previous)
                ctx.release_site(site)
                released = True
                await self.outcomes.handle(lease, result, previous)
        finally:
            # Only this turn's own hold: once released, the site may already belong to the
            # next turn, which an outcome taking longer than the site's gap must not free.
            if not released:
                ctx.release_site(site)
            ctx.in_flight -= 1
            ctx.in_turn[site] -= 1
            if not ctx.in_turn[site]:
                del ctx.in_turn[site]
            self._turns.release()
            self._wakeup.set()

    async def _wait_for_work(self) -> None:
        ctx = self.ctx
        ready_at = ctx.frontier.next_ready_at()
        delay = 0.5 if ready_at is None else max(0.0, min(0.5, ready_at - ctx.clock.now()))
        self._wakeup.clear()
        await ctx.clock.wait_for(self._wakeup, delay)
