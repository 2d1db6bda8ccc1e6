"""WARC chunks in object storage: a real S3 server (SeaweedFS) against the local directory.

    python -m bench.blob_stores [--pool 600] [--reps 4] [--reads 400]

The workload is one node's: 400 pages/s, each ~100 KB of HTML encoded into a WARC response
record of ~25 KB gzip (trawl's own encoder), collected by `WarcChunkWriter` and flushed every
0.5, 1, 2 or 5 s, so each flush uploads one chunk of 200 to 2,000 records (5 to 50 MB).
For each flush interval and store it times `flush()` (join, checksum, PUT or write + fsync +
rename) and reports upload MB/s and the share of one thread the uploads would keep busy at
that rate. Then it reads random records back by storage key: `get_range` alone and
`read_record_from_blobs` (range GET + gunzip + parse), p50/p95.

Both stores run in the same run, interleaved, on the same disk. SeaweedFS (`weed mini`, one
process) shares the machine's cores with this script, and the local store's reads come from
the page cache, so the figures are lower bounds for a separate S3 server and its disks.
Writes a markdown table to stdout and bench/results/blob-stores.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tests.servers.s3 import running_seaweedfs

from bench.runinfo import describe_run
from bench.warc_bench import html_body
from trawl.store.blobs_local import LocalBlobStore
from trawl.store.blobs_s3 import S3BlobStore
from trawl.store.warc_chunks import WarcChunkWriter, parse_chunk_key, read_record_from_blobs
from trawl.store.warc_record import encode_response_record

if TYPE_CHECKING:
    from trawl.store.blobs import BlobStore
    from trawl.store.warc_record import EncodedRecord

RESULTS = Path(__file__).parent / "results" / "blob-stores.json"
PAGES_PER_S = 400
FLUSH_INTERVALS_S = (0.5, 1.0, 2.0, 5.0)
BODY_BYTES = 100_000
MB = 1e6
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n\r\n"


def make_records(count: int) -> list[EncodedRecord]:
    rng = random.Random(7)
    records = []
    for n in range(count):
        body = html_body(rng, BODY_BYTES)
        records.append(
            encode_response_record(
                url=f"https://www.example.test/news/{n}.html",
                fetched_at=1_796_000_000.0 + n,
                ip="127.0.0.1",
                http_head=HEAD % len(body),
                payload=body,
                truncated=False,
            )
        )
    return records


def time_flushes(
    writer: WarcChunkWriter, pool: list[EncodedRecord], per_chunk: int, keys: list[str]
) -> tuple[float, int]:
    """Append one chunk's records, then time the flush; returns (seconds, bytes)."""
    start = random.randrange(len(pool))
    for i in range(per_chunk):
        keys.append(writer.append(pool[(start + i) % len(pool)]))
    t = time.perf_counter()
    batch = writer.flush()
    return time.perf_counter() - t, batch.size


