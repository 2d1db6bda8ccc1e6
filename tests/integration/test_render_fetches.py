"""The browser's requests go out under the rules of every fetch (loop/render_fetches.py,
issue 18): robots.txt first and obeyed, one request at a time per site, the site's gap,
and each answer archived. The crawl's real context against the test web over loopback;
the test web's request log is the witness."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from trawl.config import Settings, with_overrides
from trawl.loop.crawler import Crawler
from trawl.loop.render_fetches import RenderFetches
from trawl.store.layout import WARC_DIR
from trawl.store.warc import iter_records
from trawl.testweb.politeness import check_politeness
from trawl.testweb.process import TestWebProcess
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from trawl.loop.context import CrawlContext

HOST = "www.site0001.test"  # robots.txt: Disallow: /private/


@pytest.fixture(scope="module")
def web() -> Iterator[TestWebProcess]:
    with TestWebProcess(sites=4, pages=6) as proc:
        yield proc


def _fetches(web: TestWebProcess, data: Path) -> tuple[RenderFetches, CrawlContext]:
    settings = with_overrides(
        Settings(),
        crawl={"contact_url": "https://trawl.invalid/test"},
        network={"hosts_file": str(web.hosts_file)},
    )
    ctx = build_context(settings, data)
    crawler = Crawler(ctx, watch_lag=False)
    fetches = RenderFetches(ctx, crawler.requests, crawler.requests.content, max_body_bytes=1 << 20)
    return fetches, ctx


def test_the_browsers_requests_keep_every_politeness_rule(
    web: TestWebProcess, tmp_path: Path
) -> None:
    base = f"http://{HOST}:{web.port}"
    paths = ["/", "/about.html", "/private/secret.js", "/missing.js"]
    before = len(web.requests())

    async def main() -> list[object]:
        fetches, ctx = _fetches(web, tmp_path)
        try:
            deadline = ctx.clock.now() + 30
            return await asyncio.gather(*(fetches.fetch(base + p, deadline) for p in paths))
        finally:
            await ctx.durability.close()

    answers = asyncio.run(main())
    statuses = [getattr(a, "status", None) for a in answers]
    assert statuses == [200, 200, None, 404]
    log = [r for r in web.requests()[before:] if r.host == HOST]
    assert log[0].path == "/robots.txt"
    assert sorted(r.path for r in log[1:]) == ["/", "/about.html", "/missing.js"]
    assert check_politeness(log, **web.web.politeness_inputs()) == []
    archived = {
        stored.target_uri
        for warc in (tmp_path / WARC_DIR).glob("*.warc.gz")
        for _, _, stored in iter_records(warc)
    }
    assert {base + "/", base + "/about.html", base + "/missing.js"} <= archived


def test_a_request_the_site_clock_cannot_allow_before_the_deadline_is_not_made(
    web: TestWebProcess, tmp_path: Path
) -> None:
    base = f"http://{HOST}:{web.port}"

    async def main() -> tuple[object, object, dict[str, int]]:
        fetches, ctx = _fetches(web, tmp_path)
        try:
            now = ctx.clock.now()
            first = await fetches.fetch(base + "/", now + 30)  # robots.txt, then the page
            soon = ctx.clock.now() + 0.2
            second = await fetches.fetch(base + "/about.html", soon)  # the gap is 1 s
            return first, second, dict(ctx.stats.render_requests)
        finally:
            await ctx.durability.close()

    before = len(web.requests())
    first, second, counts = asyncio.run(main())
    assert getattr(first, "status", None) == 200
    assert second is None
    assert counts == {"fetched": 1, "site-busy": 1}
    paths = [r.path for r in web.requests()[before:] if r.host == HOST]
    assert "/about.html" not in paths
