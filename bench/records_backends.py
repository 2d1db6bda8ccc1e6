"""Page records and the page.fetched outbox: embedded SQLite against PostgreSQL (cluster mode).

Run: python -m bench.records_backends [--records 20000] [--nodes 3] [--dsn DSN]

Without --dsn it starts a throwaway PostgreSQL from the machine's binaries (as the tests do,
but with fsync on: a commit waits for the disk, as in production). Both stores get the same
records (~0.7 KB of JSON each, as the crawler writes them), in one run:

- write: put_page + its event, commit every 200 records (a crawl commits every ~0.5 s);
  records/s and the commit's wall time (it blocks the event loop);
- nodes: `--nodes` processes, each its own connection, writing at once (PostgreSQL only:
  cluster-wide records/s against the design's ~400 pages/s, 800 at peak);
- get_page: random committed pages, one call each (µs);
- events: a follower reading everything in pages of 1000 (events/s).

Prints a markdown table with PostgreSQL/SQLite ratios; saves bench/results/records-backends.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from bench.runinfo import describe_run
from trawl.model import PageFetchedEvent, PageRecord
from trawl.store.postgres_db import open_postgres
from trawl.store.records_postgres import PostgresRecords
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database

if TYPE_CHECKING:
    from collections.abc import Callable

    Records = SqliteRecords | PostgresRecords

COMMIT_EVERY = 200
RESULTS = Path(__file__).parent / "results" / "records-backends.json"


def make_page(n: int, node: int = 0) -> PageRecord:
    rng = random.Random(n * 31 + node)
    site = f"site{rng.randrange(2000)}.test"
    url = f"https://www.{site}/news/2026/11/{n}/an-article-about-{rng.getrandbits(40):x}.html"
    return PageRecord(
        url_hash=f"{node:02x}{n:030x}",
        url=url,
        last_fetched_at=1_796_000_000.0 + n * 0.01,
        http_status=200,
        content_hash=f"{rng.getrandbits(128):032x}",
        simhash=f"{rng.getrandbits(64):016x}",
        etag=f'"{rng.getrandbits(48):x}"',
        last_modified="Mon, 30 Nov 2026 10:00:00 GMT",
        change_rate=rng.random(),
        next_fetch_at=1_796_086_400.0 + rng.random() * 86_400,
        storage_key=f"trawl-20261130-{node:02d}.warc.gz:{n * 24_000}:23917",
        site=site,
        depth=rng.randrange(5),
        content_type="text/html; charset=utf-8",
        last_status=200,
        visits=[[86_400.0, float(rng.random() < 0.5)] for _ in range(rng.randrange(6))],
        body_bytes=98_000,
        warc_record_id=f"<urn:uuid:{rng.getrandbits(128):032x}>",
    )


def write(records: Records, count: int, node: int = 0) -> tuple[float, list[float]]:
    """Seconds to store `count` pages with events, and each commit's seconds."""
    commits = []
    started = time.perf_counter()
    for n in range(count):
        page = make_page(n, node)
        event = PageFetchedEvent(
            page.url, page.url_hash, page.storage_key, page.content_hash, 200, page.last_fetched_at
        )
        records.put_page(page, event)
        if (n + 1) % COMMIT_EVERY == 0 or n + 1 == count:
            t = time.perf_counter()
            records.commit()
            commits.append(time.perf_counter() - t)
    return time.perf_counter() - started, commits


def get_latencies(records: Records, count: int, samples: int = 3000) -> list[float]:
    rng = random.Random(1)
    out = []
    for _ in range(samples):
        url_hash = make_page(0).url_hash[:2] + f"{rng.randrange(count):030x}"
        t = time.perf_counter()
        found = records.get_page(url_hash)
        out.append(time.perf_counter() - t)
        assert found is not None
    return out


def read_all_events(records: Records) -> tuple[int, float]:
    started = time.perf_counter()
    offset, read = 0, 0
    while batch := records.read_events(offset, 1000):
        read += len(batch)
        offset = batch[-1].offset + 1
    return read, time.perf_counter() - started


def measure(records: Records, count: int) -> dict[str, float]:
    seconds, commits = write(records, count)
    gets = get_latencies(records, count)
    events, read_s = read_all_events(records)
    assert events == count
    return {
        "write_records_per_s": count / seconds,
        "commit_ms_p50": statistics.median(commits) * 1000,
        "commit_ms_max": max(commits) * 1000,
        "put_page_us": (seconds - sum(commits)) / count * 1e6,
        "get_page_us_p50": statistics.median(gets) * 1e6,
        "get_page_us_p99": statistics.quantiles(gets, n=100)[98] * 1e6,
        "events_read_per_s": events / read_s,
    }


def node_process(dsn: str, count: int, node: int, start_at: float) -> float:
    records = PostgresRecords(open_postgres(dsn))
    time.sleep(max(0.0, start_at - time.time()))  # all nodes start together
    seconds, _ = write(records, count, node)
    return seconds


def measure_nodes(dsn: str, count: int, nodes: int) -> dict[str, float]:
    """Cluster-wide records/s with `nodes` writer processes at once (each writes count/nodes)."""
    each = count // nodes
    start_at = time.time() + 2.0
    ctx = multiprocessing.get_context("spawn")  # no inherited connection in the children
    with ctx.Pool(nodes) as pool:
        seconds = pool.starmap(node_process, [(dsn, each, 10 + i, start_at) for i in range(nodes)])
    records = PostgresRecords(open_postgres(dsn))
    events, _ = read_all_events(records)
    assert events == count + each * nodes, events  # the single-writer run's events, plus these
    return {"nodes": nodes, "cluster_records_per_s": each * nodes / max(seconds)}


def with_postgres(dsn: str | None, run: Callable[[str], None]) -> None:
    if dsn is not None:
        run(dsn)
        return
    from tests.servers.postgres import temporary_postgres

    with temporary_postgres(fsync=True) as server:
        run(server.dsn)


def table(sqlite: dict[str, float], postgres: dict[str, float]) -> str:
    rows = ["| measure | SQLite | PostgreSQL | PostgreSQL/SQLite |", "|---|---|---|---|"]
    for key, value in sqlite.items():
        rows.append(
            f"| {key} | {value:,.1f} | {postgres[key]:,.1f} | {postgres[key] / value:.2f} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--dsn", help="an empty database (default: start a throwaway server)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = measure(SqliteRecords(open_database(Path(tmp) / "trawl.db")), args.records)
    out: dict[str, object] = {"run": describe_run(), "records": args.records, "sqlite": sqlite}

    def run(dsn: str) -> None:
        with open_postgres(dsn) as conn:
            out["postgres"] = measure(PostgresRecords(conn), args.records)
        out["postgres_nodes"] = measure_nodes(dsn, args.records, args.nodes)

    with_postgres(args.dsn, run)
    postgres = out["postgres"]
    assert isinstance(postgres, dict)
    print(f"{args.records:,} records, commit every {COMMIT_EVERY}; {out['run']}\n")
    print(table(sqlite, postgres))
    nodes = out["postgres_nodes"]
    assert isinstance(nodes, dict)
    print(
        f"\nPostgreSQL, {nodes['nodes']} nodes writing at once:"
        f" {nodes['cluster_records_per_s']:,.0f} records/s cluster-wide"
        " (design: ~400 pages/s, 800 at peak)"
    )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
