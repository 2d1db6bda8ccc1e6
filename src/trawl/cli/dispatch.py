"""The `trawl` command's parser, and the dispatch to the command each subparser names.

Usage errors (bad flags, config, seeds, data directory) end with one line on stderr and
exit status 2; they are never tracebacks.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from trawl import __version__
from trawl.cli import cluster, crawl, demo, node, readback, seed, serve, skipped
from trawl.errors import UsageError

# Start-up (issue 14): the command modules import only what building their parsers needs;
# each command imports its own machinery when it runs (the crawl's, the API's and the
# cluster's modules cost ~1.4 s together), so `trawl --version` and the read-back commands
# start fast. tests/integration/test_cli_startup.py holds that line.

if TYPE_CHECKING:
    from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trawl", description="A polite, fast, robust web crawler."
    )
    parser.add_argument("--version", action="version", version=f"trawl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    crawl.add_parser(sub)
    serve.add_parser(sub)
    seed.add_parser(sub)
    demo.add_parser(sub)
    readback.add_parsers(sub)
    skipped.add_parser(sub)
    cluster.add_parser(sub)
    node.add_parser(sub)
    return parser


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
