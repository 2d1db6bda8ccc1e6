"""`trawl serve`: `trawl crawl --continuous` with the control API on the same event loop."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from trawl.api import DEFAULT_LISTEN
from trawl.cli.options import add_crawl_options, settings_from_args
from trawl.cli.runner import print_summary, run_async, run_crawl

if TYPE_CHECKING:
    import argparse

    from trawl.loop.context import CrawlContext


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
