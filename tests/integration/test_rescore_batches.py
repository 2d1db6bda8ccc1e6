"""Issue 17: known URLs are re-scored in batches, at the crawl's next commit or when a batch
is full, not one statement per page.

A queued URL's in-link counts rise as pages of other sites link to it; when its count of
linking sites crosses a power of two its queue row is re-scored. The crawl's real context
on SQLite; links handed to intake as fetched pages' would be.
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import TYPE_CHECKING

from trawl.config import Settings, with_overrides
from trawl.frontier import intake
from trawl.frontier.scope import Standing
from trawl.model import CrawlUrl, Line
from trawl.parse.page_work import FoundLink
from trawl.store.layout import DB_NAME
from trawl.urls.normalise import url_hash
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    import pytest

    from trawl.loop.context import CrawlContext

TARGET = "http://t.test/page"
TARGET_HASH = url_hash(TARGET)


def _page_of(site: str) -> CrawlUrl:
    url = f"http://{site}/"
    return CrawlUrl(url, url_hash(url), site, 0, Line.FAST, 0.0, standing=Standing(0).pack())


def _link_from(ctx: CrawlContext, site: str) -> None:
    ctx.intake.add_page_links(_page_of(site), [FoundLink(TARGET, TARGET_HASH, "t.test")])


def _committed_score(data_dir: Path) -> float:
    with sqlite3.connect(data_dir / DB_NAME) as conn:
        (score,) = conn.execute(
            "SELECT score FROM queue WHERE url_hash = ?", (TARGET_HASH,)
        ).fetchone()
    return float(score)


def _run(data_dir: Path, steps: Callable[[CrawlContext], None]) -> None:
    settings = with_overrides(Settings(), crawl={"contact_url": "https://trawl.invalid/t"})

    async def main() -> None:
        ctx = build_context(settings, data_dir)
        try:
            steps(ctx)
        finally:
            await ctx.durability.close()

    asyncio.run(main())


def test_a_rescore_waits_for_the_next_commit(tmp_path: Path) -> None:
    def steps(ctx: CrawlContext) -> None:
        _link_from(ctx, "a.test")  # new: queued with one linking site
        ctx.durability.commit()
        first = _committed_score(tmp_path)
        _link_from(ctx, "b.test")  # two sites: no power of two crossed
        _link_from(ctx, "c.test")  # three sites: 1 + 3 is a power of two, re-score noted
        assert ctx.stats.rescored == 0
        ctx.durability.commit()
        assert ctx.stats.rescored == 1
        assert _committed_score(tmp_path) > first

    _run(tmp_path, steps)


def test_a_full_batch_is_rescored_without_a_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(intake, "RESCORE_BATCH", 1)

    def steps(ctx: CrawlContext) -> None:
        for site in ("a.test", "b.test", "c.test"):
            _link_from(ctx, site)
        assert ctx.stats.rescored == 1  # before any commit

    _run(tmp_path, steps)
