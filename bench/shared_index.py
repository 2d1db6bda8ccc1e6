"""What the cluster's shared duplicate index and in-link counts cost per page (issue 19).

Run: python -m bench.shared_index [--pages 20000] [--prefill 100000] [--links-pages 20000]

Two parts, each against its per-node baseline in the same run:

- Fingerprints: the index calls the store step makes for a page, on a node's own SQLite
  index (the per-node baseline) and on the cluster's PostgreSQL one (a throwaway server
  with fsync on, started from the machine's binaries). Both are prefilled with `--prefill`
  main copies; then `--pages` pages go through original_of and, for a new body,
  add_original, near_copy_of and put_simhash (a near copy: note_near_copy, drop_simhash),
  a commit every 200 pages as a crawl's publish does. 10 % of the bodies repeat an earlier
  one, 5 % are near copies. Reported: wall and this process's CPU per page, and the
  PostgreSQL backend's CPU per page (it runs on the same cores in a one-machine cluster).
- In-links: a synthetic web of 3 nodes' sites (each page links 30 pages of its own site and
  5 of other sites) crawled page by page. Per-node counting routes each new URL once (and
  each new referring site); the cluster count also routes a repeat at each power of two of
  the finder's count, and the owner counts every arrival. Reported: links routed per page
  (stream entries' rows), bytes of the encoded batches per page, and the owner's CPU per
  page to count arrivals.

Prints a markdown table; saves bench/results/shared-index.json.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tests.servers.postgres import temporary_postgres

from bench.proc import process_cpu_s
from bench.runinfo import describe_run
from trawl.cluster.link_router import LinkBuffers
from trawl.cluster.partitions import assign, partition_of
from trawl.cluster.redis_links import encode_batch
from trawl.frontier.link_scores import LinkScores
from trawl.model import CrawlUrl, Line
from trawl.store.fingerprints import Original
from trawl.store.fingerprints_postgres import PostgresFingerprints
from trawl.store.fingerprints_sqlite import SqliteFingerprints
from trawl.store.postgres_db import open_postgres
from trawl.store.records_postgres import PostgresRecords
from trawl.store.sqlite_db import open_database
from trawl.urls.normalise import url_hash

if TYPE_CHECKING:
    from collections.abc import Callable

    from trawl.store.ports import Fingerprints

RESULTS = Path(__file__).resolve().parent / "results"
COMMIT_EVERY = 200
PARTITIONS = 1024
NODES = ("n1", "n2", "n3")


def _original(n: int) -> Original:
    return Original(f"{n:032x}", f"http://s{n % 997}.test/{n}", f"k:{n}", f"<urn:{n}>", 1.0, "d")


def _pages(count: int, start: int, rng: random.Random) -> list[tuple[int, str, int]]:
    """(n, content hash, simhash) of the pages to store: some repeat a body, some are near."""
    out: list[tuple[int, str, int]] = []
    for i in range(count):
        n = start + i
        roll = rng.random()
        copy = out and roll < 0.10  # an exact copy of an earlier body
        body = rng.choice(out)[1] if copy else f"{rng.getrandbits(128):032x}"
        if out and 0.10 <= roll < 0.15:
            simhash = rng.choice(out)[2] ^ (1 << rng.randrange(64))  # a near copy
        else:
            simhash = rng.getrandbits(64)
        out.append((n, body, simhash))
    return out


def _prefill(index: Fingerprints, commit: Callable[[], None], count: int, seed: int) -> None:
    rng = random.Random(seed)
    for n in range(count):
        index.add_original(f"{rng.getrandbits(128):032x}", _original(n))
        index.put_simhash(f"{n:032x}", f"http://s{n % 997}.test/{n}", "s.test", rng.getrandbits(64))
        if n % 5000 == 4999:
            commit()
    commit()


def _store(
    index: Fingerprints, commit: Callable[[], None], pages: list[tuple[int, str, int]]
) -> None:
    for i, (n, body, simhash) in enumerate(pages):
        url_hash = f"{n:032x}"
        if index.original_of(body) is None:
            index.add_original(body, _original(n))
            match = index.near_copy_of(simhash, max_distance=3, exclude_url_hash=url_hash)
            if match is None:
                index.put_simhash(url_hash, f"http://s.test/{n}", "s.test", simhash)
            else:
                index.note_near_copy(url_hash, match.url_hash)
                index.drop_simhash(url_hash)
        if i % COMMIT_EVERY == COMMIT_EVERY - 1:
            commit()
    commit()


def _timed(run: Callable[[], None]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def fingerprints(pages: int, prefill: int, dsn: str, tmp: Path) -> dict[str, dict[str, float]]:
    todo = _pages(pages, prefill, random.Random(7))
    conn = open_database(tmp / "trawl.db")
    local = SqliteFingerprints(conn)

    def commit_local() -> None:
        if conn.in_transaction:
            conn.execute("COMMIT")

    _prefill(local, commit_local, prefill, 1)
    wall, cpu = _timed(lambda: _store(local, commit_local, todo))
    out = {"sqlite": {"wall_ms": wall * 1e3 / pages, "cpu_ms": cpu * 1e3 / pages, "db_cpu_ms": 0.0}}
    pg_conn = open_postgres(dsn)
    records = PostgresRecords(pg_conn)
    shared = PostgresFingerprints(records)
    _prefill(shared, records.commit, prefill, 1)
    pid = int(records.query("SELECT pg_backend_pid()", ())[0][0])
    pg_cpu = process_cpu_s(pid)
    wall, cpu = _timed(lambda: _store(shared, records.commit, todo))
    pg_cpu = process_cpu_s(pid) - pg_cpu
    out["postgres"] = {
        "wall_ms": wall * 1e3 / pages,
        "cpu_ms": cpu * 1e3 / pages,
        "db_cpu_ms": pg_cpu * 1e3 / pages,
    }
    records.close()
    return out


def _web(pages_per_site: int, sites: int, rng: random.Random) -> list[tuple[str, list[str]]]:
    """(site, [linked urls]) of every page, in a crawl's mixed order."""
    out = []
    for s in range(sites):
        site = f"s{s}.test"
        nav = [f"http://{site}/{p}" for p in rng.sample(range(pages_per_site), 30)]
        for _ in range(pages_per_site):
            others = [f"http://s{rng.randrange(sites)}.test/{rng.randrange(pages_per_site)}"
                      for _ in range(5)]  # fmt: skip
            out.append((site, nav + others))
    rng.shuffle(out)
    return out


