"""Live progress: a rewritten status line on a terminal, plain log lines otherwise.

The rate and the site count are over the last recent_activity.WINDOW_S seconds (issue 14:
a rate over the last tick flickered, and the sites holding a turn at that instant read 0).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, TextIO

from trawl.loop.recent_activity import WINDOW_S, RateWindow

if TYPE_CHECKING:
    from trawl.loop.context import CrawlContext


def progress_line(ctx: CrawlContext, elapsed_s: float, rate: float) -> str:
    st = ctx.stats
    sched = ctx.frontier.stats()
    recent = st.recent_sites.count(ctx.clock.now())
    window = f"{WINDOW_S:.0f}s"
    return (
        f"{elapsed_s:7.1f}s  pages {st.pages_fetched} ({rate:.1f}/s over {window})  "
        f"stored {st.pages_stored}  queued {sched.queued_fast + sched.queued_slow}  "
        f"sites {recent}/{sched.sites} fetched in last {window}  robots {st.robots_fetches}  "
        f"errors {st.errors}"
    )


async def report_progress(ctx: CrawlContext, out: TextIO, *, is_tty: bool) -> None:
    """Runs until cancelled; the rate is over the last WINDOW_S seconds."""
    interval = 0.5 if is_tty else 5.0
    rates = RateWindow()
    rates.add(ctx.clock.now(), ctx.stats.pages_fetched)
    while True:
        await asyncio.sleep(interval)
        now = ctx.clock.now()
        rate = rates.add(now, ctx.stats.pages_fetched)
        line = progress_line(ctx, now - ctx.run.started_at, rate)
        if is_tty:
            out.write("\r\x1b[2K" + line)
        else:
            out.write(line + "\n")
        out.flush()
