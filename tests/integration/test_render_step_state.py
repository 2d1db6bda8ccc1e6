"""What the render policy learnt of a site survives a restart (issue 18): it is kept in the
site's host record in the crawl's SQLite database, written at the crawl's checkpoints."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from trawl.config import Settings, with_overrides
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.loop.context import CrawlContext

SITE = "app.test"


def _context(data: Path) -> CrawlContext:
    settings = with_overrides(Settings(), crawl={"contact_url": "https://trawl.invalid/t"})
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
