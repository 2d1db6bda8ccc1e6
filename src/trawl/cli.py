"""The `trawl` command: crawl, demo and the read-back commands.

Usage errors (bad flags, config, seeds, data directory) end with one line on stderr and
exit status 2; they are never tracebacks.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from trawl import __version__
from trawl.api import DEFAULT_LISTEN
from trawl.errors import UsageError
from trawl.frontier.containment import ContainReason

# Start-up (issue 14): this module imports only what building the parser needs; each
# command imports its own machinery when it runs (the crawl's, the API's and the cluster's
# modules cost ~1.4 s together), so `trawl --version` and the read-back commands start fast.
# tests/integration/test_cli_startup.py holds that line.

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Sequence

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


def add_crawl_options(p: argparse.ArgumentParser, *, continuous: bool = True) -> None:
    """The options of `trawl crawl`; `trawl serve` is always continuous, so it lacks
    `--continuous` (`continuous=False`)."""
    p.add_argument("urls", nargs="*", metavar="URL", help="seed URLs")
    p.add_argument("--seeds-file", type=Path, help="file of seed URLs, one per line")
    p.add_argument("--data", type=Path, default=Path("trawl-data"), help="data directory")
    p.add_argument("--max-pages", type=int, help="stop after this many pages (robots.txt excluded)")
    p.add_argument("--max-time", type=float, help="stop after this many seconds")
    if continuous:
        p.add_argument(
            "--continuous",
            action="store_true",
            default=None,
            help="keep crawling and recrawling due pages instead of stopping when the frontier"
            " empties",
        )
    p.add_argument(
        "--resolve",
        action="append",
        default=None,
        metavar="HOST:IP",
        help="map a name (or *.suffix) to an address, like curl; repeatable",
    )
    p.add_argument("--hosts-file", help="file of 'IP host...' lines")
    p.add_argument("--dns-server", help="resolve names through this DNS server IP[:PORT]")
    p.add_argument(
        "--allow-private",
        action="store_true",
        default=None,
        help="allow loopback/private addresses for names not mapped explicitly",
    )
    p.add_argument("--user-agent", help="full User-Agent (must name trawl and a contact URL)")
    p.add_argument("--contact", help="contact URL for the User-Agent (required)")
    p.add_argument("--config", type=Path, help="TOML config file")


def settings_from_args(args: argparse.Namespace) -> Settings:
    from trawl.config import load_settings, with_overrides

    settings = load_settings(args.config)
    return with_overrides(
        settings,
        crawl={
            "max_pages": args.max_pages,
            "max_time_s": args.max_time,
            "user_agent": args.user_agent,
            "contact_url": args.contact,
            "continuous": getattr(args, "continuous", None),  # serve has no --continuous
        },
        network={
            "resolve": tuple(args.resolve) if args.resolve else None,
            "hosts_file": args.hosts_file,
            "dns_server": args.dns_server,
            "allow_private": args.allow_private,
        },
    )


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
    from trawl.wiring.seeds import add_seeds, normalise_seeds, queue_all_due

    valid_seeds = normalise_seeds(seeds, normalise_rules(settings))
    with lock_data_dir(data_dir):
        ctx = build_context(settings, data_dir)
        try:
            add_seeds(ctx, valid_seeds)
            queue_all_due(ctx)
            with stop_on_signals(ctx.run.request_stop):
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
        )


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """Run on uvloop: its transports cost measurably less CPU per fetch than asyncio's."""
    import asyncio

    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


def cmd_crawl(args: argparse.Namespace) -> int:
    from trawl.loop.stop_signals import stop_signals_noted
    from trawl.wiring.seeds import read_seeds

    settings = settings_from_args(args)
    seeds = read_seeds(args.urls, args.seeds_file)
    with stop_signals_noted():
        summary = run_async(
            run_crawl(settings, args.data, seeds, sys.stderr, is_tty=sys.stderr.isatty())
        )
    print_summary(summary, sys.stdout)
    return 0