def upload_rows(
    stores: dict[str, BlobStore], pool: list[EncodedRecord], reps: int
) -> tuple[list[dict[str, float | str]], dict[str, list[str]]]:
    rows: list[dict[str, float | str]] = []
    keys: dict[str, list[str]] = {name: [] for name in stores}
    writers = {name: WarcChunkWriter(s, node_id="bench") for name, s in stores.items()}
    for name in stores:  # warm-up: SeaweedFS grows the bucket's volumes on its first write
        time_flushes(writers[name], pool, 50, [])
    for interval in FLUSH_INTERVALS_S:
        per_chunk = round(PAGES_PER_S * interval)
        times: dict[str, list[float]] = {name: [] for name in stores}
        sizes: dict[str, int] = dict.fromkeys(stores, 0)
        for rep in range(reps):
            order = list(stores) if rep % 2 == 0 else list(reversed(stores))
            for name in order:
                seconds, size = time_flushes(writers[name], pool, per_chunk, keys[name])
                times[name].append(seconds)
                sizes[name] += size
        for name in stores:
            total_s = sum(times[name])
            rows.append(
                {
                    "store": name,
                    "flush_interval_s": interval,
                    "records_per_chunk": per_chunk,
                    "chunk_mb": sizes[name] / reps / MB,
                    "flush_p50_ms": statistics.median(times[name]) * 1000,
                    "flush_max_ms": max(times[name]) * 1000,
                    "upload_mb_per_s": sizes[name] / total_s / MB,
                    "busy_share": statistics.median(times[name]) / interval,
                }
            )
    return rows, keys


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def read_rows(
    stores: dict[str, BlobStore], keys: dict[str, list[str]], reads: int
) -> list[dict[str, float | str]]:
    rows: list[dict[str, float | str]] = []
    rng = random.Random(11)
    for name, store in stores.items():
        sample = rng.sample(keys[name], min(reads, len(keys[name])))
        raw, full = [], []
        for key in sample:
            sk = parse_chunk_key(key)
            t = time.perf_counter()
            store.get_range(sk.file, sk.offset, sk.length)
            raw.append(time.perf_counter() - t)
            t = time.perf_counter()
            read_record_from_blobs(store, key)
            full.append(time.perf_counter() - t)
        rows.append(
            {
                "store": name,
                "reads": len(sample),
                "get_range_p50_ms": percentile(raw, 0.5) * 1000,
                "get_range_p95_ms": percentile(raw, 0.95) * 1000,
                "read_record_p50_ms": percentile(full, 0.5) * 1000,
                "read_record_p95_ms": percentile(full, 0.95) * 1000,
            }
        )
    return rows


def print_report(
    about: dict[str, str],
    uploads: list[dict[str, float | str]],
    reads: list[dict[str, float | str]],
) -> None:
    print(f"command: {about['command']}  commit: {about['commit']}\nmachine: {about['machine']}\n")
    print(
        "| store | flush every | records/chunk | chunk MB | flush p50 ms | flush max ms "
        "| upload MB/s | busy share |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in uploads:
        print(
            f"| {r['store']} | {r['flush_interval_s']} s | {r['records_per_chunk']} "
            f"| {r['chunk_mb']:.1f} | {r['flush_p50_ms']:.0f} | {r['flush_max_ms']:.0f} "
            f"| {r['upload_mb_per_s']:.0f} | {r['busy_share']:.1%} |"
        )
    print("\n| store | reads | get_range p50 ms | p95 ms | read_record p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|")
    for r in reads:
        print(
            f"| {r['store']} | {r['reads']} | {r['get_range_p50_ms']:.2f} "
            f"| {r['get_range_p95_ms']:.2f} | {r['read_record_p50_ms']:.2f} "
            f"| {r['read_record_p95_ms']:.2f} |"
        )


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pool", type=int, default=600, help="distinct records to cycle through")
    p.add_argument("--reps", type=int, default=4, help="flushes per interval and store")
    p.add_argument("--reads", type=int, default=400, help="records read back per store")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    about = describe_run()
    pool = make_records(args.pool)
    record_kb = statistics.mean(len(r.data) for r in pool) / 1000
    print(f"{len(pool)} records of {BODY_BYTES // 1000} KB HTML, {record_kb:.1f} KB gzipped each")
    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="trawl-blobs-")))
        (workdir / "s3").mkdir()
        server = stack.enter_context(running_seaweedfs(workdir / "s3"))
        s3 = stack.enter_context(S3BlobStore(server.bucket_named("bench")))
        stores: dict[str, BlobStore] = {"local": LocalBlobStore(workdir / "local"), "s3": s3}
        uploads, keys = upload_rows(stores, pool, args.reps)
        reads = read_rows(stores, keys, args.reads)
    print_report(about, uploads, reads)
    result = {
        "about": about,
        "workload": {"pages_per_s": PAGES_PER_S, "record_kb": record_kb, "pool": len(pool)},
        "uploads": uploads,
        "reads": reads,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {RESULTS}")


if __name__ == "__main__":
    main()