def inlinks(pages: int, tmp: Path) -> dict[str, dict[str, float]]:
    rng = random.Random(3)
    web = _web(100, max(pages // 100, 3), rng)
    owner = assign(PARTITIONS, NODES)
    out: dict[str, dict[str, float]] = {}
    for mode in ("per-node", "cluster"):
        finders = {node: LinkScores(tmp / f"{mode}-{node}.bin") for node in NODES}
        owners = {
            node: LinkScores(tmp / f"{mode}-own-{node}.bin", counts_arrive=True) for node in NODES
        }
        routers = {node: LinkBuffers(PARTITIONS, sent_capacity=1_000_000) for node in NODES}
        routed = encoded = 0
        count_s = 0.0
        for i, (site, links) in enumerate(web):
            node = owner[partition_of(site, PARTITIONS)]
            hashes = [url_hash(u) for u in links]
            sites = [u.split("/")[2] for u in links]
            counts = finders[node].counter.add_page_links(site, hashes, sites)
            for url, h, target, (n, _) in zip(links, hashes, sites, counts, strict=True):
                item = CrawlUrl(url, h, target, 1, Line.FAST, 0.0)
                referrer = site if target != site else ""
                weight = LinkScores.route_weight(n) if mode == "cluster" else 0
                routers[node].route(item, must_crawl=False, referrer=referrer, pages=weight)
            if i % 200 == 199 or i == len(web) - 1:
                for router in routers.values():
                    for partition, batch in router.take().items():
                        routed += len(batch)
                        encoded += len(encode_batch(batch))
                        if mode != "cluster":
                            continue
                        scores = owners[owner[partition]]
                        started = time.process_time()
                        for link in batch:
                            scores.count_arrival(link.url_hash, link.pages, link.referrer)
                        count_s += time.process_time() - started
        out[mode] = {
            "routed_per_page": routed / len(web),
            "bytes_per_page": encoded / len(web),
            "owner_cpu_ms": count_s * 1e3 / len(web),
        }
    return out


def _row(what: str, base: float | None, new: float, digits: int) -> str:
    if base is None:
        return f"| {what} | - | {new:.{digits}f} | |"
    return f"| {what} | {base:.{digits}f} | {new:.{digits}f} | {new / base:.2f}x |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--prefill", type=int, default=100_000)
    parser.add_argument("--links-pages", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, temporary_postgres(fsync=True) as server:
        prints = fingerprints(args.pages, args.prefill, server.dsn, Path(tmp))
        links = inlinks(args.links_pages, Path(tmp))
    s, p = prints["sqlite"], prints["postgres"]
    a, b = links["per-node"], links["cluster"]
    lines = [
        "| fingerprint index, per page | per-node (SQLite) | cluster (PostgreSQL) | ratio |",
        "|---|---|---|---|",
        _row("wall ms", s["wall_ms"], p["wall_ms"], 3),
        _row("crawl process CPU ms", s["cpu_ms"], p["cpu_ms"], 3),
        _row("database server CPU ms", None, p["db_cpu_ms"], 3),
        "",
        "| in-links, per page | per-node | cluster | ratio |",
        "|---|---|---|---|",
        _row("links routed", a["routed_per_page"], b["routed_per_page"], 2),
        _row("stream bytes", a["bytes_per_page"], b["bytes_per_page"], 0),
        _row("owner CPU ms counting arrivals", None, b["owner_cpu_ms"], 3),
    ]
    print("\n".join(lines))
    RESULTS.mkdir(exist_ok=True)
    result = {"run": describe_run(), "fingerprints": prints, "inlinks": links, "args": vars(args)}
    (RESULTS / "shared-index.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
