"""A checkpoint's seen set against a crash right after it (issue 13's invariant, issue 17's race).

The checkpoint saves the seen set on a thread while the crawl goes on finding links. What it
saves must hold no URL whose queue row is not committed: after a kill -9 such a URL would be
"seen" and never queued. Real parts: build_context on a data directory, SQLite, the WARC
writer; the crash is the process stopping with its transaction uncommitted.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from trawl.config import Settings, with_overrides
from trawl.frontier.scope import Standing, seed_id_of
from trawl.model import CrawlUrl, Line
from trawl.parse.page_work import FoundLink
from trawl.seen.seen_set import SeenSet
from trawl.store.layout import BLOOM_NAME, DB_NAME
from trawl.store.sqlite_db import open_database
from trawl.urls.normalise import url_hash
from trawl.wiring.embedded import build_context, normalise_rules
from trawl.wiring.seeds import add_seeds, normalise_seeds, seed_scopes

if TYPE_CHECKING:
    from pathlib import Path

SEED = "http://a.test/"
LATE = "http://a.test/found-during-the-checkpoint"


def test_a_link_found_while_the_checkpoint_saves_is_not_saved_as_seen(tmp_path: Path) -> None:
    settings = with_overrides(Settings(), crawl={"contact_url": "https://trawl.invalid/t"})
    rules = normalise_rules(settings)
    conn = open_database(tmp_path / DB_NAME)

    async def crawl_then_crash() -> None:
        ctx = build_context(settings, tmp_path, conn=conn)
        add_seeds(ctx, seed_scopes(settings, normalise_seeds([(SEED, "test")], rules), rules))
        source = CrawlUrl(
            SEED, url_hash(SEED), "a.test", 0, Line.FAST, 0.0,
            standing=Standing(seed_id_of(SEED)).pack(),
        )  # fmt: skip

        async def find_a_link_meanwhile() -> None:
            await asyncio.sleep(0)  # the checkpoint has committed and awaits its threads
            ctx.intake.add_page_links(source, [FoundLink(LATE, url_hash(LATE), "a.test")])

        await asyncio.gather(ctx.durability.checkpoint(), find_a_link_meanwhile())
        # kill -9: nothing more is committed; the files are left as they are.
        conn.rollback()
        ctx.cpu_pool.shutdown()
        ctx.warc.close()
        await ctx.fetcher.close()
        conn.close()

    asyncio.run(crawl_then_crash())
    after = open_database(tmp_path / DB_NAME)
    try:
        seen = SeenSet(after, tmp_path / BLOOM_NAME, capacity=10_000, fp_rate=0.001)
        seen.load()
        queued = after.execute(
            "SELECT count(*) FROM queue WHERE url_hash = ?", (url_hash(LATE),)
        ).fetchone()[0]
        # Lost would be: not queued, yet seen. Either it was committed, or it is new again.
        assert queued == 1 or seen.add_if_new(url_hash(LATE))
        assert not seen.add_if_new(url_hash(SEED))  # committed before: seen and queued
    finally:
        after.close()