_CONTAIN_REASONS = tuple(reason.value for reason in ContainReason)
# What a crawl leaves queued: when it runs out of work, only URLs of sites whose robots.txt
# is unreachable (or over their daily cap, or trickling as traps: CrawlContext.is_finished);
# when a limit or a signal stops it, whatever was next.
_QUEUE_LEFT_WHY = " (their sites wait for robots.txt, a daily cap or the next run)"


def print_summary(s: CrawlSummary, out: TextIO) -> None:
    from trawl.fetch.failure_reasons import failures_line, nothing_fetched_line

    st = s.stats
    rate = st.pages_fetched / s.elapsed_s if s.elapsed_s > 0 else 0.0
    out.write(
        f"pages fetched {st.pages_fetched}, stored {st.pages_stored}, "
        f"robots.txt {st.robots_fetches}, sites {s.sites}, "
        f"{rate:.1f} pages/s over {s.elapsed_s:.1f}s, URLs left in queue {s.queued_left}"
        f"{_QUEUE_LEFT_WHY if s.queued_left else ''}\n"
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
    if s.workers_replaced:
        out.write(f"worker processes died and were replaced {s.workers_replaced} times\n")


def build_parser() -> argparse.ArgumentParser:
    # These modules import their commands' machinery only when a command runs.
    from trawl import readback
    from trawl.cluster import node_cli

    parser = argparse.ArgumentParser(
        prog="trawl", description="A polite, fast, robust web crawler."
    )
    parser.add_argument("--version", action="version", version=f"trawl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("crawl", help="crawl from seeds into a data directory")
    add_crawl_options(p)
    p.set_defaults(func=cmd_crawl)
    p = sub.add_parser("serve", help="crawl continuously and serve the control API")
    add_crawl_options(p, continuous=False)
    p.add_argument(
        "--listen", default=DEFAULT_LISTEN, help=f"API address (default {DEFAULT_LISTEN})"
    )
    p.add_argument(
        "--token-file",
        type=Path,
        help="file holding the operator token for write endpoints (or TRAWL_API_TOKEN)",
    )
    p.set_defaults(func=cmd_serve)
    add_seed_parser(sub)
    add_demo_parser(sub)
    readback.add_parsers(sub)
    add_cluster_parser(sub)
    node_cli.add_parser(sub)
    return parser


def add_demo_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help="crawl a built-in local test web and summarise")
    p.add_argument("--sites", type=int, default=60, help="sites in the test web (default 60)")
    p.add_argument("--pages", type=int, default=20, help="pages per site (default 20)")
    p.add_argument("--seed", type=int, default=1, help="test web generator seed")
    p.add_argument("--data", type=Path, default=Path("trawl-demo-data"), help="data directory")
    p.add_argument("--max-time", type=float, default=300.0, help="stop after this many seconds")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    # Here, not in trawl.demo: that module imports the crawl and the test web (and this one).
    from trawl.demo import cmd_demo

    return cmd_demo(args)


def add_cluster_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`trawl cluster ...`: commands about a whole cluster (issue 7)."""
    p = sub.add_parser("cluster", help="inspect a trawl cluster")
    group = p.add_subparsers(dest="cluster_command", required=True)
    p = group.add_parser("status", help="members, partition owners, stream lag, checkpoint ages")
    p.add_argument("--cluster", type=Path, required=True, metavar="FILE", help="cluster file")
    p.add_argument("--json", action="store_true", help="print everything as one JSON object")
    p.set_defaults(func=cmd_cluster_status)


def cmd_cluster_status(args: argparse.Namespace) -> int:
    from trawl.cluster.extra import require_cluster_packages

    require_cluster_packages("trawl cluster status")
    # Imported here: redis and boto3 add ~0.3 s to every other command's start.
    from trawl.cluster.status import cmd_status

    return cmd_status(args)


def cmd_serve(args: argparse.Namespace) -> int:
    """`trawl crawl --continuous` with the API on the same event loop (issue 6, read side)."""
    from trawl.api.serve import bind_listener, read_token, serve_api
    from trawl.config import with_overrides
    from trawl.loop.stop_signals import stop_signals_noted
    from trawl.wiring.seeds import read_seeds

    settings = with_overrides(settings_from_args(args), crawl={"continuous": True})
    seeds = read_seeds(args.urls, args.seeds_file)
    token = read_token(args.token_file, os.environ)
    sock = bind_listener(args.listen)  # a bad or busy address fails before the crawl starts

    async def serve(ctx: CrawlContext) -> None:
        await serve_api(ctx, sock, token)

    with stop_signals_noted():
        summary = run_async(
            run_crawl(settings, args.data, seeds, sys.stderr, is_tty=False, serve=serve)
        )
    print_summary(summary, sys.stdout)
    return 0


def add_seed_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "seed",
        help="add seeds through a `trawl serve` API, or straight to a cluster",
        description=(
            "Add seeds through the API of a running `trawl serve` or cluster node (--api), or"
            " send them straight to the link streams of their sites' partitions (--cluster)."
            " With --api the answer says how many were new; with --cluster it cannot: the"
            " node owning each partition decides what it already knows (it checks its exact"
            " seed table), so `sent` counts every distinct valid seed, known to the cluster"
            " or not."
        ),
    )
    p.add_argument("urls", nargs="*", metavar="URL", help="seed URLs")
    p.add_argument("--seeds-file", type=Path, help="file of seed URLs, one per line")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--api", metavar="URL", help=f"e.g. http://{DEFAULT_LISTEN}")
    source.add_argument(
        "--cluster",
        type=Path,
        metavar="FILE",
        help="cluster file: route the seeds through the cluster's Redis (no node need be up)",
    )
    p.add_argument(
        "--priority",
        choices=("high", "normal", "low"),
        default="normal",
        help="the API's seed priority (default normal; low waits in the slow line; --api only)",
    )
    p.add_argument(
        "--token-file",
        type=Path,
        help="file holding the operator token (or TRAWL_API_TOKEN; --api only)",
    )
    p.add_argument(
        "--config",
        type=Path,
        help="TOML config whose [urls] rules normalise the seeds, as the nodes' (--cluster only)",
    )
    p.set_defaults(func=cmd_seed)


def cmd_seed(args: argparse.Namespace) -> int:
    """`trawl seed`: POST /v1/seeds, or with --cluster XADD to the partitions' link streams;
    prints what was queued or sent and each rejection's reason."""
    from trawl.api.client import post_seeds
    from trawl.api.serve import read_token
    from trawl.config import load_settings
    from trawl.wiring.embedded import normalise_rules
    from trawl.wiring.seeds import read_seeds

    urls = [raw for raw, _ in read_seeds(args.urls, args.seeds_file)]
    if not urls:
        raise UsageError("no seed URLs: give them as arguments or with --seeds-file")
    if args.cluster is not None:
        if args.priority != "normal":
            raise UsageError("seed priorities need --api: --cluster sends every seed as normal")
        if args.token_file is not None:
            raise UsageError("--token-file is for --api: --cluster writes to Redis directly")
        from trawl.cluster.extra import require_cluster_packages

        require_cluster_packages("trawl seed --cluster")
        # Imported here: redis and boto3 add ~0.3 s to every other command's start.
        from trawl.cluster.cluster_seeds import cmd_seed_cluster

        return cmd_seed_cluster(args, urls, normalise_rules(load_settings(args.config)))
    if args.config is not None:
        raise UsageError("--config is for --cluster: the API normalises with its node's config")
    answer = post_seeds(args.api, urls, args.priority, read_token(args.token_file, os.environ))
    rejected = answer["rejected"]
    known = len(urls) - answer["queued"] - len(rejected)
    print(
        f"queued {answer['queued']} of {len(urls)} URLs ({known} already known, "
        f"{len(rejected)} rejected)"
    )
    for item in rejected:
        print(f"rejected {item.get('url')!r}: {item.get('reason')}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except UsageError as exc:
        print(f"trawl: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
