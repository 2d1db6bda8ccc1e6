"""What a site's state costs in memory, and what leaving memory and coming back costs.

    python -m bench.site_memory [--sites 50000]

A broad crawl loads a `SiteState` for every site a page links to (its referrers are
counted) and for every site it fetches (robots rules, clock, trap and duplicate counters).
This loads `--sites` of each of the first two kinds, and a fiftieth as many fetched sites
with a large site's robots.txt, into a SiteBook over a real SQLite record store; measures
the memory they hold (tracemalloc); then drops them all as idle (`forget_idle`: host record
written, then dropped), commits, and reads each back (`state`): the per-site price of
`crawl.site_idle_s` (loop.idle_sites).
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
import tracemalloc
from pathlib import Path

from trawl.frontier.traps import TrapPolicy
from trawl.politeness.robots import robots_from_response
from trawl.politeness.site_book import SiteBook
from trawl.politeness.site_clock import ClockPolicy, FetchOutcome
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database

POLICY = ClockPolicy(min_delay_s=1.0)
# A common shape: a few groups, a dozen rules, a sitemap line (~600 bytes).
ROBOTS = (
    b"User-agent: *\nDisallow: /cart/\nDisallow: /checkout/\nDisallow: /search\n"
    b"Disallow: /*?sort=\nDisallow: /*?filter=\nAllow: /search/help\nDisallow: /account/\n"
    b"Disallow: /private/\nDisallow: /tmp/\nCrawl-delay: 2\n\n"
    b"User-agent: BadBot\nDisallow: /\n\nUser-agent: Googlebot\nDisallow: /nogoogle/\n\n"
    b"Sitemap: https://www.example.com/sitemap.xml\n"
)
# A large site's: 31 groups, 640 rules, ~23 KB (trawl obeys the `*` group's 40).
BIG_ROBOTS = (
    "".join(
        f"User-agent: bot{a}\n"
        + "".join(f"Disallow: /section{r}/private-{a}/*?q=\n" for r in range(20))
        + "\n"
        for a in range(30)
    )
    + "User-agent: *\n"
    + "".join(f"Disallow: /path{r}/\n" for r in range(40))
).encode()
KINDS = {"linked": b"", "fetched": ROBOTS, "bigrobots": BIG_ROBOTS}


def load(book: SiteBook, kind: str, n: int, now: float) -> list[str]:
    names = [f"{kind}{i:07d}.example" for i in range(n)]
    for i, site in enumerate(names):
        if kind == "linked":  # only linked to: a referrer or three
            for r in range(3):
                book.note_referrer(site, f"fan{(i + r) % 997}.example")
            continue
        state = book.state(site)
        robots = robots_from_response(f"https://www.{site}", 200, KINDS[kind], now)
        state.set_robots(robots, "trawl")
        robots.is_allowed(f"https://www.{site}/", "trawl")
        for k in range(5):  # five pages fetched
            state.clock.start(now + k * 5)
            state.clock.finish(now + k * 5 + 0.3, 0.3, FetchOutcome.OK, policy=POLICY)
            state.count_page(now + k * 5)
            state.note_content(is_copy=False)
        book.note_referrer(site, "fan1.example")
    return names


def traced(fn):  # type: ignore[no-untyped-def]
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    out = fn()
    elapsed = time.perf_counter() - started
    gc.collect()
    return out, tracemalloc.get_traced_memory()[0] - before, elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sites", type=int, default=50_000, help="sites of each kind")
    args = ap.parse_args()
    n = args.sites
    now = [time.time()]
    with tempfile.TemporaryDirectory() as tmp:
        conn = open_database(Path(tmp) / "trawl.db")
        records = SqliteRecords(conn)
        book = SiteBook(
            records,
            clock_policy=POLICY,
            trap_policy=TrapPolicy(),
            restarted_at=lambda site: None,
            owner="bench",
            now=lambda: now[0],
        )
        tracemalloc.start()
        for kind in KINDS:
            m = n if kind != "bigrobots" else max(1, n // 50)
            _names, grew, _load_s = traced(lambda k=kind, m=m: load(book, k, m, now[0]))
            print(f"{kind:9} {m:,} sites: {grew / m:,.0f} B a site in memory")
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        later = now[0] + 3_600.0
        names = list(book)
        started = time.perf_counter()
        assert book.forget_idle(names, now[0] + 60.0, 600.0, lambda site: False) == 0
        scan_s = time.perf_counter() - started
        started = time.perf_counter()
        dropped = book.forget_idle(names, later, 600.0, lambda site: False)
        forget_s = time.perf_counter() - started
        started = time.perf_counter()
        records.commit()
        commit_s = time.perf_counter() - started
        assert dropped == len(names)
        assert len(book) == 0
        now[0] = later
        started = time.perf_counter()
        for site in names:
            book.state(site)
        reload_s = time.perf_counter() - started
        size = (Path(tmp) / "trawl.db").stat().st_size + (Path(tmp) / "trawl.db-wal").stat().st_size
        conn.close()
    total = len(names)
    print(f"held by the book: {held / 2**20:,.1f} MiB for {total:,} sites")
    print(f"a sweep that drops none: {scan_s / total * 1e6:.2f} us a site")
    print(
        f"forget_idle: {forget_s / total * 1e6:.1f} us a site (host record written), "
        f"commit {commit_s:.2f} s ({commit_s / total * 1e6:.1f} us a site)"
    )
    print(
        f"read back: {reload_s / total * 1e6:.1f} us a site; database {size / total:,.0f} B a site"
    )


if __name__ == "__main__":
    main()
