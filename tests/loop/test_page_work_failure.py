"""A page whose work fails stops neither the crawl nor the rest of its site.

Page work runs in worker processes so that a page no parser copes with costs that page
only. Two ways it fails: `process_page` raises (a bug met on some input), or the page (or
a sitemap) kills its worker every time it is tried (loop.workers.WorkerCrashed once
`MAX_ATTEMPTS` pools broke on it). Before, either escaped the site's turn and ended the
whole crawl's task group: one hostile page stopped the crawl. Now the page is recorded with
the error, not stored, its links not followed, and the crawl goes on.

Real parts: the crawl loop, the SQLite frontier and records, page work on threads, on a
virtual clock with a scripted fetcher (tests/loop/test_crawl_loop.py's web). The failure is
injected where page work is called for the pages whose URL ends in /a2.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter
from typing import TYPE_CHECKING, Any, cast

import pytest
from tests.fakes.fetcher import Answer, ScriptedFetcher
from tests.loop.one_crawl import crawl_on
from tests.loop.test_crawl_loop import HOSTS, SEEDS, robots, settings, web
from tests.loop.virtual_clock import VirtualClock

from trawl.config import with_overrides
from trawl.loop.renders import Rendering, Renders
from trawl.loop.workers import WorkerCrashed, WorkerPool
from trawl.model import PageRecord
from trawl.parse import page_work
from trawl.parse.page_work import (
    PageInput,
    PageOutput,
    init_worker,
    process_pages,
    process_rendered,
    process_sitemap,
)
from trawl.render.policy import RenderBook, RenderRules
from trawl.render.ports import RenderItem, RenderJob, RenderResult, RenderState
from trawl.render.queue_sqlite import SqliteRenderQueue
from trawl.store.layout import DB_NAME
from trawl.store.sqlite_db import open_database
from trawl.store.warc_record import StoredBody
from trawl.urls.normalise import url_hash
from trawl.wiring.embedded import build_context, normalise_rules

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.loop.content import StoredContent
    from trawl.loop.render_fetches import RenderFetches
    from trawl.render.ports import Renderer

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
HOSTILE = "http://alpha.test/a2"
SITEMAP = "http://alpha.test/sitemap.xml"


def raising_pages(pages: list[PageInput]) -> list[PageOutput | BaseException]:
    """process_pages, with the hostile page's work raising as a parser bug would."""
    out = process_pages([p for p in pages if p.url != HOSTILE])
    return [
        ValueError("lexbor: unexpected node") if p.url == HOSTILE else out.pop(0) for p in pages
    ]


class CrashingPool(WorkerPool):
    """A pool on which any batch holding the hostile page, a sitemap and a rendered DOM kill
    their worker every time."""

    async def run(self, fn: Any, *args: Any) -> Any:
        hostile = fn is process_pages and any(p.url == HOSTILE for p in args[0])
        if hostile or fn in (process_sitemap, process_rendered):
            raise WorkerCrashed(f"{fn.__name__!r} killed its worker process 3 times in a row")
        return await super().run(fn, *args)


def hostile_web() -> dict[str, Answer | list[Answer]]:
    """The loop tests' web, with a sitemap on alpha.test that lists its pages."""
    w = web()
    w["http://alpha.test/robots.txt"] = robots(
        f"User-agent: *\nDisallow: /private/\nSitemap: {SITEMAP}\n"
    )
    urls = "".join(f"<url><loc>http://alpha.test/{p}</loc></url>" for p in ("a1", "a2", "a3"))
    w[SITEMAP] = Answer(
        200,
        (("Content-Type", "application/xml"),),
        f'<?xml version="1.0"?><urlset xmlns="{SITEMAP_NS}">{urls}</urlset>'.encode(),
    )
    return w


async def crawl(data_dir: Path, clock: VirtualClock, crash: bool) -> ScriptedFetcher:
    fetcher = ScriptedFetcher(hostile_web(), clock=clock, hosts=HOSTS, default_ip=None)
    pool_type = CrashingPool if crash else WorkerPool
    await crawl_on(settings(), data_dir, clock, fetcher, SEEDS, pool_type=pool_type)
    return fetcher


