"""Per-page CPU of issue 14's archive records: a response alone (before) against a response
with its CDXJ entry, the request record that names it, and the CDXJ line (after).

Run: python -m bench.capture_bench [--records 400] [--body-kb 30]

Encodes the same HTML bodies both ways (trawl's default codec and level) and prints the
median microseconds per page of each part, the added cost and the ratio, with the command,
commit and machine. The request head is the ~220-byte head trawl's fetcher sends.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from bench.warc_bench import FETCHED_AT, URL, html_body, http_head
from trawl.store.cdxj import cdx_entry, cdx_line
from trawl.store.warc_record import (
    encode_request_record,
    encode_response_record,
    new_record_id,
)

if TYPE_CHECKING:
    from collections.abc import Callable

REQUEST_HEAD = (
    b"GET /news/2026/11/30/some-article-1.html HTTP/1.1\r\nHost: www.example.test\r\n"
    b"User-Agent: trawl/0.1.0 (+https://crawler.example.org/about)\r\n"
    b"Accept: text/html,application/xhtml+xml;q=0.9,*/*;q=0.1\r\n"
    b'Accept-Encoding: gzip, deflate, br\r\nIf-None-Match: "abc123"\r\n\r\n'
)


def before(n: int, head: bytes, body: bytes) -> int:
    record = encode_response_record(
        url=URL.format(n=n), fetched_at=FETCHED_AT, ip="127.0.0.1", http_head=head,
        payload=body, truncated=False,
    )  # fmt: skip
    return len(record.data)


def after(n: int, head: bytes, body: bytes) -> int:
    request_id = new_record_id()
    record = encode_response_record(
        url=URL.format(n=n), fetched_at=FETCHED_AT, ip="127.0.0.1", http_head=head,
        payload=body, truncated=False, concurrent_to=request_id,
    )  # fmt: skip
    request = encode_request_record(
        url=URL.format(n=n), fetched_at=FETCHED_AT, ip="127.0.0.1", request_head=REQUEST_HEAD,
        concurrent_to=record.record_id, record_id=request_id,
    )  # fmt: skip
    assert record.cdx is not None
    line = cdx_line(record.cdx, offset=n * 1000, length=len(record.data), filename="f.warc.gz")
    return len(record.data) + len(request.data) + len(line)


def added_only(n: int, head: bytes, body: bytes) -> int:
    """Just the new work, timed on its own (the difference above is noisy on a busy box)."""
    request = encode_request_record(
        url=URL.format(n=n), fetched_at=FETCHED_AT, ip="127.0.0.1", request_head=REQUEST_HEAD,
        concurrent_to="<urn:uuid:x>",
    )  # fmt: skip
    entry = cdx_entry(
        url=URL.format(n=n), warc_date="2026-11-30T05:00:00Z", http_head=head, digest="sha1:X",
        revisit=False,
    )  # fmt: skip
    line = cdx_line(entry, offset=n * 1000, length=12345, filename="f.warc.gz")
    return len(request.data) + len(line)


def time_us(fn: Callable[[int, bytes, bytes], int], pages: list[tuple[bytes, bytes]]) -> float:
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for n, (head, body) in enumerate(pages):
            fn(n, head, body)
        runs.append((time.perf_counter() - t0) / len(pages) * 1e6)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=400)
    ap.add_argument("--body-kb", type=int, default=30)
    args = ap.parse_args()
    rng = random.Random(14)
    pages = []
    for _ in range(args.records):
        body = html_body(rng, args.body_kb * 1024)
        pages.append((http_head(len(body)), body))
    time_us(after, pages[:20])  # warm up
    old, new = time_us(before, pages), time_us(after, pages)
    parts = time_us(added_only, pages)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(f"$ python -m bench.capture_bench {' '.join(sys.argv[1:])}".rstrip())
    machine = platform.processor() or platform.machine()
    print(f"commit {commit}  {machine}  Python {platform.python_version()}")
    print(f"{args.records} pages of {args.body_kb} KB HTML, median of 5 runs, per page:")
    print(f"  response only (before)              {old:8.1f} us")
    print(f"  response + request + CDXJ (after)   {new:8.1f} us")
    print(f"  added                               {new - old:8.1f} us  ({new / old:.3f}x)")
    print(f"  request record + CDXJ entry alone   {parts:8.1f} us  ({parts / old:.1%} of before)")


if __name__ == "__main__":
    main()
