"""A render whose plain copy cannot be read because a cluster's shared store is out of reach
waits for the store, however many leases that takes, and those leases count none of its
attempts; a copy that is really missing or damaged is given up after MAX_READ_ATTEMPTS
leases, as before.

Real parts: the render step (loop.renders) with its SQLite queue and the crawl's records on
a virtual clock; the plain copy's read is scripted to fail.
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import TYPE_CHECKING, cast

import pytest
from tests.fakes.fetcher import ScriptedFetcher
from tests.loop.test_crawl_loop import HOSTS, settings, web
from tests.loop.virtual_clock import VirtualClock

from trawl.config import with_overrides
from trawl.errors import DataError, StoreUnavailable
from trawl.loop.renders import MAX_READ_ATTEMPTS, Rendering, Renders
from trawl.model import PageRecord
from trawl.render.policy import RenderBook, RenderRules
from trawl.render.ports import RenderItem
from trawl.render.queue_sqlite import SqliteRenderQueue
from trawl.store.layout import DB_NAME
from trawl.store.sqlite_db import open_database
from trawl.urls.normalise import url_hash
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.loop.content import StoredContent
    from trawl.loop.render_fetches import RenderFetches
    from trawl.render.ports import Renderer
    from trawl.store.warc import StoredBody

URL = "http://alpha.test/a1"


async def read_at_the_last_attempt(
    data_dir: Path, clock: VirtualClock, error: DataError
) -> tuple[int, dict[str, int]]:
    """MAX_READ_ATTEMPTS leases of one render whose plain copy's read raises `error` each
    time (the last lease's is the read a damaged copy is given up at); (rows left in the
    render queue, the renders counted by outcome)."""
    s = with_overrides(settings(), render={"mode": "auto"})
    conn = open_database(data_dir / DB_NAME)
    fetcher = ScriptedFetcher(web(), clock=clock, hosts=HOSTS, default_ip=None)
    ctx = build_context(s, data_dir, clock, conn=conn, fetcher=fetcher)
    try:
        hashed = url_hash(URL)
        ctx.records.put_page(PageRecord(hashed, URL, clock.now(), 200, site="alpha.test"), None)

        def read_body(key: str) -> StoredBody:
            raise error

        queue = SqliteRenderQueue(conn)
        parts = Rendering(
            RenderBook(RenderRules.from_settings(s.render)), queue,
            lambda: cast("Renderer", None), s.render, read_body,
        )  # fmt: skip
        renders = Renders(ctx, parts, cast("RenderFetches", None), cast("StoredContent", None))
        item = RenderItem(URL, hashed, "alpha.test", "forced", "warc:0:0", "<urn:x>", 0.0)
        queue.offer(item, clock.now())
        for _ in range(MAX_READ_ATTEMPTS):
            (leased,) = queue.lease(clock.now(), 60.0, 1)
            await renders._render(leased)
            await clock.sleep_until(clock.now() + 60.0)  # past the retry's not_before
        return queue.stats().queued, dict(ctx.stats.renders)
    finally:
        await ctx.durability.close()


@pytest.mark.parametrize(
    ("error", "queued", "counted"),
    [
        (StoreUnavailable("PostgreSQL 127.0.0.1:5432/trawl: query failed: (a test)"), 1, {}),
        (DataError("storage key 'warc:0:0': damaged (a test)"), 0, {"unreadable": 1}),
    ],
)
def test_a_store_outage_does_not_use_up_a_renders_read_attempts(
    tmp_path: Path, error: DataError, queued: int, counted: dict[str, int]
) -> None:
    clock = VirtualClock()
    left, renders = asyncio.run(clock.run(read_at_the_last_attempt(tmp_path, clock, error)))
    assert left == queued
    assert renders == counted
    conn = sqlite3.connect(tmp_path / DB_NAME)
    try:
        rows = conn.execute("SELECT attempts FROM render_queue").fetchall()
    finally:
        conn.close()
    # Committed, and the outage's leases gave their attempts back: a browser failure once
    # the store is back is still tried MAX_ATTEMPTS times.
    assert rows == [(0,)] * queued
