"""The render step's state in the crawl's SQLite database (issue 18): what the render policy
learnt of a site survives a restart (it is kept in the site's host record, written at the
crawl's checkpoints), and the render queue stays within `[render] max_queued`."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from trawl.config import Settings, with_overrides
from trawl.loop.crawler import Crawler
from trawl.model import CrawlUrl, Line, PageRecord
from trawl.parse.page_work import PageInput, process_page
from trawl.urls.normalise import url_hash
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.loop.context import CrawlContext

SITE = "app.test"


def _context(data: Path, **render: object) -> CrawlContext:
    settings = with_overrides(
        Settings(), crawl={"contact_url": "https://trawl.invalid/t"}, render=render
    )
    ctx = build_context(settings, data)
    assert ctx.render is not None, "rendering is off: is Debian's chromium on the PATH?"
    return ctx


def test_an_unproductive_site_is_still_known_as_one_after_a_restart(tmp_path: Path) -> None:
    first = _context(tmp_path)
    book = first.render.book if first.render else None
    assert book is not None
    first.sites.state(SITE)
    for _ in range(book.rules.learn_after):
        book.note_plain_page(SITE)
        book.note_render(SITE, text_gained_chars=0, links_gained=0)
    first.sites.mark_changed(SITE)
    assert book.is_unproductive(SITE)
    asyncio.run(first.durability.close())  # the final checkpoint writes changed host records

    again = _context(tmp_path)
    try:
        assert again.render is not None
        assert not again.render.book.is_unproductive(SITE)  # not loaded yet
        again.sites.state(SITE)
        assert again.render.book.is_unproductive(SITE)
        assert again.render.book.site_state(SITE) == book.site_state(SITE)
    finally:
        asyncio.run(again.durability.close())


SHELL = b'<!doctype html><html><body><div id="root"></div><script src="/app.js"></script></body>'


def test_the_render_queue_stops_growing_at_max_queued(tmp_path: Path) -> None:
    ctx = _context(tmp_path, max_queued=3, site_share=1.0, overall_min=100)
    try:
        renders = Crawler(ctx, watch_lag=False).renders
        assert renders is not None
        assert ctx.render is not None
        for n in range(5):
            url = f"http://app{n}.test/"
            item = CrawlUrl(url, url_hash(url), f"app{n}.test", 0, Line.FAST, 0.0)
            page = PageInput(url, 0.0, None, b"HTTP/1.1 200 OK\r\n\r\n", SHELL, False, (),
                             "trawl", True)  # fmt: skip
            out = process_page(page)
            assert out.render_reason is not None
            record = PageRecord(item.url_hash, url, 0.0, 200, storage_key=f"f.warc.gz:{n}:9",
                                warc_record_id=f"<urn:uuid:{n}>")  # fmt: skip
            renders.consider(item, record, out)
        assert ctx.render.queue.stats().queued == 3
        assert ctx.run.renders_waiting == 3
        assert ctx.stats.render_decisions == {"detected": 3, "queue_full": 2}
    finally:
        asyncio.run(ctx.durability.close())
