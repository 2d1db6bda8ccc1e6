"""What a fetch could cost the crawl loop without aiohttp: a floor for a leaner HTTP client.

    python -m bench.lean_fetch_price [--rounds 5] [--pages 3000]   # needs httptools ('.[bench]')

The crawl loop spent ~0.3 ms of CPU a fetched page in the fetch path with aiohttp, and
about half that with the crawl's Http1Fetcher (`python -m bench.fetch_bench
--compare-fetchers`). This prices the bare minimum of the same
work: a keep-alive HTTP/1.1 GET per page on uvloop, the response parsed by llhttp
(httptools), the body joined once; one connection pool per host name, the same server
(bench.fetch_bench's, a process of its own), pages, concurrency and host names as
fetch_bench. It has none of the fetcher's duties (DNS and the SSRF guard, size caps,
decoding, the request head kept for WARC, error kinds), so a real client costs more; what
it shows is how much of a fetcher's cost is the client's rather than the job's. Each round
prints this client's process CPU a page beside the Http1Fetcher's (fetch_bench's child) in
the same run (the thirteenth session priced it beside the AiohttpFetcher: 54 against 285).
Loopback only; bounded by --pages.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import cast

from bench.fetch_bench import ROOT, measure, served


class _Connection(asyncio.Protocol):
    """One keep-alive connection: a request at a time, the response handed to `waiter`."""

    def __init__(self) -> None:
        import httptools

        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.chunks: list[bytes] = []
        self.headers: list[tuple[bytes, bytes]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.Transport", transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        waiter, self.waiter = self.waiter, None
        body, self.chunks, self.headers = b"".join(self.chunks), [], []
        if waiter is not None and not waiter.done():
            waiter.set_result((self.parser.get_status_code(), body))

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("closed"))


async def _run(port: int, pages: int, concurrency: int, hosts: int) -> float:
    """CPU µs a page of the second of two passes (the first opens the connections)."""
    loop = asyncio.get_running_loop()
    idle: dict[str, list[_Connection]] = {}
    names = [f"site-{n}.bench.test" for n in range(hosts)]

    async def get(host: str, target: str) -> tuple[int, bytes]:
        pool = idle.setdefault(host, [])
        if pool:
            conn = pool.pop()
        else:
            conn = (await loop.create_connection(_Connection, "127.0.0.1", port))[1]
        assert conn.transport is not None
        conn.waiter = loop.create_future()
        conn.transport.write(
            f"GET {target} HTTP/1.1\r\nHost: {host}\r\n"
            "User-Agent: trawl-bench/1 (+http://bench.test/)\r\nAccept: text/html\r\n"
            "Accept-Encoding: gzip, deflate, br\r\n\r\n".encode()
        )
        async with asyncio.timeout(30):
            answer = await conn.waiter
        pool.append(conn)
        return answer

    async def lane(first: int) -> None:
        for n in range(first, pages, concurrency):
            status, body = await get(names[n % hosts], f"/page/{n}?q={n % 7}")
            if status != 200 or len(body) < 90_000:
                raise RuntimeError(f"bad answer: {status}, {len(body)} bytes")

    await asyncio.gather(*(lane(i) for i in range(concurrency)))
    cpu0 = time.process_time()
    await asyncio.gather(*(lane(i) for i in range(concurrency)))
    return (time.process_time() - cpu0) / pages * 1e6


def main() -> None:
    import uvloop

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--hosts", type=int, default=200)
    parser.set_defaults(part="fetch", rate=0.0)  # the rest fetch_bench.measure passes on
    args = parser.parse_args()
    lean: list[float] = []
    full: list[float] = []
    with served() as port, asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        for _ in range(args.rounds):
            full.append(measure(ROOT / "src", args, port, "http1")["us_per_page"])
            lean.append(runner.run(_run(port, args.pages, args.concurrency, args.hosts)))
            print(f"Http1Fetcher {full[-1]:6.1f} µs CPU a page, bare client {lean[-1]:6.1f}")
    print(
        f"medians of {args.rounds}: Http1Fetcher {statistics.median(full):.1f} µs a page,"
        f" bare keep-alive client (uvloop + httptools) {statistics.median(lean):.1f}"
    )


if __name__ == "__main__":
    main()
