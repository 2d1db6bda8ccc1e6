"""WARC response-record encoding: warcio's writer against trawl's encoder at several levels.

Run: python bench/warc_bench.py [--records 300] [--body-kb 100]

For each variant it encodes the same ~100 KB HTML bodies, prints microseconds per record,
throughput and compression ratio (uncompressed record bytes / gzip bytes), then writes the
records to a file and checks that warcio (check_digests="raise") and FastWARC
(verify_digests=True) read every record back with good digests.
"""

from __future__ import annotations

import argparse
import io
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fastwarc.warc import ArchiveIterator as FastIterator
from fastwarc.warc import WarcRecordType
from isal import igzip
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from trawl.store.warc_record import (
    Codec,
    encode_response_record,
    new_record_id,
    sha256_digest,
    warc_date,
)

URL = "https://www.example.test/news/2026/11/30/some-article-{n}.html"
FETCHED_AT = 1_796_000_000.0
RESPONSE = WarcRecordType.response
WORD_TEXT = (
    "the of and to in is for on that with as by this from at are be or it an was have not "
    "news market world sport city council report price energy school health police local "
    "government people year week minister data research update live video photo comment"
)
WORDS = tuple(WORD_TEXT.split())


def html_body(rng: random.Random, size: int) -> bytes:
    """Plausible article HTML: nav, repeated markup, prose and many links."""
    parts = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>",
        " ".join(rng.choices(WORDS, k=8)),
        "</title><link rel=stylesheet href=/static/site.css><script>window.dataLayer=[];"
        '</script></head><body><header><nav class="main-nav"><ul>',
    ]
    parts += [
        f'<li class="nav-item"><a href="/section/{w}/" class="nav-link">{w.title()}</a></li>'
        for w in rng.sample(WORDS, 20)
    ]
    parts.append("</ul></nav></header><main><article>")
    total = sum(len(p) for p in parts)
    while total < size:
        kind = rng.random()
        if kind < 0.5:
            chunk = "<p>" + " ".join(rng.choices(WORDS, k=rng.randint(30, 90))) + ".</p>\n"
        elif kind < 0.8:
            slug = "-".join(rng.choices(WORDS, k=5))
            chunk = (
                f'<div class="card"><a href="https://www.example.test/{slug}-'
                f'{rng.randint(1, 10**6)}.html" data-track="card">'
                f'<img src="/img/{rng.getrandbits(64):x}.jpg" '
                f'alt="{" ".join(rng.choices(WORDS, k=4))}"><span class="title">'
                f"{' '.join(rng.choices(WORDS, k=7))}</span></a></div>\n"
            )
        else:
            chunk = (
                f'<script type="application/json">{{"id":"{rng.getrandbits(96):x}",'
                f'"ts":{rng.randint(10**9, 2 * 10**9)},"tags":["{rng.choice(WORDS)}"]}}</script>\n'
            )
        parts.append(chunk)
        total += len(chunk)
    parts.append("</article></main><footer>(c) example</footer></body></html>")
    return "".join(parts).encode()


def http_head(body_len: int) -> bytes:
    return (
        "HTTP/1.1 200 OK\r\nDate: Mon, 30 Nov 2026 05:00:00 GMT\r\nServer: nginx\r\n"
        "Content-Type: text/html; charset=utf-8\r\nCache-Control: max-age=60\r\n"
        f'ETag: "5f3a-61c0"\r\nVary: Accept-Encoding\r\nContent-Length: {body_len}\r\n\r\n'
    ).encode()


Encoder = Callable[[int, bytes, bytes], bytes]


def warcio_encoder(n: int, head: bytes, body: bytes) -> bytes:
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=True, warc_version="1.1")
    status_line, *header_lines = head[:-4].decode("latin-1").split("\r\n")
    headers = [tuple(line.split(": ", 1)) for line in header_lines]
    record = writer.create_warc_record(
        URL.format(n=n),
        "response",
        payload=io.BytesIO(body),
        http_headers=StatusAndHeaders(status_line, headers, protocol="", is_http_request=False),
        warc_headers_dict={"WARC-IP-Address": "127.0.0.1"},
    )
    writer.write_record(record)
    return out.getvalue()


def trawl_encoder(codec: Codec, level: int) -> Encoder:
    def encode(n: int, head: bytes, body: bytes) -> bytes:
        return encode_response_record(
            url=URL.format(n=n),
            fetched_at=FETCHED_AT,
            ip="127.0.0.1",
            http_head=head,
            payload=body,
            truncated=False,
            level=level,
            codec=codec,
        ).data

    return encode


