"""The fetchers over real loopback sockets: a raw HTTP/1.1 server and a UDP DNS server.

The HTTP server is a plain asyncio stream server so hostile answers (resets, broken
chunking, huge headers, a drip feed) are byte-exact. It logs every connection and request
so tests check behaviour from the server's side, not from our counters. Every test of the
fetcher's behaviour runs against both adapters (the `adapter` fixture): AiohttpFetcher and
Http1Fetcher hold to the same rules.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import struct
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp
import brotli
import pytest
from tests.servers.dns import DnsServer
from tests.servers.raw_http import response_head

from trawl.errors import BlockedAddress, ConfigError, FetchError
from trawl.fetch.dns import CachingResolver, HostMap
from trawl.fetch.fetcher import AiohttpFetcher, AiohttpResolver
from trawl.fetch.http1 import Http1Fetcher
from trawl.fetch.http_common import build_user_agent

if TYPE_CHECKING:
    from trawl.fetch.http_common import FetcherBase

pytestmark = pytest.mark.timeout(30)

PAGE = b"<!doctype html><title>t</title>" + b"<p>trawl test page</p>" * 200
UA = "trawl/0.1 (+https://example.org/bot)"
MIB = 1024 * 1024


@dataclass
class Connection:
    number: int
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    body_aborted: bool = False  # the client went away while we were writing a body


@dataclass
class Web:
    """A tiny hostile web server on 127.0.0.1; `port` is assigned by the OS."""

    port: int = 0
    connections: list[Connection] = field(default_factory=list)
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    writers: set[asyncio.StreamWriter] = field(default_factory=set)

    def paths(self) -> list[str]:
        return [path for conn in self.connections for path, _ in conn.requests]


Route = Callable[[asyncio.StreamWriter, Connection], Awaitable[bool]]  # True: keep alive


def _simple(body: bytes, ctype: str = "text/html; charset=utf-8", **extra: str) -> Route:
    async def route(writer: asyncio.StreamWriter, conn: Connection) -> bool:
        headers = [("Content-Type", ctype), ("Content-Length", str(len(body)))]
        headers += [(k.replace("_", "-"), v) for k, v in extra.items()]
        writer.write(response_head("200 OK", headers) + body)
        await writer.drain()
        return True

    return route


async def _redirect(writer: asyncio.StreamWriter, conn: Connection) -> bool:
    body = b"<a href='/page'>moved</a>"
    headers = [("Location", "/page"), ("Content-Type", "text/html"), ("Content-Length", "25")]
    writer.write(response_head("301 Moved Permanently", headers) + body)
    await writer.drain()
    return True


async def _not_modified(writer: asyncio.StreamWriter, conn: Connection) -> bool:
    writer.write(response_head("304 Not Modified", [("ETag", '"v1"')]))
    await writer.drain()
    return True


async def _drip(writer: asyncio.StreamWriter, conn: Connection) -> bool:
    writer.write(
        response_head("200 OK", [("Content-Type", "text/html"), ("Content-Length", "100")])
    )
    for _ in range(100):
        writer.write(b"x")
        await writer.drain()
        await asyncio.sleep(0.5)
    return True


async def _stream_body(
    writer: asyncio.StreamWriter, conn: Connection, ctype: str, size: int
) -> bool:
    writer.write(response_head("200 OK", [("Content-Type", ctype), ("Content-Length", str(size))]))
    return await _write_all(writer, conn, bytes(size))


async def _write_all(writer: asyncio.StreamWriter, conn: Connection, body: bytes) -> bool:
    try:
        for i in range(0, len(body), 64 * 1024):
            writer.write(body[i : i + 64 * 1024])
            await writer.drain()
    except (ConnectionError, OSError):
        conn.body_aborted = True
        return False
    return True


async def _big(writer: asyncio.StreamWriter, conn: Connection) -> bool:
    return await _stream_body(writer, conn, "text/html", 4 * MIB)


async def _pdf(writer: asyncio.StreamWriter, conn: Connection) -> bool:
    # Larger than loopback socket buffers, so only a reading client lets us finish.
    return await _stream_body(writer, conn, "application/pdf", 64 * MIB)


def _bomb_body() -> bytes:
    obj = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    segment = obj.compress(bytes(MIB)) + obj.flush(zlib.Z_FULL_FLUSH)
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + segment * 1024  # 1 GiB decoded


BOMB = _bomb_body()


async def _bomb(writer: asyncio.StreamWriter, conn: Connection) -> bool:
    headers = [
        ("Content-Type", "text/html"),
        ("Content-Encoding", "gzip"),
        ("Content-Length", str(len(BOMB))),
    ]
    writer.write(response_head("200 OK", headers))
    return await _write_all(writer, conn, BOMB)


def _set_rst_on_close(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


async def _reset(writer: asyncio.StreamWriter, conn: Connection) -> bool:
    _set_rst_on_close(writer)
    writer.transport.abort()
    return False


async def _cut_body(writer: asyncio.StreamWriter, conn: Connection) -> bool:
    writer.write(
        response_head("200 OK", [("Content-Type", "text/html"), ("Content-Length", "5000")])
    )
    writer.write(b"<html>" * 100)
    await writer.drain()
    _set_rst_on_close(writer)
    writer.transport.abort()
    return False


async def _bad_chunks(writer: asyncio.StreamWriter, conn: Connection) -> bool:
    headers = [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")]
    writer.write(response_head("200 OK", headers) + b"5\r\nhello\r\nzz-not-hex\r\nxx\r\n0\r\n\r\n")
    await writer.drain()
    return False


async def _huge_header(writer: asyncio.StreamWriter, conn: Connection) -> bool:
    headers = [("Content-Type", "text/html"), ("X-Junk", "j" * 20000), ("Content-Length", "2")]
    writer.write(response_head("200 OK", headers) + b"ok")
    await writer.drain()
    return False


async def _then_unasked(writer: asyncio.StreamWriter, conn: Connection) -> bool:
    """A page, then, while the connection idles, a whole second answer nobody asked for."""
    await _simple(PAGE)(writer, conn)
    await asyncio.sleep(0.05)
    writer.write(response_head("200 OK", [("Content-Type", "text/html"), ("Content-Length", "5")]))
    writer.write(b"stale")
    await writer.drain()
    return True


async def _garbage(writer: asyncio.StreamWriter, conn: Connection) -> bool:
    writer.write(b"THIS IS NOT HTTP\r\n\r\n")
    await writer.drain()
    return False


ROUTES: dict[str, Route] = {
    "/page": _simple(PAGE, Set_Cookie="a=b"),
    "/gzip": _simple(gzip.compress(PAGE), Content_Encoding="gzip"),
    "/br": _simple(brotli.compress(PAGE), Content_Encoding="br"),
    "/deflate": _simple(zlib.compress(PAGE), Content_Encoding="deflate"),
    "/corrupt-gzip": _simple(b"\x1f\x8b\x08\x00" + b"\xff" * 64, Content_Encoding="gzip"),
    "/robots.txt": _simple(b"User-agent: *\nDisallow: /private\n", "text/plain"),
    "/redirect": _redirect,
    "/not-modified": _not_modified,
    "/drip": _drip,
    "/big": _big,
    "/pdf": _pdf,
    "/bomb": _bomb,
    "/reset": _reset,
    "/cut-body": _cut_body,
    "/bad-chunks": _bad_chunks,
    "/huge-header": _huge_header,
    "/garbage": _garbage,
    "/then-unasked": _then_unasked,
}


async def _serve_connection(
    web: Web, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    task = asyncio.current_task()
    assert task is not None
    web.tasks.add(task)
    web.writers.add(writer)
    conn = Connection(number=len(web.connections))
    web.connections.append(conn)
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            path = request_line.split(" ")[1]
            headers = {}
            for line in header_lines:
                if line:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
            conn.requests.append((path, headers))
            route = ROUTES.get(path, _simple(b"not found", "text/plain"))
            if not await route(writer, conn):
                return
    finally:
        writer.close()
        web.tasks.discard(task)


async def _start_web() -> tuple[Web, asyncio.Server]:
    web = Web()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _serve_connection(web, reader, writer)

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    web.port = server.sockets[0].getsockname()[1]
    return web, server


async def _stop_web(web: Web, server: asyncio.Server) -> None:
    server.close()
    await server.wait_closed()
    for task in list(web.tasks):
        task.cancel()
    await asyncio.gather(*web.tasks, return_exceptions=True)
    for writer in web.writers:
        writer.close()
    await asyncio.sleep(0)  # let the closed transports finish before the loop goes away


ADAPTERS: dict[str, type[FetcherBase]] = {"aiohttp": AiohttpFetcher, "http1": Http1Fetcher}


@pytest.fixture(params=list(ADAPTERS))
def adapter(request: pytest.FixtureRequest) -> type[FetcherBase]:
    """Each fetcher adapter in turn."""
    return ADAPTERS[request.param]


def run_with_web(
    test: Callable[[Web, Any], Awaitable[None]],
    adapter: type[FetcherBase],
    *,
    host_map: HostMap | None = None,
    **fetcher_options: Any,
) -> None:
    """Run `test` with a fresh server and an `adapter` fetcher whose HostMap points
    site.test at it."""

    async def main() -> None:
        web, server = await _start_web()
        resolver = CachingResolver(host_map or HostMap.from_options(["site.test:127.0.0.1"], None))
        try:
            async with adapter(user_agent=UA, resolver=resolver, **fetcher_options) as fetcher:
                await test(web, fetcher)
        finally:
            await resolver.close()
            await _stop_web(web, server)

    asyncio.run(main())


def url(web: Web, path: str, host: str = "site.test") -> str:
    return f"http://{host}:{web.port}{path}"


# --- ordinary pages -------------------------------------------------------------------------


def test_html_page_with_headers_ip_and_keep_alive(adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        first = await fetcher.fetch(url(web, "/page"))
        second = await fetcher.fetch(url(web, "/page"), headers={"If-None-Match": '"v1"'})
        assert (first.status, first.error_kind, first.body) == (200, None, PAGE)
        assert first.ip == "127.0.0.1"
        assert first.header("content-type") == "text/html; charset=utf-8"
        assert ("Set-Cookie", "a=b") in first.headers
        assert first.raw_headers_block.startswith(b"HTTP/1.1 200 OK\r\n")
        assert b"\r\nContent-Length: %d\r\n" % len(PAGE) in first.raw_headers_block
        assert first.raw_headers_block.endswith(b"Set-Cookie: a=b\r\n\r\n")
        assert abs(first.started_at - time.time()) < 5
        assert 0 < first.elapsed_s < 5
        assert not first.truncated
        assert second.body == PAGE
        assert len(web.connections) == 1  # keep-alive reused the connection
        _, sent = web.connections[0].requests[0]
        assert sent["user-agent"] == UA
        assert sent["accept-encoding"] == "gzip, deflate, br"
        assert sent["host"] == f"site.test:{web.port}"
        assert "cookie" not in web.connections[0].requests[1][1]  # no cookie jar
        assert web.connections[0].requests[1][1]["if-none-match"] == '"v1"'
        assert "fetches=2" in repr(fetcher)

    run_with_web(test, adapter, allow_private=False)


def test_issue_14_result_carries_the_request_head_as_sent(adapter: type[FetcherBase]) -> None:
    """The WARC request record needs the head trawl sent; the server's view is the witness."""

    async def test(web: Web, fetcher: FetcherBase) -> None:
        # An ETag echoed back may hold any text; aiohttp writes header values as UTF-8.
        etag = '"v1-\u00e9"'
        result = await fetcher.fetch(url(web, "/page?x=1"), headers={"If-None-Match": etag})
        lines = result.request_head.decode("latin-1").split("\r\n")
        assert lines[0] == "GET /page?x=1 HTTP/1.1"
        assert result.request_head.endswith(b"\r\n\r\n")
        sent_by_us = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:-2])}
        path, seen_by_server = web.connections[0].requests[0]
        assert path == "/page?x=1"
        assert sent_by_us == seen_by_server
        assert sent_by_us["if-none-match"] == etag.encode().decode("latin-1")  # bytes as sent
        assert sent_by_us["user-agent"] == UA

    run_with_web(test, adapter, allow_private=False)


