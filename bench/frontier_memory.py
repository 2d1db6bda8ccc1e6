"""RSS of a process holding the disk-backed frontier and the seen set, per queued URL.

    python -m bench.frontier_memory            # 1 M, then 10 M queued URLs (a few minutes)
    python -m bench.frontier_memory --quick    # 1 M, then 2 M
    python -m bench.frontier_memory --urls 3000000 --sites 100000 --dir /var/tmp

How this works. One process opens a fresh trawl database in a temporary directory, builds a
`SqliteFrontier` over it and a `SeenSet` whose Bloom filter is sized for the whole run (1 % false
positives), then enqueues unique URLs in batches of `--batch`, committing after each batch as
the crawl loop does. Every URL goes through `SeenSet.add_if_new` first and is queued only when
new, so Bloom false positives are counted, not queued. RSS (VmRSS) and its peak (VmHWM) are
read from /proc/self/status before the first URL and at each milestone.

URLs are built by string formatting on a Zipf-skewed choice of sites and hashed with
`url_hash` (hashlib SHA-256); `normalise_url` is NOT called, since 10 M calls would take
minutes and this bench is about memory (bench/seen_rate.py times the per-link path).

Baseline, in the same run: a child process holds 1 M `CrawlUrl` objects in a Python list
(what an in-memory frontier would keep) and 1 M urlHash strings in a Python set (an exact
in-memory seen set); its RSS growth per URL is set against the disk-backed figures.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.runinfo import describe_run
from trawl.frontier.queue_sqlite import SqliteFrontier
from trawl.model import CrawlUrl, Line
from trawl.seen.seen_set import SeenSet
from trawl.store.sqlite_db import open_database
from trawl.urls.normalise import url_hash

RESULTS = Path(__file__).parent / "results" / "frontier_memory.json"
MILLION = 1_000_000
ISSUE_TARGET_BYTES_PER_URL = 100
SECTIONS = ("news", "world", "sport", "tech", "blog", "shop", "docs", "forum")


@dataclass(frozen=True, slots=True)
class Memory:
    """The process's memory as /proc/self/status reports it, in bytes."""

    rss: int
    hwm: int
    rss_anon: int
    rss_file: int
    rss_shmem: int


@dataclass(frozen=True, slots=True)
class Milestone:
    queued: int
    sites: int
    memory: Memory
    enqueue_s: float  # seen check + enqueue + commits, cumulative
    generate_s: float  # building URLs, hashes and CrawlUrl values, cumulative
    bloom_false_positives: int


def read_memory() -> Memory:
    fields: dict[str, int] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if value.strip().endswith("kB"):
            fields[key] = int(value.split()[0]) * 1024
    return Memory(
        fields["VmRSS"], fields["VmHWM"], fields["RssAnon"], fields["RssFile"], fields["RssShmem"]
    )


def measured_memory() -> Memory:
    gc.collect()  # so garbage from the last batch is not counted as frontier memory
    return read_memory()


class UrlSource:
    """Unique URLs on Zipf-skewed sites, made by string formatting (no normaliser)."""

    def __init__(self, n_sites: int, zipf_s: float, seed: int) -> None:
        self._rng = random.Random(seed)
        self._sites = [f"site{k}.example.com" for k in range(n_sites)]
        weights = [1.0 / (rank + 1) ** zipf_s for rank in range(n_sites)]
        self._cum_weights = list(itertools.accumulate(weights))
        self._next = 0

    def batch(self, n: int, now: float) -> list[CrawlUrl]:
        picks = self._rng.choices(self._sites, cum_weights=self._cum_weights, k=n)
        out: list[CrawlUrl] = []
        for site in picks:
            i = self._next
            self._next += 1
            url = (
                f"https://www.{site}/{SECTIONS[i & 7]}/2026/{i:09d}/story-{i * 7919 % 100003}.html"
            )
            out.append(CrawlUrl(url, url_hash(url), site, 1 + (i & 3), Line(i & 1), now))
        return out


def fill(
    frontier: SqliteFrontier,
    seen: SeenSet,
    source: UrlSource,
    conn: sqlite3.Connection,
    target: int,
    batch: int,
    clock: Stopwatch,
) -> int:
    """Enqueue new URLs until `target` are queued; returns the Bloom false positives met."""
    false_positives = 0
    while (missing := target - frontier.queued()) > 0:
        t0 = time.perf_counter()
        items = source.batch(min(batch, missing), time.time())
        t1 = time.perf_counter()
        for item in items:
            if seen.add_if_new(item.url_hash):
                frontier.enqueue(item)
            else:
                false_positives += 1  # every URL is unique: "seen" can only be a false positive
        # the frontier writes into the open transaction; the crawl loop commits per page
        if conn.in_transaction:
            conn.execute("COMMIT")
        t2 = time.perf_counter()
        clock.enqueue_s += t2 - t1
        clock.generate_s += t1 - t0
    return false_positives