@pytest.mark.parametrize("crash", [False, True], ids=["work raises", "worker dies"])
def test_a_page_whose_work_fails_is_recorded_and_the_crawl_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash: bool
) -> None:
    if not crash:
        monkeypatch.setattr(page_work, "process_pages", raising_pages)
        monkeypatch.setattr("trawl.wiring.embedded.process_pages", raising_pages)
    clock = VirtualClock()
    fetcher = asyncio.run(clock.run(crawl(tmp_path, clock, crash)))
    sent = Counter(request.url for request in fetcher.requests)
    assert sent[HOSTILE] == 1, "a page whose work failed is not fetched again in the run"
    conn = sqlite3.connect(tmp_path / DB_NAME)
    try:
        rows = dict(
            conn.execute("SELECT url, json_extract(record, '$.error') FROM pages").fetchall()
        )
        stored = {url for (url,) in conn.execute("SELECT url FROM pages WHERE storage_key != ''")}
    finally:
        conn.close()
    expected = "WorkerCrashed" if crash else "ValueError: lexbor: unexpected node"
    assert rows[HOSTILE].startswith("page_work: ")
    assert expected in rows[HOSTILE]
    assert HOSTILE not in stored
    assert sent[SITEMAP] == 1
    if crash:  # the sitemap's worker died on it too: recorded, its URLs found by links
        assert rows[SITEMAP].startswith("sitemap: page_work: WorkerCrashed")
    else:
        assert not rows[SITEMAP]
    # The rest of the web, its own site included, was crawled and stored as usual.
    others = {url for url in sent if not url.endswith(("/robots.txt", "/sitemap.xml"))}
    assert {"http://alpha.test/a1", "http://alpha.test/a3", *SEEDS} <= stored
    assert others - {HOSTILE} <= set(rows)


class FixedRenderer:
    """A browser stand-in whose every render settles with the same DOM."""

    async def render(self, job: RenderJob, fetch: Any) -> RenderResult:
        return RenderResult(
            "<html><body><p>built by a script</p></body></html>", RenderState.DONE,
            0.1, 0, 0, 0, 0, (),
        )  # fmt: skip

    async def close(self) -> None:
        return None


async def render_once(data_dir: Path, clock: VirtualClock) -> tuple[PageRecord | None, Any]:
    s = with_overrides(settings(), render={"mode": "auto"})
    rules = normalise_rules(s)
    pool = CrashingPool(lambda: clock.executor(2, initializer=init_worker, initargs=(rules,)))
    conn = open_database(data_dir / DB_NAME)
    fetcher = ScriptedFetcher(hostile_web(), clock=clock, hosts=HOSTS, default_ip=None)
    ctx = build_context(s, data_dir, clock, conn=conn, fetcher=fetcher, cpu_pool=pool)
    try:
        url = HOSTILE
        hashed = url_hash(url)
        ctx.records.put_page(PageRecord(hashed, url, clock.now(), 200, site="alpha.test"), None)
        plain = StoredBody(
            {}, url, 200, (("Content-Type", "text/html"),), b"<html></html>", False, "<urn:x>"
        )
        parts = Rendering(
            RenderBook(RenderRules.from_settings(s.render)), SqliteRenderQueue(conn),
            lambda: cast("Renderer", FixedRenderer()), s.render, lambda key: plain,
        )  # fmt: skip
        renders = Renders(ctx, parts, cast("RenderFetches", None), cast("StoredContent", None))
        item = RenderItem(url, hashed, "alpha.test", "forced", "warc:0:0", "<urn:x>", 0.0)
        await renders._render(item)  # one leased render, as the runner starts each
        return ctx.records.get_page(hashed), ctx.stats.renders
    finally:
        await ctx.durability.close()


def test_a_rendered_dom_whose_work_fails_is_a_failed_render(tmp_path: Path) -> None:
    clock = VirtualClock()
    record, renders = asyncio.run(clock.run(render_once(tmp_path, clock)))
    assert record is not None
    assert record.render["state"] == "failed"
    assert str(record.render["message"]).startswith("page_work: WorkerCrashed")
    assert renders == {"failed": 1}
