"""One turn at a time per site, even when a turn's outcome outlives the site's gap.

A turn releases its site as soon as its request ends and then handles the outcome (store,
parse). If that takes longer than the gap, the site's next turn has already begun; the first
turn's clean-up must not release the site again, or a third turn would start while the
second's request is in flight. (Seen in cluster mode under load: the site clock's guard
raised "politeness violated".) The crawl's real context on SQLite; the request and outcome
stages are stand-ins whose timing the test controls.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from trawl.config import Settings, with_overrides
from trawl.loop.crawler import Crawler
from trawl.model import CrawlUrl, FetchResult, Lease, Line
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from pathlib import Path

SITE = "a.test"


class Stages:
    """take_turn/fetch_page/handle stand-ins: each turn's outcome waits for its event."""

    def __init__(self) -> None:
        self.outcome_may_end: list[asyncio.Event] = []
        self.fetch_may_end = asyncio.Event()
        self.fetching = 0
        self.turns = 0

    async def take_turn(self, site: str, line: Line | None = None) -> Lease:
        self.turns += 1
        item = CrawlUrl(f"http://{site}/{self.turns}", f"{self.turns:032x}", site, 0, Line.FAST, 0)
        return Lease(self.turns, item, 1e12)

    async def fetch_page(self, lease: Lease, previous: object) -> FetchResult:
        self.fetching += 1
        try:
            if lease.lease_id > 1:
                await self.fetch_may_end.wait()
            return FetchResult(lease.item.url, 200, (), b"", started_at=0.0, elapsed_s=0.0)
        finally:
            self.fetching -= 1

    async def handle(self, lease: Lease, result: FetchResult, previous: object) -> None:
        event = asyncio.Event()
        self.outcome_may_end.append(event)
        await event.wait()


def test_a_slow_outcome_does_not_free_the_next_turns_site(tmp_path: Path) -> None:
    settings = with_overrides(Settings(), crawl={"contact_url": "https://trawl.invalid/t"})

    async def main() -> None:
        ctx = build_context(settings, tmp_path)
        try:
            for n in range(3):
                item = CrawlUrl(f"http://{SITE}/q{n}", f"{n + 100:032x}", SITE, 0, Line.FAST, 0)
                ctx.frontier.enqueue(item)
            ctx.sites.state(SITE).clock.next_allowed_at = 0.0
            crawler = Crawler(ctx)
            stages = Stages()
            crawler.requests = stages  # type: ignore[assignment]
            crawler.outcomes = stages  # type: ignore[assignment]

            first = asyncio.create_task(crawler._site_turn(*ctx.run.take_site()))  # type: ignore[misc]
            while not stages.outcome_may_end:  # noqa: ASYNC110 - turn 1 fetched and stores
                await asyncio.sleep(0)
            ctx.sites.state(SITE).clock.next_allowed_at = 0.0  # its gap has passed
            second = asyncio.create_task(crawler._site_turn(*ctx.run.take_site()))  # type: ignore[misc]
            while not stages.fetching:  # noqa: ASYNC110 - turn 2 is fetching
                await asyncio.sleep(0)
            stages.outcome_may_end[0].set()
            await first  # turn 1 ends while turn 2 is still fetching
            assert ctx.run.take_site() is None, "the site was handed out during turn 2's request"
            stages.fetch_may_end.set()
            while len(stages.outcome_may_end) < 2:  # noqa: ASYNC110
                await asyncio.sleep(0)
            stages.outcome_may_end[1].set()
            await second
        finally:
            await ctx.durability.close()

    async def bounded() -> None:
        async with asyncio.timeout(20):  # a wait that never ends is a failure, not a hang
            await main()

    asyncio.run(bounded())