@dataclass(slots=True)
class Stopwatch:
    enqueue_s: float = 0.0
    generate_s: float = 0.0


def sqlite_settings(conn: sqlite3.Connection) -> dict[str, int | str]:
    out: dict[str, int | str] = {"sqlite_version": sqlite3.sqlite_version}
    for pragma in ("cache_size", "page_size", "mmap_size", "wal_autocheckpoint", "journal_mode"):
        out[pragma] = conn.execute(f"PRAGMA {pragma}").fetchone()[0]
    return out


def file_sizes(db: Path) -> dict[str, int]:
    return {
        suffix or "db": Path(f"{db}{suffix}").stat().st_size
        for suffix in ("", "-wal", "-shm")
        if Path(f"{db}{suffix}").exists()
    }


@dataclass(frozen=True, slots=True)
class FrontierRun:
    start: Memory
    milestones: list[Milestone]
    bloom_bytes: int
    db_files_bytes: dict[str, int]
    db_files_bytes_after_checkpoint: dict[str, int]
    sqlite: dict[str, int | str]


def run_frontier(args: argparse.Namespace, workdir: Path) -> FrontierRun:
    db = workdir / "trawl.db"
    conn = open_database(db)
    frontier = SqliteFrontier(conn, lease_s=300.0, fast_share=0.8)
    seen = SeenSet(conn, workdir / "seen.bloom", capacity=args.urls, fp_rate=0.01)
    source = UrlSource(args.sites, args.zipf, seed=7)
    start = measured_memory()
    clock = Stopwatch()
    milestones: list[Milestone] = []
    fps = 0
    for target in (min(MILLION, args.urls // 2), args.urls):
        fps += fill(frontier, seen, source, conn, target, args.batch, clock)
        mem = measured_memory()
        sites = frontier.stats().sites
        queued = frontier.queued()
        milestones.append(Milestone(queued, sites, mem, clock.enqueue_s, clock.generate_s, fps))
        print(
            f"  {queued:>11,} queued: RSS {mem.rss / 2**20:8.1f} MiB, {sites:,} sites", flush=True
        )
    sizes = file_sizes(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    run = FrontierRun(
        start, milestones, seen.size_bytes, sizes, file_sizes(db), sqlite_settings(conn)
    )
    conn.close()
    return run


# -- baseline: the same URLs held as Python objects -------------------------------------------
def baseline_child(n: int) -> dict[str, float]:
    """Per-URL RSS growth of a list of CrawlUrl and of a set of urlHash strings (child only)."""
    source = UrlSource(100_000, 1.0, seed=7)
    before = measured_memory().rss
    held: list[CrawlUrl] = []
    for _ in range(0, n, 10_000):
        held.extend(source.batch(10_000, time.time()))
    after_list = measured_memory().rss
    hashes = {item.url_hash for item in held}
    after_set = measured_memory().rss
    # the set shares the hash strings with the list, so its growth is the table alone;
    # an exact seen set holds its own strings: add their cost (str of 32 ASCII chars).
    str_bytes = sys.getsizeof(held[0].url_hash)
    return {
        "urls": float(len(held)),
        "list_of_crawlurl_bytes_per_url": (after_list - before) / len(held),
        "set_of_hashes_bytes_per_url": (after_set - after_list) / len(hashes) + str_bytes,
    }


def run_baseline(n: int) -> dict[str, float]:
    # As a module from the repository's root: run as a file, `bench` is not importable.
    out = subprocess.run(
        [sys.executable, "-m", "bench.frontier_memory", "--baseline-child", str(n)],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result: dict[str, float] = json.loads(out)
    return result


# -- report -----------------------------------------------------------------------------------
def describe(args: argparse.Namespace) -> dict[str, str]:
    url_source = "string formatting + url_hash (sha256); normalise_url not called"
    return {**describe_run(), "url_source": url_source}


def summarise(run: FrontierRun, baseline: dict[str, float]) -> dict[str, float]:
    first, last = run.milestones[0], run.milestones[-1]
    extra = last.queued - first.queued
    per_url = (last.memory.rss - first.memory.rss) / extra
    in_memory = baseline["list_of_crawlurl_bytes_per_url"] + baseline["set_of_hashes_bytes_per_url"]
    return {
        "first_milestone": first.queued,
        "last_milestone": last.queued,
        "rss_bytes_per_url_beyond_first": per_url,
        "hwm_bytes_per_url_beyond_first": (last.memory.hwm - first.memory.hwm) / extra,
        "anon_bytes_per_url_beyond_first": (last.memory.rss_anon - first.memory.rss_anon) / extra,
        "issue_target_bytes_per_url": ISSUE_TARGET_BYTES_PER_URL,
        "meets_target": float(per_url <= ISSUE_TARGET_BYTES_PER_URL),
        "enqueue_us_per_url": last.enqueue_s / last.queued * 1e6,
        "enqueue_us_per_url_first": first.enqueue_s / first.queued * 1e6,
        "enqueue_us_per_url_beyond_first": (last.enqueue_s - first.enqueue_s) / extra * 1e6,
        "sites_added_beyond_first": last.sites - first.sites,
        "generate_us_per_url": last.generate_s / last.queued * 1e6,
        "db_bytes_per_url": run.db_files_bytes_after_checkpoint["db"] / last.queued,
        "in_memory_bytes_per_url": in_memory,
        "in_memory_over_disk_backed": in_memory / per_url if per_url > 0 else float("inf"),
    }


def print_table(run: FrontierRun) -> None:
    mib = 2**20
    print(f"\n{'queued':>12} {'sites':>8} {'VmRSS MiB':>10} {'VmHWM MiB':>10} {'RssAnon MiB':>12}")
    rows = [(0, 0, run.start), *((m.queued, m.sites, m.memory) for m in run.milestones)]
    for queued, sites, mem in rows:
        print(
            f"{queued:>12,} {sites:>8,} {mem.rss / mib:>10.1f} {mem.hwm / mib:>10.1f}"
            f" {mem.rss_anon / mib:>12.1f}"
        )


def print_report(about: dict[str, str], run: FrontierRun, s: dict[str, float]) -> None:
    print(f"\ncommand: {about['command']}  commit: {about['commit']}")
    print(f"machine: {about['machine']}\nURLs: {about['url_source']}")
    print_table(run)
    print(f"\nBloom filter (sized for the run, 1 % fp): {run.bloom_bytes / 2**20:.1f} MiB")
    print(f"Bloom false positives met (not queued): {run.milestones[-1].bloom_false_positives:,}")
    print(f"SQLite settings: {run.sqlite}")
    print(f"DB files at the end: {run.db_files_bytes}")
    print(f"DB files after wal_checkpoint(TRUNCATE): {run.db_files_bytes_after_checkpoint}")
    verdict = "meets" if s["meets_target"] else "MISSES"
    print(
        f"\nRSS per queued URL from {s['first_milestone']:,.0f} to {s['last_milestone']:,.0f}: "
        f"{s['rss_bytes_per_url_beyond_first']:.1f} B ({verdict} the "
        f"{s['issue_target_bytes_per_url']:.0f} B target); "
        f"VmHWM: {s['hwm_bytes_per_url_beyond_first']:.1f} B"
    )
    print(f"  (that growth includes {s['sites_added_beyond_first']:,.0f} new site slots)")
    print(f"DB file per queued URL: {s['db_bytes_per_url']:.0f} B")
    print(
        f"time per URL: enqueue (seen check + insert + commit) {s['enqueue_us_per_url']:.1f} us"
        f" (first milestone {s['enqueue_us_per_url_first']:.1f} us, after it"
        f" {s['enqueue_us_per_url_beyond_first']:.1f} us); generating it"
        f" {s['generate_us_per_url']:.1f} us"
    )
    print(
        f"baseline, Python objects (list of CrawlUrl + set of urlHash): "
        f"{s['in_memory_bytes_per_url']:.0f} B/URL; per-URL Python objects vs disk-backed: "
        f"{s['in_memory_over_disk_backed']:.0f}x"
    )


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--urls", type=int, default=10 * MILLION, help="last milestone (default 10 M)")
    p.add_argument("--quick", action="store_true", help="milestones 1 M and 2 M")
    p.add_argument("--sites", type=int, default=100_000, help="sites (default 100,000)")
    p.add_argument("--zipf", type=float, default=1.0, help="site skew exponent (default 1.0)")
    p.add_argument("--batch", type=int, default=10_000, help="URLs per commit (default 10,000)")
    p.add_argument("--baseline-urls", type=int, default=MILLION, help="URLs held in the baseline")
    p.add_argument("--dir", type=Path, default=None, help="parent of the temporary database")
    p.add_argument("--baseline-child", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.quick:
        args.urls = 2 * MILLION
    if args.urls < 2:
        p.error("--urls must be at least 2")
    return args


def main() -> None:
    args = parse_args()
    if args.baseline_child:
        print(json.dumps(baseline_child(args.baseline_child)))
        return
    about = describe(args)
    print(f"baseline: {args.baseline_urls:,} URLs as Python objects in a child process", flush=True)
    baseline = run_baseline(args.baseline_urls)
    print(f"frontier: filling to {args.urls:,} queued URLs on {args.sites:,} sites", flush=True)
    with tempfile.TemporaryDirectory(prefix="trawl-frontier-bench-", dir=args.dir) as tmp:
        frontier = run_frontier(args, Path(tmp))
    summary = summarise(frontier, baseline)
    print_report(about, frontier, summary)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "about": about,
        "frontier": asdict(frontier),
        "baseline": baseline,
        "summary": summary,
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {RESULTS}")


if __name__ == "__main__":
    main()