@pytest.mark.parametrize("path", ["/gzip", "/br", "/deflate"])
def test_compressed_bodies_are_decoded(path: str, adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        result = await fetcher.fetch(url(web, path))
        assert (result.status, result.error_kind, result.body) == (200, None, PAGE)

    run_with_web(test, adapter)


def test_redirect_is_not_followed(adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        result = await fetcher.fetch(url(web, "/redirect"))
        assert result.status == 301
        assert result.header("Location") == "/page"
        assert web.paths() == ["/redirect"]

    run_with_web(test, adapter)


def test_issue_13_on_sent_is_called_once_the_request_head_is_out(
    adapter: type[FetcherBase],
) -> None:
    """The per-IP gate times starts from here: after connecting, before the answer."""

    async def test(web: Web, fetcher: FetcherBase) -> None:
        seen: list[int] = []
        result = await fetcher.fetch(
            url(web, "/page"), on_sent=lambda: seen.append(len(web.connections))
        )
        assert result.status == 200
        assert seen == [1]  # once, with the connection already open
        with socket.socket() as probe:  # a port with nobody listening: nothing is sent
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        refused = await fetcher.fetch(f"http://site.test:{port}/", on_sent=lambda: seen.append(0))
        assert refused.error_kind == "connect"
        assert seen == [1]

    run_with_web(test, adapter)


def test_robots_txt_is_read_only_when_asked(adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        skipped = await fetcher.fetch(url(web, "/robots.txt"))
        read = await fetcher.fetch(url(web, "/robots.txt"), read_any_type=True)
        assert (skipped.status, skipped.body) == (200, None)
        assert read.body == b"User-agent: *\nDisallow: /private\n"

    run_with_web(test, adapter)


def test_concurrent_fetches(adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        results = await asyncio.gather(*(fetcher.fetch(url(web, "/gzip")) for _ in range(50)))
        assert {(r.status, r.body) for r in results} == {(200, PAGE)}
        assert len(web.connections) <= 50
        assert fetcher.stats().fetches == 50
        assert fetcher.stats().in_flight == 0

    run_with_web(test, adapter)


def test_unread_but_complete_responses_keep_the_connection(adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        first = await fetcher.fetch(url(web, "/not-modified"))
        second = await fetcher.fetch(url(web, "/page"))
        assert (first.status, first.body, first.header("etag")) == (304, None, '"v1"')
        assert second.body == PAGE
        assert len(web.connections) == 1

    run_with_web(test, adapter)


def _idle_connections(fetcher: FetcherBase) -> list[tuple[object, ...]]:
    """What each idle pooled connection still holds of the responses it carried."""
    if isinstance(fetcher, AiohttpFetcher):
        connector = fetcher._ensure_session().connector
        assert connector is not None
        return [(p._parser, p._payload) for conns in connector._conns.values() for p, _ in conns]
    assert isinstance(fetcher, Http1Fetcher)
    return [
        (c.exchange, c.waiter, c._decoder, *c._raw, *([c._reason] if c._reason else []))
        for conns in fetcher.pool._idle.values()
        for c in conns
    ]


def test_issue_17_an_idle_connection_keeps_nothing_of_its_last_response(
    adapter: type[FetcherBase],
) -> None:
    """The pooled connection drops its last response's parser and body stream: a crawl
    holds one idle connection a site, and those objects were what its garbage collections
    walked (issue 17). The next request on it builds them anew."""

    async def test(web: Web, fetcher: FetcherBase) -> None:
        await fetcher.fetch(url(web, "/page"))
        idle = _idle_connections(fetcher)
        assert len(idle) == 1
        assert set(idle[0]) == {None}
        again = await fetcher.fetch(url(web, "/gzip"))
        assert (again.status, again.body) == (200, PAGE)
        assert len(web.connections) == 1

    run_with_web(test, adapter)


def test_issue_17_bytes_sent_to_an_idle_connection_close_it(adapter: type[FetcherBase]) -> None:
    """An answer a server sends while the connection idles is never taken for the answer
    to the next request: the connection is closed and the next request gets its own."""

    async def test(web: Web, fetcher: FetcherBase) -> None:
        first = await fetcher.fetch(url(web, "/then-unasked"))
        await asyncio.sleep(0.3)  # the unasked answer arrives while the connection idles
        second = await fetcher.fetch(url(web, "/page"))
        assert (first.status, first.body) == (200, PAGE)
        assert (second.status, second.body) == (200, PAGE)
        assert len(web.connections) == 2

    run_with_web(test, adapter)


# --- caps and deadlines ---------------------------------------------------------------------


def test_slow_drip_is_cut_at_the_total_deadline(adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        result = await fetcher.fetch(url(web, "/drip"))
        assert (result.status, result.error_kind, result.body) == (0, "timeout", None)
        assert 1.4 < result.elapsed_s < 2.5
        assert result.ip == "127.0.0.1"

    run_with_web(test, adapter, total_timeout_s=1.5)


def test_body_over_the_raw_cap_is_truncated(adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        result = await fetcher.fetch(url(web, "/big"))
        assert (result.status, result.error_kind) == (200, None)
        assert result.truncated
        assert result.body == bytes(256 * 1024)
        per_call = await fetcher.fetch(url(web, "/big"), max_body_bytes=1000)
        assert per_call.truncated
        assert per_call.body == bytes(1000)
        assert len(web.connections) == 2  # a truncated connection is not reused

    run_with_web(test, adapter, max_body_bytes=256 * 1024)


def test_gzip_bomb_is_too_big(adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        started = time.monotonic()
        result = await fetcher.fetch(url(web, "/bomb"))
        assert (result.status, result.error_kind, result.body) == (0, "too_big", None)
        assert result.error is not None
        assert "more than 2097152 bytes" in result.error
        assert time.monotonic() - started < 2

    run_with_web(test, adapter, max_decoded_bytes=2 * MIB)


def test_corrupt_gzip_is_a_decode_failure(adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        result = await fetcher.fetch(url(web, "/corrupt-gzip"))
        assert (result.status, result.error_kind, result.body) == (0, "decode", None)
        assert result.header("content-encoding") == "gzip"  # kept for the record

    run_with_web(test, adapter)


def test_other_content_types_are_not_read(adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        started = time.monotonic()
        result = await fetcher.fetch(url(web, "/pdf"))
        assert (result.status, result.body) == (200, None)
        assert result.header("content-type") == "application/pdf"
        assert time.monotonic() - started < 2
        # The server's write fails once we closed: it never delivered the whole 64 MiB.
        for _ in range(100):
            if web.connections[0].body_aborted:
                break
            await asyncio.sleep(0.02)
        assert web.connections[0].body_aborted

    run_with_web(test, adapter)


# --- broken servers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/reset", "reset"),
        ("/cut-body", "reset"),
        ("/bad-chunks", "protocol"),
        ("/huge-header", "protocol"),
        ("/garbage", "protocol"),
    ],
)
def test_broken_servers_become_results(path: str, kind: str, adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        result = await fetcher.fetch(url(web, path))
        assert (result.status, result.error_kind, result.body) == (0, kind, None)
        assert result.error

    run_with_web(test, adapter, max_header_bytes=8192)


def test_connection_refused(adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        with socket.socket() as probe:  # a port with nobody listening
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        result = await fetcher.fetch(f"http://site.test:{port}/")
        assert (result.status, result.error_kind) == (0, "connect")

    run_with_web(test, adapter)


def test_cancellation_propagates(adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        task = asyncio.create_task(fetcher.fetch(url(web, "/drip")))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run_with_web(test, adapter)


# --- SSRF -----------------------------------------------------------------------------------


def test_unmapped_loopback_name_is_blocked(adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        result = await fetcher.fetch(url(web, "/page", host="localhost"))
        assert (result.status, result.error_kind) == (0, "blocked_address")
        literal = await fetcher.fetch(url(web, "/page", host="127.0.0.1"))
        assert (literal.status, literal.error_kind) == (0, "blocked_address")
        with pytest.raises(BlockedAddress):
            await fetcher.resolve("localhost")
        assert await fetcher.resolve("site.test") == "127.0.0.1"  # mapped: trusted
        assert web.connections == []  # nothing reached the server

    run_with_web(test, adapter)


def test_allow_private_lets_loopback_through(adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        ip = await fetcher.resolve("localhost")
        assert ip == "127.0.0.1"
        result = await fetcher.fetch(url(web, "/page", host="localhost"), ip=ip)
        assert (result.status, result.body) == (200, PAGE)
        assert result.ip == "127.0.0.1"

    run_with_web(test, adapter, allow_private=True)


def test_connector_resolver_guards_plain_aiohttp_use() -> None:
    # The adapter on its own (no pin from AiohttpFetcher.fetch) resolves and checks too.
    async def test(web: Web, fetcher: AiohttpFetcher) -> None:
        resolver = CachingResolver(HostMap.from_options(["site.test:127.0.0.1"], None))
        connector = aiohttp.TCPConnector(
            use_dns_cache=False, resolver=AiohttpResolver(resolver, allow_private=False)
        )
        async with aiohttp.ClientSession(connector=connector) as session:
            async with session.get(url(web, "/page")) as resp:
                assert await resp.read() == PAGE
            with pytest.raises(BlockedAddress):
                await session.get(url(web, "/page", host="localhost"))
        assert web.paths() == ["/page"]

    run_with_web(test, AiohttpFetcher)


def test_a_pinned_ip_is_checked_too(adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        result = await fetcher.fetch(url(web, "/page", host="elsewhere.test"), ip="127.0.0.1")
        assert result.error_kind == "blocked_address"
        assert web.connections == []

    run_with_web(test, adapter)


def test_unknown_name_is_a_dns_failure(adapter: type[FetcherBase]) -> None:
    async def test(web: Web, fetcher: FetcherBase) -> None:
        result = await fetcher.fetch(f"http://nowhere.invalid:{web.port}/")
        assert (result.status, result.error_kind, result.ip) == (0, "dns", None)
        other_scheme = await fetcher.fetch("ftp://site.test/file")
        assert (other_scheme.status, other_scheme.error_kind) == (0, "invalid_url")

    run_with_web(test, adapter)


# --- --dns-server ---------------------------------------------------------------------------


def run_with_dns(
    test: Callable[[DnsServer, int], Awaitable[None]],
    zone: dict[str, str],
    slow: frozenset[str] = frozenset(),
) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        transport, server = await loop.create_datagram_endpoint(
            lambda: DnsServer(zone, slow), local_addr=("127.0.0.1", 0)
        )
        try:
            await test(server, transport.get_extra_info("sockname")[1])
        finally:
            transport.close()
            await asyncio.sleep(0)

    asyncio.run(main())


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_dns_server_answers_and_caches() -> None:
    clock = FakeClock()

    async def test(server: DnsServer, port: int) -> None:
        resolver = CachingResolver(
            HostMap(), dns_server=f"127.0.0.1:{port}", ttl_s=300, negative_ttl_s=60, clock=clock
        )
        try:
            assert await resolver.resolve("good.test") == "192.0.2.7"
            assert await resolver.resolve("GOOD.test.") == "192.0.2.7"  # cached
            assert server.queries == [("good.test", "A")]
            with pytest.raises(FetchError) as info:
                await resolver.resolve("missing.test")
            assert info.value.kind == "dns"
            assert "missing.test" in str(info.value)
            with pytest.raises(FetchError):
                await resolver.resolve("missing.test")  # negative answer cached
            assert server.queries.count(("missing.test", "A")) == 1
            clock.now += 61  # negative TTL over, positive still fresh
            with pytest.raises(FetchError):
                await resolver.resolve("missing.test")
            assert await resolver.resolve("good.test") == "192.0.2.7"
            assert server.queries.count(("missing.test", "A")) == 2
            assert server.queries.count(("good.test", "A")) == 1
            clock.now += 300
            await resolver.resolve("good.test")
            assert server.queries.count(("good.test", "A")) == 2
            assert await resolver.resolve("10.9.8.7") == "10.9.8.7"  # literal: no query
            assert len(server.queries) == 4  # NXDOMAIN on A: no AAAA query
            assert "cached=2" in repr(resolver)
        finally:
            await resolver.close()

    run_with_dns(test, {"good.test": "192.0.2.7"})


def test_concurrent_lookups_share_one_query() -> None:
    async def test(server: DnsServer, port: int) -> None:
        resolver = CachingResolver(HostMap(), dns_server=f"127.0.0.1:{port}")
        try:
            # One waiter is cancelled mid-lookup: the others must still get the answer.
            victim = asyncio.create_task(resolver.resolve("slow.test"))
            waiters = [asyncio.create_task(resolver.resolve("slow.test")) for _ in range(20)]
            await asyncio.sleep(0.05)
            assert resolver.stats().in_flight == 1
            victim.cancel()
            assert await asyncio.gather(*waiters) == ["192.0.2.8"] * 20
            assert server.queries == [("slow.test", "A")]
        finally:
            await resolver.close()

    run_with_dns(test, {"slow.test": "192.0.2.8"}, slow=frozenset({"slow.test"}))


def test_dns_answer_pointing_at_loopback_is_refused_unless_allowed(
    adapter: type[FetcherBase],
) -> None:
    async def test(server: DnsServer, dns_port: int) -> None:
        web, http = await _start_web()
        resolver = CachingResolver(HostMap(), dns_server=f"127.0.0.1:{dns_port}")
        try:
            page = f"http://rebind.test:{web.port}/page"
            async with adapter(user_agent=UA, resolver=resolver) as strict:
                refused = await strict.fetch(page)
            async with adapter(user_agent=UA, resolver=resolver, allow_private=True) as lax:
                allowed = await lax.fetch(page)
            assert refused.error_kind == "blocked_address"
            assert (allowed.status, allowed.body, allowed.ip) == (200, PAGE, "127.0.0.1")
            assert web.paths() == ["/page"]
            assert server.queries == [("rebind.test", "A")]  # one cached answer for both
        finally:
            await resolver.close()
            await _stop_web(web, http)

    run_with_dns(test, {"rebind.test": "127.0.0.1"})


def test_bad_dns_server_option() -> None:
    with pytest.raises(ConfigError, match="--dns-server"):
        CachingResolver(HostMap(), dns_server="dns.example:53")


# --- user agent -----------------------------------------------------------------------------


def test_build_user_agent() -> None:
    assert build_user_agent("0.1.0", "https://example.org/bot") == (
        "trawl/0.1.0 (+https://example.org/bot)"
    )
    for bad in ["", "example.org/bot", "mailto:ops@example.org", "https://"]:
        with pytest.raises(ConfigError, match="contact URL"):
            build_user_agent("0.1.0", bad)
