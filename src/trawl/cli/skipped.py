"""`trawl skipped`: what a crawl did not queue, and why (issue 16).

Reads the skip log of a data directory (opened read-only, so it runs beside a live crawl
and sees what the crawl has committed): the counts by reason over the whole crawl, then the
most recent of the kept skips, each with the rule that decided and the page that linked it.
With `--json`, one object per line: a `{"type": "count", ...}` line per reason, then a
`{"type": "skip", ...}` line per skip, newest first.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from trawl.frontier.skips import Skip

# Start-up (issue 14): only the store's SQLite modules are imported, inside the command.

HUMAN_LIMIT = 20  # skips a person reads by default; --json prints every kept one


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("skipped", help="print what a crawl did not queue, and why")
    p.add_argument(
        "--data",
        type=Path,
        default=Path("trawl-data"),
        help="data directory of a crawl (default trawl-data)",
    )
    p.add_argument("--reason", help="only this reason (scope, exclude, max_depth, ...)")
    p.add_argument(
        "--limit",
        type=_limit,
        help=f"print at most N skips, newest first (default {HUMAN_LIMIT}; with --json, every"
        " kept one); 0 prints the counts only",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(func=cmd_skipped)


def _limit(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"--limit wants a count >= 0, got {text!r}")
    return value


def cmd_skipped(args: argparse.Namespace) -> int:
    from trawl.store.layout import DB_NAME
    from trawl.store.skips_sqlite import SqliteSkipLog
    from trawl.store.sqlite_db import open_database

    conn = open_database(args.data / DB_NAME, readonly=True)
    try:
        log = SqliteSkipLog(conn)
        counts = log.counts()
        if args.reason is not None:
            counts = {args.reason: counts.get(args.reason, 0)}
        limit = args.limit
        if limit is None:
            limit = log.keep if args.json else HUMAN_LIMIT
        skips = log.recent(limit, args.reason)
    finally:
        conn.close()
    if args.json:
        _print_json(counts, skips)
    else:
        _print_human(counts, skips, args.reason)
    return 0


def _print_json(counts: dict[str, int], skips: list[Skip]) -> None:
    out = sys.stdout
    for reason, count in _by_count(counts):
        out.write(_line({"type": "count", "reason": reason, "count": count}))
    for skip in skips:
        out.write(_line({"type": "skip", **skip.to_json()}))


def _line(obj: dict[str, object]) -> str:
    return json.dumps(obj, separators=(",", ":")) + "\n"


def _by_count(counts: dict[str, int]) -> list[tuple[str, int]]:
    """Largest first; ties by name, so the order is stable."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def _print_human(counts: dict[str, int], skips: list[Skip], reason: str | None) -> None:
    out = sys.stdout
    if not any(counts.values()):
        which = f" for reason {reason!r}" if reason is not None else ""
        out.write(f"nothing skipped{which}\n")
        return
    width = max(len(r) for r in [*counts, "total"])
    out.write("skipped, by reason (whole crawl):\n")
    for name, count in _by_count(counts):
        out.write(f"  {name:<{width}}  {count:>9,}\n")
    if reason is None and len(counts) > 1:
        out.write(f"  {'total':<{width}}  {sum(counts.values()):>9,}\n")
    if not skips:
        return
    out.write(f"most recent {len(skips)}:\n")
    for skip in skips:
        at = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(skip.at))
        line = f"  {at}  {skip.reason:<{width}}  {skip.url}"
        if skip.rule:
            line += f"  rule: {skip.rule}"
        if skip.referrer:
            line += f"  from: {skip.referrer}"
        out.write(line + "\n")
