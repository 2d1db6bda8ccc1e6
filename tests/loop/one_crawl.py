"""One crawl of the real loop on a virtual clock: what the loop tests share.

`crawl_on(...)` builds the crawl's context on `data_dir` (real SQLite, page work on threads
the clock's driver waits for), queues the seeds, runs the crawl to its end and closes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trawl.loop.crawler import Crawler
from trawl.loop.workers import WorkerPool
from trawl.parse.page_work import init_worker
from trawl.wiring.embedded import build_context, normalise_rules
from trawl.wiring.seeds import add_seeds, normalise_seeds, seed_scopes

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from tests.fakes.fetcher import ScriptedFetcher
    from tests.loop.virtual_clock import VirtualClock

    from trawl.config import Settings
    from trawl.loop.context import CrawlContext


async def crawl_on(
    s: Settings,
    data_dir: Path,
    clock: VirtualClock,
    fetcher: ScriptedFetcher,
    seeds: Sequence[str],
    *,
    pool_type: Callable[[Callable[[], Any]], WorkerPool] = WorkerPool,
    **parts: Any,
) -> CrawlContext:
    """Crawl `seeds` with settings `s`; `pool_type` makes the page workers' pool from a
    thread pool factory, `parts` go to build_context (a store to test). The context,
    closed, for what the run left in memory."""
    rules = normalise_rules(s)
    pool = pool_type(lambda: clock.executor(2, initializer=init_worker, initargs=(rules,)))
    ctx = build_context(s, data_dir, clock, fetcher=fetcher, cpu_pool=pool, **parts)
    try:
        add_seeds(ctx, seed_scopes(s, normalise_seeds([(u, "seed") for u in seeds], rules), rules))
        await Crawler(ctx, watch_lag=False).run()
    finally:
        await ctx.durability.close()
    return ctx
