"""Event-loop CPU per fetched page: the fetcher, and the hand-off of pages to the workers.

Run: python -m bench.fetch_bench [--base SRC] [--rounds 5] [--pages 3000]
     python -m bench.fetch_bench --compare-fetchers [--rounds 5]

`fetch`: a real fetcher (`--fetcher`: Http1Fetcher, the crawl's and the default, or
AiohttpFetcher, the reference adapter, which a `--base` tree older than Http1Fetcher needs)
fetches ~100 KB pages from a raw asyncio HTTP server on 127.0.0.1 (a process of its own,
so its CPU is not counted; with `--gzip` it sends them gzipped, as most of the web does,
and the fetch includes inflating them), as the loop does: resolve the host (names mapped
as --hosts-file maps the bench web), then fetch with that IP and an on_sent callback,
`--concurrency` at a time over `--hosts` names. `--compare-fetchers` runs both fetchers of
this tree, alternating round by round against the same server, and prints the ratio.
`handoff`: BatchedWorkers on a WorkerPool of 2 processes; each page is a PageInput with a
~100 KB body, the worker answers with a PageOutput-sized reply (30 KB record, 50 links)
without doing the page work, so what is left is the hand-off: the main side, and the
workers' side (their CPU read from /proc; the page work's time is a sleep).

Each measurement runs in a child process on uvloop, as the crawl does
(`time.process_time()` of the whole child, all its threads, per page). With `--base SRC`
(a checkout's src/ directory, e.g. a worktree of the commit before the change) the base
and this tree alternate, round by round, in the same run, and the median of the rounds'
paired ratios is printed (`--fetcher` picks the fetcher both run).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.proc import process_cpu_s

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parent.parent
PAGE_BYTES = 100_000
LINKS = 50
WORKER_S = 0.003  # a worker's time on one page in the crawl (bench/RESULTS.md profile)


def _page(prose: bool = False) -> bytes:
    """~100 KB of HTML; with `prose`, the test web's paragraphs, which gzip like a real page
    (~4x; the repeated row gzips ~200x, and inflating it costs next to nothing)."""
    body = b"<!doctype html><html><head><title>t</title></head><body>\n"
    if prose:
        from trawl.testweb.text import paragraph

        rng = random.Random(1)
        while len(body) < PAGE_BYTES - 100:
            body += b'<p>%s <a href="/section/x/">news</a></p>\n' % paragraph(rng).encode()
        return body + b"</body></html>\n"
    row = b'<p>the of and to in is for on <a href="/section/x/">news</a> market world</p>\n'
    body += row * ((PAGE_BYTES - len(body)) // len(row))
    return body + b"</body></html>\n"


# --- the server (its own process) ------------------------------------------------------------


class _Http(asyncio.Protocol):
    """Keep-alive HTTP/1.1: one canned 200 per request head, whatever the path."""

    response = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            self.buffer = self.buffer[end + 4 :]
            self.transport.write(self.response)


async def _serve(gzipped: bool) -> None:
    page = gzip.compress(_page(prose=True), 6) if gzipped else _page()
    coding = b"Content-Encoding: gzip\r\n" if gzipped else b""
    _Http.response = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n%s"
        b"Server: bench\r\nContent-Length: %d\r\n\r\n" % (coding, len(page))
    ) + page
    server = await asyncio.get_running_loop().create_server(_Http, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until stdin closes


# --- the measured children -------------------------------------------------------------------


async def _fetch_run(
    port: int, pages: int, concurrency: int, hosts: int, fetcher_name: str, gzipped: bool
) -> dict[str, Any]:
    from trawl.fetch.dns import CachingResolver, HostMap
    from trawl.fetch.fetcher import AiohttpFetcher

    fetcher_class: Any = AiohttpFetcher
    if fetcher_name == "http1":  # imported only then: a --base tree may not have it
        from trawl.fetch.http1 import Http1Fetcher

        fetcher_class = Http1Fetcher

    names = [f"site-{n}.bench.test" for n in range(hosts)]
    host_map = HostMap.from_options([f"{name}:127.0.0.1" for name in names], None)
    fetcher = fetcher_class(
        user_agent="trawl-bench/1 (+http://bench.test/)", resolver=CachingResolver(host_map)
    )
    sent = 0
    failed = 0
    body_bytes = 0

    def note_sent() -> None:
        nonlocal sent
        sent += 1

    async def one(n: int) -> None:
        nonlocal failed, body_bytes
        host = names[n % hosts]
        ip = await fetcher.resolve(host)
        result = await fetcher.fetch(
            f"http://{host}:{port}/page/{n}?q={n % 7}", ip=ip, on_sent=note_sent
        )
        if result.status != 200 or not result.request_head:
            failed += 1
        body_bytes += len(result.body or b"")

    async def lane(lane_no: int) -> None:
        for n in range(lane_no, pages, concurrency):
            await one(n)

    async with fetcher:
        await asyncio.gather(*(lane(i) for i in range(concurrency)))  # warm: connections, code
        cpu0, wall0, user0 = time.process_time(), time.perf_counter(), os.times().user
        await asyncio.gather(*(lane(i) for i in range(concurrency)))
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        user = os.times().user - user0
    assert failed == 0, failed
    assert sent == 2 * pages, sent
    assert body_bytes == 2 * pages * len(_page(prose=gzipped))
    return {
        "us_per_page": cpu / pages * 1e6,
        "user_us_per_page": user / pages * 1e6,
        "pages_per_s": pages / wall,
    }


_RECORD: list[bytes] = []


def echo_batch(pages: list[Any]) -> list[Any]:
    """The worker side: a reply of the right shape and size, no page work."""
    from trawl.parse.page_work import FoundLink, PageOutput
    from trawl.store.warc_record import EncodedRecord

    if not _RECORD:
        _RECORD.append(os.urandom(30_000))  # a gzip member is incompressible
    out = []
    for page in pages:
        time.sleep(WORKER_S)  # the page work's time, without taking a core from the loop
        record = EncodedRecord(_RECORD[0], "sha1:X", "<urn:uuid:x>", None)
        links = tuple(
            FoundLink(f"{page.url}/l/{i}", f"{i:016x}", "bench.test") for i in range(LINKS)
        )
        out.append(PageOutput("0" * 32, record, links, False, False, 0, 1, 300, "", 1))
    return out


async def _handoff_run(pages: int, rate: float) -> dict[str, Any]:
    import functools

    from trawl.loop.cpu_batches import BatchedWorkers
    from trawl.loop.workers import WorkerPool, start_process_pool
    from trawl.parse.page_work import PageInput

    body = _page()
    pool = WorkerPool(functools.partial(start_process_pool, 2, _init_echo, ()))
    workers: BatchedWorkers[Any, Any] = BatchedWorkers(pool, echo_batch)
    latencies: list[float] = []

    async def one(n: int) -> None:
        page = PageInput(
            f"http://site.test/page/{n}",
            1.0,
            "127.0.0.1",
            b"HTTP/1.1 200 OK\r\n\r\n",
            body,
            False,
            (),
            "trawl",
            True,
            -1,
            "",
            b"GET / HTTP/1.1\r\n\r\n",
        )
        start = time.perf_counter()
        out = await workers.run(page)
        latencies.append(time.perf_counter() - start)
        assert len(out.links) == LINKS

    async def arrive() -> None:
        # Pages come as fetches end, at `rate` a second, each awaited by a task of its own.
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        async with asyncio.TaskGroup() as tasks:
            for n in range(pages):
                await asyncio.sleep(max(0.0, t0 + n / rate - loop.time()))
                tasks.create_task(one(n))

    try:
        await arrive()  # warm-up
        latencies.clear()
        batches0 = workers.batches
        cpu0, wall0, user0 = time.process_time(), time.perf_counter(), os.times().user
        workers0 = _workers_cpu_s(pool)
        await arrive()
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        user = os.times().user - user0
        workers_cpu = _workers_cpu_s(pool) - workers0
    finally:
        pool.shutdown()
    latencies.sort()
    return {
        "user_us_per_page": user / pages * 1e6,
        "us_per_page": cpu / pages * 1e6,
        "pages_per_s": pages / wall,
        "workers_us_per_page": workers_cpu / pages * 1e6,
        "both_us_per_page": (cpu + workers_cpu) / pages * 1e6,
        "pages_per_batch": pages / (workers.batches - batches0),
        "latency_p50_ms": latencies[len(latencies) // 2] * 1e3,
        "latency_p99_ms": latencies[len(latencies) * 99 // 100] * 1e3,
    }


def _workers_cpu_s(pool: Any) -> float:
    """CPU seconds the pool's worker processes have used (Linux /proc): they are the
    forkserver's children, not this process's, so its rusage never counts them."""
    return sum(process_cpu_s(pid) for pid in getattr(pool._pool, "_processes", None) or {})


def _init_echo() -> None:
    """Nothing to set up: the pool wants an initializer."""


def _child(args: argparse.Namespace) -> None:
    import uvloop  # the crawl's loop (cli.runner.run_async): its transports are what we time

    # glibc's heap as a crawl's is after its first seconds: a crawl frees a few MB at once
    # early on, which raises glibc's mmap and trim thresholds for good (`strace -e
    # brk,mmap,munmap` on a running crawl's processes: no calls in 8 s). Without it, each
    # fetch here gave its freed body back to the kernel and faulted it in again, ~60 us
    # of system time a page that no crawl pays.
    bytearray(8 << 20)

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        if args.part == "fetch":
            out = runner.run(
                _fetch_run(
                    args.port, args.pages, args.concurrency, args.hosts, args.fetcher, args.gzip
                )
            )
        else:
            out = runner.run(_handoff_run(args.pages, args.rate))
    print(json.dumps(out))


# --- the driver ------------------------------------------------------------------------------


@contextlib.contextmanager
def served(gzipped: bool = False) -> Iterator[int]:
    """The bench server (`--serve`), a process of its own, for as long as the block runs;
    yields its port."""
    server = subprocess.Popen(
        [sys.executable, "-m", "bench.fetch_bench", "--serve", *["--gzip"] * gzipped],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        yield int(server.stdout.readline())
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)


def measure(
    src: Path, args: argparse.Namespace, port: int, fetcher: str = "http1"
) -> dict[str, Any]:
    """One measured child (`--part`, `--pages`, `--concurrency`, `--hosts`, `--rate` from
    `args`) on `src`'s trawl against the server on `port`, fetching with `fetcher`."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [
        sys.executable,
        "-m",
        "bench.fetch_bench",
        "--child",
        "--part",
        args.part,
        "--port",
        str(port),
        "--pages",
        str(args.pages),
        "--concurrency",
        str(args.concurrency),
        "--hosts",
        str(args.hosts),
        "--rate",
        str(args.rate),
        "--fetcher",
        fetcher,
        *["--gzip"] * args.gzip,
    ]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{src}: child failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=["fetch", "handoff"], default="fetch")
    parser.add_argument("--base", type=Path, help="the baseline's src/ directory")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--rate", type=float, default=400.0, help="handoff: pages a second")
    parser.add_argument(
        "--fetcher",
        choices=["aiohttp", "http1"],
        default="http1",
        help="the crawl's (http1) or the reference adapter; a --base before http1 needs aiohttp",
    )
    parser.add_argument(
        "--compare-fetchers",
        action="store_true",
        help="fetch: both fetchers of this tree, alternating round by round, and their ratio",
    )
    parser.add_argument("--gzip", action="store_true", help="fetch: pages come gzipped")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(args.gzip))
        return
    if args.child:
        _child(args)
        return
    if args.compare_fetchers and args.part != "fetch":
        parser.error("--compare-fetchers compares the fetch part")
    # name -> (src/ directory, fetcher); `paired` lists (candidate, baseline) names.
    variants: dict[str, tuple[Path, str]] = {}
    paired: list[tuple[str, str]] = []
    if args.base is not None:
        variants["base"] = (args.base, args.fetcher)
    if args.compare_fetchers:
        variants["aiohttp"] = (ROOT / "src", "aiohttp")
        variants["http1"] = (ROOT / "src", "http1")
        paired.append(("http1", "aiohttp"))
        if args.base is not None:
            paired.append(("aiohttp", "base"))
    else:
        variants["new"] = (ROOT / "src", args.fetcher)
        if args.base is not None:
            paired.append(("new", "base"))
    with served(args.gzip) as port:
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
        for round_no in range(args.rounds):
            # Alternate which goes first, so neither always follows the other's leftovers.
            order = list(variants.items())[:: 1 if round_no % 2 == 0 else -1]
            for name, (src, fetcher) in order:
                runs[name].append(measure(src, args, port, fetcher))
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    print(
        f"{' '.join(sys.argv)}  (commit {commit}, {platform.processor() or platform.machine()},"
        f" {os.cpu_count()} CPUs, python {platform.python_version()})"
    )
    medians = {}
    for name, rows in runs.items():
        us = [r["us_per_page"] for r in rows]
        medians[name] = statistics.median(us)
        rate = statistics.median(r["pages_per_s"] for r in rows)
        user_us = statistics.median(r["user_us_per_page"] for r in rows)
        print(
            f"{args.part:8} {name:7} {medians[name]:7.1f} µs CPU/page (median of {len(us)}; "
            f"{' '.join(f'{u:.0f}' for u in us)}), user {user_us:.1f} µs, {rate:.0f} pages/s"
        )
        extra = [
            k
            for k in ("workers_us_per_page", "both_us_per_page", "pages_per_batch",
                      "latency_p50_ms", "latency_p99_ms")
            if k in rows[0]
        ]  # fmt: skip
        if extra:
            print(
                "               "
                + ", ".join(f"{k} {statistics.median(r[k] for r in rows):.1f}" for k in extra)
            )
    for candidate, baseline in paired:
        # Each round's pair ran back to back, under the same load from the machine's
        # other users: the median of the paired ratios is steadier than medians' ratio.
        keys = ["us_per_page", "user_us_per_page"]
        keys += [k for k in ("workers_us_per_page", "both_us_per_page") if k in runs[baseline][0]]
        for key in keys:
            pairs = [n[key] / b[key] for b, n in zip(runs[baseline], runs[candidate], strict=True)]
            print(
                f"{candidate}/{baseline} {key}: median of paired rounds "
                f"{statistics.median(pairs):.3f} ({' '.join(f'{r:.2f}' for r in pairs)})"
            )


if __name__ == "__main__":
    main()
