"""`trawl crawl`: crawl from seeds into a data directory, then print a summary."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from trawl.cli.options import add_crawl_options, settings_from_args
from trawl.cli.runner import print_summary, run_async, run_crawl

if TYPE_CHECKING:
    import argparse


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("crawl", help="crawl from seeds into a data directory")
    add_crawl_options(p)
    p.set_defaults(func=cmd_crawl)


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
