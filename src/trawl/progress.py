"""Live progress: a rewritten status line on a terminal, plain log lines otherwise."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from trawl.crawl_context import CrawlContext


def progress_line(ctx: CrawlContext, elapsed_s: float, rate: float) -> str:
    st = ctx.stats
    sched = ctx.frontier.stats()
    return (
        f"{elapsed_s:7.1f}s  pages {st.pages_fetched} ({rate:.1f}/s)  stored {st.pages_stored}  "
        f"queued {sched.queued_fast + sched.queued_slow}  sites active {sched.busy}"
        f"/{sched.sites}  robots {st.robots_fetches}  errors {st.errors}"
    )


async def report_progress(ctx: CrawlContext, out: TextIO, *, is_tty: bool) -> None:
    """Runs until cancelled; rate is over the last interval."""
    interval = 0.5 if is_tty else 5.0
    last_pages, last_at = ctx.stats.pages_fetched, ctx.clock.now()
    while True:
        await asyncio.sleep(interval)
        now = ctx.clock.now()
        rate = (ctx.stats.pages_fetched - last_pages) / max(now - last_at, 1e-9)
        last_pages, last_at = ctx.stats.pages_fetched, now
        line = progress_line(ctx, now - ctx.started_at, rate)
        if is_tty:
            out.write("\r\x1b[2K" + line)
        else:
            out.write(line + "\n")
        out.flush()