def igzip_encoder(level: int) -> Encoder:
    """Same record bytes, framed by igzip.compress (no "sl" field): the framing cost check."""

    def encode(n: int, head: bytes, body: bytes) -> bytes:
        warc_head = (
            f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: {new_record_id()}\r\n"
            f"WARC-Date: {warc_date(FETCHED_AT)}\r\nWARC-Target-URI: {URL.format(n=n)}\r\n"
            f"WARC-IP-Address: 127.0.0.1\r\nWARC-Block-Digest: {sha256_digest(head, body)}\r\n"
            f"WARC-Payload-Digest: {sha256_digest(body)}\r\n"
            f"Content-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(head) + len(body)}\r\n\r\n"
        ).encode()
        return bytes(igzip.compress(b"".join((warc_head, head, body, b"\r\n\r\n")), level))

    return encode


def digests_only(n: int, head: bytes, body: bytes) -> bytes:
    """Lower bound: the two sha256 digests every variant must compute."""
    sha256_digest(head, body)
    sha256_digest(body)
    return b""


def check_readers(path: Path, expected: int) -> str:
    with open(path, "rb") as fh:
        warcio_n = sum(
            1 for r in ArchiveIterator(fh, check_digests="raise") if r.rec_type == "response"
        )
    with open(path, "rb") as fh:
        # verify_digests=True skips records whose digests do not match.
        fast_n = sum(1 for _ in FastIterator(fh, verify_digests=True, record_types=RESPONSE))
    fast_ok = 0
    with open(path, "rb") as fh:
        # Block digest before the HTTP head is parsed (parsing consumes it), payload after.
        for rec in FastIterator(fh, parse_http=False, record_types=RESPONSE):
            block_ok = rec.verify_block_digest()
            rec.parse_http()
            fast_ok += block_ok and rec.verify_payload_digest()
    ok = warcio_n == fast_n == fast_ok == expected
    return "ok" if ok else f"FAIL warcio={warcio_n} fastwarc={fast_n}/{fast_ok} of {expected}"


def run(name: str, encode: Encoder, bodies: list[tuple[bytes, bytes]], tmp: Path) -> None:
    raw_bytes = sum(len(h) + len(b) for h, b in bodies)
    times: list[float] = []
    out: list[bytes] = []
    for rep in range(3):
        out = []
        t0 = time.perf_counter()
        for n, (head, body) in enumerate(bodies):
            out.append(encode(n, head, body))
        times.append(time.perf_counter() - t0)
        if rep == 0 and not out[0]:
            break
    best = min(times)
    us = best / len(bodies) * 1e6
    mb_s = raw_bytes / best / 1e6
    gz = sum(len(d) for d in out)
    if gz:
        path = tmp / f"{name.replace(' ', '_')}.warc.gz"
        path.write_bytes(b"".join(out))
        ratio, readers = f"{raw_bytes / gz:6.2f}", check_readers(path, len(bodies))
    else:
        ratio, readers = "     -", "-"
    print(f"{name:<24} {us:9.0f} {mb_s:9.0f} {ratio:>7} {gz / len(bodies) / 1024:8.1f}  {readers}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=300)
    ap.add_argument("--body-kb", type=int, default=100)
    args = ap.parse_args()
    rng = random.Random(42)
    bodies = []
    for _ in range(args.records):
        body = html_body(rng, args.body_kb * 1024)
        bodies.append((http_head(len(body)), body))
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(f"command: {' '.join(sys.argv)}  commit: {commit or '?'}")
    print(
        f"machine: {platform.machine()} {platform.processor() or ''} "
        f"python {platform.python_version()}  records: {args.records} x ~{args.body_kb} KB"
    )
    print(f"{'variant':<24} {'us/record':>9} {'MB/s in':>9} {'ratio':>7} {'KB/rec':>8}  readers")
    variants: list[tuple[str, Encoder]] = [
        ("sha256 x2 only (floor)", digests_only),
        ("warcio WARCWriter", warcio_encoder),
    ]
    variants += [(f"trawl zlib {lv}", trawl_encoder(Codec.ZLIB, lv)) for lv in (1, 3, 6)]
    variants += [(f"trawl isal {lv}", trawl_encoder(Codec.ISAL, lv)) for lv in (0, 1, 2, 3)]
    variants += [(f"igzip.compress {lv}", igzip_encoder(lv)) for lv in (1, 2)]
    with tempfile.TemporaryDirectory() as tmp:
        for name, encode in variants:
            run(name, encode, bodies, Path(tmp))
    baseline = statistics.mean(len(h) + len(b) for h, b in bodies)
    print(f"mean uncompressed record payload: {baseline / 1024:.1f} KB")


if __name__ == "__main__":
    main()
