"""Issue 17: a page of thousands of links, or a sitemap of thousands of entries, neither
floods the queue nor holds the crawl loop.

Before: one 10 MB index page (~250,000 links) was queued in one step that held the crawl
loop for 3.7 s, and a 50,000-entry sitemap for 1.1 s (`python -m bench.big_pages`). Now a
page's links past `frontier.max_links_per_page` are counted as skipped (`page_links_cap`),
and both are queued in slices of `loop.slices.LINK_SLICE` with a turn of the event loop
between two slices.

Real parts: the crawl loop, the SQLite frontier and records, page work on threads, on a
virtual clock with a scripted fetcher. The intake is spied on: each call's batch size, and
whether the event loop ran other callbacks before the next call.
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import TYPE_CHECKING, Any

from tests.fakes.fetcher import Answer, ScriptedFetcher
from tests.loop.test_crawl_loop import robots, settings
from tests.loop.virtual_clock import VirtualClock

from trawl.config import with_overrides
from trawl.loop.crawler import Crawler
from trawl.loop.slices import LINK_SLICE
from trawl.loop.workers import WorkerPool
from trawl.parse.page_work import init_worker
from trawl.store.layout import DB_NAME
from trawl.wiring.embedded import build_context, normalise_rules
from trawl.wiring.seeds import add_seeds, normalise_seeds, seed_scopes

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.loop.context import CrawlContext

CAP = 1_200  # frontier.max_links_per_page here: 3 slices (500, 500, 200)
LINKS = 3_000  # on the home page, all distinct
SITEMAP_ENTRIES = 1_300
HOME = "http://big.test/"
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
MAX_TIME_S = 6.0  # virtual
HTML = (("Content-Type", "text/html; charset=utf-8"),)


def big_web() -> dict[str, Answer | list[Answer]]:
    links = "".join(f'<a href="/p/{i}">{i}</a>\n' for i in range(LINKS))
    entries = "".join(
        f"<url><loc>http://big.test/s/{i}</loc></url>" for i in range(SITEMAP_ENTRIES)
    )
    return {
        "http://big.test/robots.txt": robots(
            "User-agent: *\nAllow: /\nSitemap: http://big.test/sitemap.xml\n"
        ),
        HOME: Answer(200, HTML, f"<html><body>{links}</body></html>".encode()),
        "http://big.test/sitemap.xml": Answer(
            200,
            (("Content-Type", "application/xml"),),
            f'<?xml version="1.0"?><urlset xmlns="{SITEMAP_NS}">{entries}</urlset>'.encode(),
        ),
    }


class IntakeSpy:
    """Records each intake call: its kind, its size, and whether the event loop ran other
    callbacks since the call before it."""

    def __init__(self, ctx: CrawlContext) -> None:
        self.calls: list[tuple[str, int, bool]] = []  # (kind, items, loop turned before)
        self._ran: list[bool] = []  # a callback scheduled at call i has run
        intake = ctx.intake
        page_links, sitemap_entry = intake.add_page_links, intake.add_sitemap_entry

        def add_page_links(source: Any, links: Any) -> None:
            self._note("links", len(links))
            page_links(source, links)

        def add_sitemap_entry(*args: Any) -> bool:
            self._note("sitemap", 1)
            return sitemap_entry(*args)

        intake.add_page_links = add_page_links  # type: ignore[method-assign]
        intake.add_sitemap_entry = add_sitemap_entry  # type: ignore[method-assign]

    def _note(self, kind: str, items: int) -> None:
        self.calls.append((kind, items, bool(self._ran) and self._ran[-1]))
        self._ran.append(False)
        asyncio.get_running_loop().call_soon(self._ran.__setitem__, len(self._ran) - 1, True)

    def sitemap_slices(self) -> list[int]:
        """Entries a sitemap's intake took between two turns of the loop."""
        out: list[int] = []
        previous = ""
        for kind, _, turned in self.calls:
            if kind == "sitemap":
                if previous != "sitemap" or turned:
                    out.append(0)
                out[-1] += 1
            previous = kind
        return out


async def crawl(data_dir: Path, clock: VirtualClock) -> tuple[IntakeSpy, dict[str, int]]:
    # A few virtual seconds: robots.txt, the page and the sitemap, a page or two of what
    # they queued; the queue is what they left.
    s = with_overrides(
        settings(), frontier={"max_links_per_page": CAP}, crawl={"max_time_s": MAX_TIME_S}
    )
    rules = normalise_rules(s)
    pool = WorkerPool(lambda: clock.executor(2, initializer=init_worker, initargs=(rules,)))
    fetcher = ScriptedFetcher(big_web(), clock=clock, hosts={"big.test": "198.51.100.9"})
    ctx = build_context(s, data_dir, clock, fetcher=fetcher, cpu_pool=pool)
    spy = IntakeSpy(ctx)
    try:
        add_seeds(ctx, seed_scopes(s, normalise_seeds([(HOME, "seed")], rules), rules))
        await Crawler(ctx, watch_lag=False).run()
    finally:
        await ctx.durability.close()
    return spy, dict(ctx.stats.skipped)


def queued_paths(data_dir: Path) -> set[str]:
    conn = sqlite3.connect(data_dir / DB_NAME)
    try:
        rows = conn.execute("SELECT url FROM queue").fetchall()
    finally:
        conn.close()
    return {url.removeprefix("http://big.test") for (url,) in rows}


def test_issue_17_a_page_keeps_its_first_links_and_counts_the_rest(tmp_path: Path) -> None:
    clock = VirtualClock()
    _, skipped = asyncio.run(clock.run(crawl(tmp_path, clock)))
    queued = queued_paths(tmp_path)
    page_links = {p for p in queued if p.startswith("/p/")}
    # The first CAP distinct hrefs in document order, less the few fetched already.
    first = {f"/p/{i}" for i in range(CAP)}
    assert page_links <= first
    assert len(first - page_links) <= MAX_TIME_S
    assert skipped["page_links_cap"] == LINKS - CAP
    # The sitemap's entries are not a page's links: all of them were taken.
    assert len({p for p in queued if p.startswith("/s/")}) >= SITEMAP_ENTRIES - MAX_TIME_S


def test_issue_17_long_intakes_come_in_slices_with_the_loop_turning_between(
    tmp_path: Path,
) -> None:
    clock = VirtualClock()
    spy, _ = asyncio.run(clock.run(crawl(tmp_path, clock)))
    links = [(n, turned) for kind, n, turned in spy.calls if kind == "links" and n > 1]
    assert [n for n, _ in links] == [LINK_SLICE, LINK_SLICE, CAP - 2 * LINK_SLICE]
    # Before each slice after the first, other callbacks ran (timers, responses, the API).
    assert all(turned for _, turned in links[1:])
    slices = spy.sitemap_slices()
    assert sum(slices) == SITEMAP_ENTRIES
    assert max(slices) <= LINK_SLICE
    assert len(slices) == -(-SITEMAP_ENTRIES // LINK_SLICE)
