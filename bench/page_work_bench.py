"""CPU per page of `process_page` (the worker's share of every fetched page), two trees in
one run: this checkout against a base checkout, on pages of the quick bench web.

Run: python -m bench.page_work_bench [--base /tmp/base17/src] [--pages 600] [--rounds 7]

The base is a frozen copy of an earlier commit (`git worktree add --detach /tmp/base17
<commit>`). Each tree runs in a child process of its own (both import `trawl`); the parent
sends them the same rounds in turn, so a noisy machine slows both alike, and prints the
median ms per page of `process_page` and of its pieces, with the base/new ratio. The
children also digest every output (links, hashes, fingerprints, the WARC records with
their random record ids blanked) and the parent checks the two digests are equal.

Pages: `--pages` pages drawn at random (seed 1) from the quick bench web, generated into
/tmp/trawl-bench-web-quick as bench/profile_crawl.py --quick does (800 sites x 12 pages),
each with an nginx-like response head and trawl's request head.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

WEB_ROOT = Path("/tmp/trawl-bench-web-quick")
REQUEST_HEAD = (
    b"GET {path} HTTP/1.1\r\nHost: {host}\r\n"
    b"User-Agent: trawl/0.1.0 (+https://crawler.example.org/about)\r\n"
    b"Accept: text/html,application/xhtml+xml;q=0.9,*/*;q=0.1\r\n"
    b"Accept-Encoding: gzip, deflate, br\r\n\r\n"
)
RESPONSE_HEAD = (
    "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Wed, 02 Dec 2026 04:50:00 GMT\r\n"
    "Content-Type: text/html\r\nContent-Length: {n}\r\nConnection: keep-alive\r\n"
    'ETag: "6745a1b2-{n:x}"\r\n\r\n'
)
_RECORD_ID = re.compile(rb"<urn:uuid:[0-9a-f-]{36}>")


def load_pages(n: int) -> list[tuple[str, bytes]]:
    """(url, body) of `n` pages of the quick bench web, drawn at random (seed 1)."""
    from bench.webfarm.generate import file_for, generate_web

    spec = generate_web(WEB_ROOT, n_sites=800, pages_per_site=12)
    www = WEB_ROOT / "www"
    found: list[tuple[str, Path]] = []
    for site in sorted(os.listdir(www)):
        for path in spec.page_paths:
            file = file_for(www / site, path)
            if file.is_file():
                found.append((f"http://{site}{path}", file))
    chosen = random.Random(1).sample(found, min(n, len(found)))
    return [(url, file.read_bytes()) for url, file in chosen]


def _child(n_pages: int) -> None:
    """Serve rounds on stdin/stdout: one JSON line of ms/page per piece for each "go"."""
    from trawl.parse import page_work
    from trawl.parse.fingerprint import main_text_fingerprint
    from trawl.parse.links import links_of_tree, parse_html
    from trawl.store.capture import encode_exchange
    from trawl.store.warc_record import gunzip_member

    inputs = []
    for url, body in load_pages(n_pages):
        host, _, path = url[len("http://") :].partition("/")
        inputs.append(
            page_work.PageInput(
                url=url,
                fetched_at=1_764_650_000.25,
                ip="127.0.0.1",
                http_head=RESPONSE_HEAD.format(n=len(body)).encode(),
                body=body,
                truncated=False,
                x_robots_tag=(),
                agent_token="trawl",
                store_body=True,
                request_head=REQUEST_HEAD.replace(b"{path}", b"/" + path.encode()).replace(
                    b"{host}", host.encode()
                ),
            )
        )

    def whole() -> None:
        for page in inputs:
            page_work.process_page(page)

    def parse_links() -> None:
        for page in inputs:
            links_of_tree(parse_html(page.body), page.url, agent_token="trawl")

    def main_text() -> None:
        for page in inputs:
            main_text_fingerprint(page.body)

    def warc() -> None:
        for page in inputs:
            encode_exchange(
                url=page.url, fetched_at=page.fetched_at, ip=page.ip, http_head=page.http_head,
                payload=page.body, truncated=False, request_head=page.request_head, level=2,
            )  # fmt: skip

    def content_hash() -> None:
        for page in inputs:
            page_work.content_hash(page.body)

    parsed = [links_of_tree(parse_html(p.body), p.url, agent_token="trawl") for p in inputs]

    def normalise() -> None:
        for found in parsed:
            page_work.normalise_links(found.hrefs, found.base_url)

    def cold() -> None:
        # Each round starts with the worker's caches empty, as a fresh worker would: the
        # pages repeat from round to round, a crawl's pages do not.
        forget = getattr(page_work, "forget_links", None)
        if forget is not None:
            forget()

    pieces: dict[str, Callable[[], None]] = {
        "process_page": whole,
        "  parse + links": parse_links,
        "  main-text simhash": main_text,
        "  WARC records": warc,
        "  content hash": content_hash,
        "  normalise links": normalise,
    }
    digest = hashlib.sha256()
    for page in inputs + inputs:  # twice: cached results must match fresh ones
        out = page_work.process_page(page)
        plain = list(out._replace(warc_record=None, request_record=None))
        while plain and plain[-1] is None:  # a field added since the base, unset here
            plain.pop()
        digest.update(repr(plain).encode())
        for record in (out.warc_record, out.request_record):
            if record is not None:
                data = _RECORD_ID.sub(b"<id>", gunzip_member(record.data))
                digest.update(data + repr(record.cdx).encode() + record.payload_digest.encode())
    print(json.dumps({"digest": digest.hexdigest()}), flush=True)
    for line in sys.stdin:
        if line.strip() != "go":
            break
        times = {}
        for name, run in pieces.items():
            cold()
            started = time.process_time()
            run()
            times[name] = (time.process_time() - started) * 1000 / len(inputs)
        print(json.dumps(times), flush=True)


def _start(src: str, n_pages: int) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=f"{src}{os.pathsep}{Path.cwd()}")
    return subprocess.Popen(
        [sys.executable, "-m", "bench.page_work_bench", "--child", str(n_pages)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


def _ask(child: subprocess.Popen[str], line: str | None) -> dict[str, Any]:
    stdin: IO[str] | None = child.stdin
    stdout: IO[str] | None = child.stdout
    assert stdin is not None
    assert stdout is not None
    if line is not None:
        stdin.write(line + "\n")
        stdin.flush()
    answer: dict[str, Any] = json.loads(stdout.readline())
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="/tmp/base17/src")
    parser.add_argument("--pages", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child)
        return
    load_pages(1)  # generate the web once, before the children race to
    trees = {"base": args.base, "new": str(Path(__file__).resolve().parents[1] / "src")}
    children = {name: _start(src, args.pages) for name, src in trees.items()}
    digests = {name: _ask(child, None)["digest"] for name, child in children.items()}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    order = list(children)
    for _ in range(args.rounds):
        for name in order:  # alternate who goes first, so drift in load hits both alike
            results[name].append(_ask(children[name], "go"))
        order.reverse()
    for child in children.values():
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    machine = platform.processor() or platform.machine()
    print(
        f"$ python -m bench.page_work_bench --base {args.base} --pages {args.pages} "
        f"--rounds {args.rounds}   # new = {commit}, {machine}, {os.cpu_count()} CPUs"
    )
    same = digests["base"] == digests["new"]
    print(f"outputs identical: {same}")
    print(f"{'ms CPU per page (median of rounds)':36} {'base':>7} {'new':>7} {'saved':>7} ratio")
    for piece in results["base"][0]:
        base = statistics.median(r[piece] for r in results["base"])
        new = statistics.median(r[piece] for r in results["new"])
        print(f"{piece:36} {base:7.3f} {new:7.3f} {base - new:7.3f} {base / new:5.2f}")
    if not same:
        sys.exit("outputs differ between base and new")


if __name__ == "__main__":
    main()
