"""A run-time exclude drops the queue's matching URLs a slice at a time (issue 17).

Read in one call, a queue of 1,000,000 URLs held the crawl loop for 3.5 s (0.7 s at
200,000) for one `POST /v1/scope/exclusions`. The API's call (`add_exclusion_in_slices`)
now reads `DROP_SCAN_ROWS` queue rows a slice, the loop turning between two; the exclude is
in force and durable before the first. Through the crawl's real context on real SQLite.
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import TYPE_CHECKING, Any

from tests.integration.test_cluster_override_gap import StoppedClock

from trawl.config import Settings, with_overrides
from trawl.frontier.intake import DROP_SCAN_ROWS
from trawl.model import CrawlUrl, Line
from trawl.store.layout import DB_NAME
from trawl.urls.normalise import url_hash
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from pathlib import Path

SETTINGS = with_overrides(Settings(), crawl={"contact_url": "https://trawl.invalid/t"})
QUEUED = 2 * DROP_SCAN_ROWS + 500  # three slices
EXCLUDED = "/tag/"


def _url(i: int) -> CrawlUrl:
    path = f"/tag/{i}" if i % 3 == 0 else f"/page/{i}"
    url = f"http://s{i % 50}.test{path}"
    return CrawlUrl(url, url_hash(url), f"s{i % 50}.test", 1, Line.SLOW, 1000.0)


def test_issue_17_an_exclude_drops_its_queued_urls_in_slices(tmp_path: Path) -> None:
    ctx = build_context(SETTINGS, tmp_path, StoppedClock(1000.0))
    for i in range(QUEUED):
        ctx.frontier.enqueue(_url(i))
    slices: list[tuple[int, bool]] = []  # (cursor, the loop turned since the last slice)
    ran: list[bool] = []
    drop = ctx.intake.drop_excluded_after

    def spy(matches: Any, after_id: int) -> tuple[int, int | None]:
        slices.append((after_id, bool(ran) and ran[-1]))
        ran.append(False)
        asyncio.get_running_loop().call_soon(ran.__setitem__, len(ran) - 1, True)
        assert ctx.scope.current.is_excluded("http://s1.test/tag/x")  # in force already
        return drop(matches, after_id)

    ctx.intake.drop_excluded_after = spy  # type: ignore[method-assign]

    async def main() -> int | None:
        return await ctx.add_exclusion_in_slices(EXCLUDED)

    try:
        dropped = asyncio.run(main())
        ctx.durability.commit()
    finally:
        asyncio.run(ctx.durability.close())
    matching = sum(1 for i in range(QUEUED) if i % 3 == 0)
    assert dropped == matching
    assert len(slices) == 3
    assert slices[0][0] == 0
    assert all(turned for _, turned in slices[1:])
    conn = sqlite3.connect(tmp_path / DB_NAME)
    try:
        left = [url for (url,) in conn.execute("SELECT url FROM queue")]
    finally:
        conn.close()
    assert len(left) == QUEUED - matching
    assert not any(EXCLUDED in url for url in left)
    assert ctx.stats.skipped.get("exclude") == matching


def test_a_cluster_peers_exclude_is_in_force_at_once_and_drops_on_its_own_task(
    tmp_path: Path,
) -> None:
    """A node reads a peer's exclude between a link stream's links (cluster_scope): the
    exclude holds for the very next link, and the queue's matching URLs go a slice at a
    time on a task of their own, so the stream's read is not held for the whole queue."""
    ctx = build_context(SETTINGS, tmp_path, StoppedClock(1000.0))
    for i in range(QUEUED):
        ctx.frontier.enqueue(_url(i))
    slices: list[int] = []
    drop = ctx.intake.drop_excluded_after

    def spy(matches: Any, after_id: int) -> tuple[int, int | None]:
        slices.append(after_id)
        return drop(matches, after_id)

    ctx.intake.drop_excluded_after = spy  # type: ignore[method-assign]

    async def main() -> tuple[bool, bool, int]:
        in_force = ctx.add_exclusion_dropping_later(EXCLUDED)
        again = ctx.add_exclusion_dropping_later(EXCLUDED)
        assert ctx.scope.current.is_excluded("http://s1.test/tag/x")
        sliced_before_returning = len(slices)
        await asyncio.gather(*ctx._dropping)  # the drop's task
        return in_force, again, sliced_before_returning

    try:
        in_force, again, sliced_before_returning = asyncio.run(asyncio.wait_for(main(), 30))
        ctx.durability.commit()
    finally:
        asyncio.run(ctx.durability.close())
    assert (in_force, again) == (True, False)
    assert sliced_before_returning == 0  # nothing read from the queue in the caller's step
    assert len(slices) == 3
    conn = sqlite3.connect(tmp_path / DB_NAME)
    try:
        left = [url for (url,) in conn.execute("SELECT url FROM queue")]
    finally:
        conn.close()
    assert not any(EXCLUDED in url for url in left)
    assert ctx.stats.skipped.get("exclude") == sum(1 for i in range(QUEUED) if i % 3 == 0)
