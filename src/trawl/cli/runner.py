"""What the commands that crawl share: run a crawl on uvloop, and summarise it.

`trawl crawl`, `trawl serve`, `trawl demo` and `trawl node` import this module, never the
dispatcher: that is what keeps the command modules out of an import circle.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from trawl.frontier.containment import ContainReason

# Start-up (issue 14): the command modules import this one while the parser is built, so
# the crawl's machinery is imported inside run_crawl, when a crawl runs.

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from pathlib import Path

    from trawl.config import Settings
    from trawl.loop.context import CrawlContext
    from trawl.loop.stats import CrawlStats


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CrawlSummary:
    stats: CrawlStats
    traps: dict[str, int]
    elapsed_s: float
    sites: int
    queued_left: int
    turns_by_line: tuple[int, int, int] = (0, 0, 0)  # site turns given to FAST, SLOW, REFRESH
    contested_turns: tuple[int, int] = (0, 0)  # (refresh, discovery) while both had work
    workers_replaced: int = 0  # worker pools started afresh after a worker died (issue 13)
    scope: str = ""  # the scope in force (ScopeBook.summary)
    skips: dict[str, int] | None = None  # URLs not queued, by reason, over the whole crawl
    # Of `queued_left`, those whose site waits, by what for: (sites, URLs) (RunState).
    waiting_left: dict[str, tuple[int, int]] = field(default_factory=dict)


async def run_crawl(
    settings: Settings,
    data_dir: Path,
    seeds: list[tuple[str, str]],
    out: TextIO,
    *,
    is_tty: bool,
    serve: Callable[[CrawlContext], Coroutine[Any, Any, None]] | None = None,
) -> CrawlSummary:
    """Crawl into `data_dir` (resuming what is there) until a limit, SIGINT/SIGTERM or done.

    `serve`, if given, runs beside the crawl on its loop (the API of `trawl serve`, which
    puts its server on a thread of its own) and must return once the crawl is stopping.
    """
    import asyncio
    import contextlib

    from trawl.loop.crawler import Crawler
    from trawl.loop.progress import report_progress
    from trawl.loop.stop_signals import stop_on_signals
    from trawl.store.layout import lock_data_dir
    from trawl.wiring.embedded import build_context, normalise_rules
    from trawl.wiring.seeds import add_seeds, normalise_seeds, queue_all_due, seed_scopes

    rules = normalise_rules(settings)
    valid_seeds = seed_scopes(settings, normalise_seeds(seeds, rules), rules)
    with lock_data_dir(data_dir):
        ctx = build_context(settings, data_dir)
        try:
            add_seeds(ctx, valid_seeds)
            queue_all_due(ctx)
            n = len(ctx.scope.seeds)
            out.write(
                f"trawl: crawling into {data_dir} from {n} seed{'' if n == 1 else 's'};"
                f" {ctx.scope.summary()}\n"
            )
            with stop_on_signals(ctx.run.interrupt):
                progress = asyncio.create_task(report_progress(ctx, out, is_tty=is_tty))
                api = asyncio.create_task(serve(ctx)) if serve is not None else None
                started = time.monotonic()
                try:
                    await Crawler(ctx).run()
                finally:
                    ctx.run.request_stop()
                    progress.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await progress
                    if api is not None:
                        await api
                    if is_tty:
                        out.write("\n")
        finally:
            await ctx.durability.close()  # idempotent
        sched = ctx.frontier.stats()
        return CrawlSummary(
            ctx.stats,
            {k: v for k, v in ctx.traps.as_dict().items() if v},
            time.monotonic() - started,
            len(ctx.sites),
            sched.queued_fast + sched.queued_slow + sched.queued_refresh,
            sched.handed_out,
            sched.contested,
            ctx.cpu_pool.stats().replaced,
            ctx.scope.summary(),
            ctx.scope.skips.counts(),
            ctx.run.waiting_left(),
        )


def run_async(main: Coroutine[Any, Any, T], *, freeze_survivors: bool = True) -> T:
    """Run on uvloop: its transports cost measurably less CPU per fetch than asyncio's;
    with the garbage collector tuned for a crawl (loop.gc_tuning). `freeze_survivors=False`
    is for a process that is not a crawler's own (a test runner's): it keeps collecting
    the cycles that die late."""
    import asyncio

    import uvloop

    from trawl.loop.gc_tuning import tune_gc

    tune_gc(freeze_survivors=freeze_survivors)

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


_CONTAIN_REASONS = tuple(reason.value for reason in ContainReason)


def queue_left_line(queued_left: int, waiting: dict[str, tuple[int, int]]) -> str:
    """What a crawl leaves queued, and why. When it runs out of work, only URLs of sites
    that wait (an unreachable robots.txt, a daily cap, a trap site's trickle, a pause, a
    wait longer than crawl.max_site_wait_s: RunState.is_finished); when a limit or a signal
    stops it, whatever was next too."""
    if not queued_left:
        return "URLs left in queue 0"
    parts = [
        f"{urls} waiting for {reason} on {sites} site{'' if sites == 1 else 's'}"
        for reason, (sites, urls) in sorted(waiting.items(), key=lambda kv: -kv[1][1])
    ]
    not_reached = queued_left - sum(urls for _, urls in waiting.values())
    if not_reached > 0:
        parts.append(f"{not_reached} not reached before the stop")
    return f"URLs left in queue {queued_left} ({', '.join(parts)}; the next run takes them up)"


def print_summary(s: CrawlSummary, out: TextIO) -> None:
    from trawl.fetch.failure_reasons import failures_line, nothing_fetched_line

    st = s.stats
    rate = st.pages_fetched / s.elapsed_s if s.elapsed_s > 0 else 0.0
    sites = f"sites {s.sites}"
    if st.sites_forgotten:  # loop.idle_sites: each one's state was read back if needed again
        sites += f" in memory ({st.sites_forgotten} idle ones left it)"
    out.write(
        f"pages fetched {st.pages_fetched}, stored {st.pages_stored}, "
        f"robots.txt {st.robots_fetches}, {sites}, "
        f"{rate:.1f} pages/s over {s.elapsed_s:.1f}s, "
        f"{queue_left_line(s.queued_left, s.waiting_left)}\n"
        f"statuses {dict(sorted(st.statuses.items()))}  "
        f"skipped {dict(sorted(st.skipped.items()))}  retries {dict(sorted(st.retries.items()))}"
        f"  traps {dict(sorted(s.traps.items()))}\n"
        f"{failures_line(st.failures)}\n"
    )
    nothing = nothing_fetched_line(st.answered, st.failures, st.failure_examples)
    if nothing is not None:
        out.write(nothing + "\n")
    contained = {r: s.traps.get(f"contained_{r}", 0) for r in _CONTAIN_REASONS}
    if any(contained.values()) or s.traps.get("copy_page_links"):
        parts = ", ".join(f"{r} {n}" for r, n in contained.items() if n)
        out.write(
            f"traps: sites contained {sum(contained.values())} ({parts or 'none'}), "
            f"copy-page links not followed {s.traps.get('copy_page_links', 0)}, "
            f"trickled {s.traps.get('contained_trickle', 0)}, "
            f"rests {s.traps.get('contained_rest', 0)}, "
            f"cleared {s.traps.get('contained_cleared', 0)}\n"
        )
    fast, slow, refresh = s.turns_by_line
    if st.refresh_queued or st.sitemap_urls or st.duplicates or st.near_duplicates:
        out.write(
            f"refetches {dict(sorted(st.refetches.items()))}, 304s {st.not_modified} "
            f"({st.bytes_saved} bytes not downloaded), duplicates {st.duplicates}, "
            f"near-duplicates {st.near_duplicates}, sitemap URLs {st.sitemap_urls} "
            f"(new {st.sitemap_new}, made due {st.sitemap_due}), "
            f"turns refresh/discovery {refresh}/{fast + slow} "
            f"({s.contested_turns[0]}/{s.contested_turns[1]} while both waited)\n"
        )
    if st.render_candidates or st.renders:
        out.write(
            f"pages that look built by JavaScript {dict(sorted(st.render_candidates.items()))}"
            f", sent to the browser {dict(sorted(st.render_decisions.items()))}"
            f", renders {dict(sorted(st.renders.items()))}"
            f", the browser's requests {dict(sorted(st.render_requests.items()))}\n"
        )
    if s.scope:
        skips = dict(sorted((s.skips or {}).items()))
        out.write(
            f"{s.scope}; URLs not queued {sum(skips.values())} {skips}"
            f" (trawl skipped --data DIR lists them)\n"
        )
    lag = st.loop_lag.describe()
    if lag:
        out.write(f"event loop lag {lag}; new turns held for it {st.loop_lag.held} times\n")
    if s.workers_replaced:
        out.write(f"worker processes died and were replaced {s.workers_replaced} times\n")
