"""What only Http1Fetcher has, over real loopback sockets: TLS, the connection cap, idle
expiry, the retry of a stale keep-alive connection, interim (1xx) answers, header limits,
and the framing cases of its own parser.

The server is a raw asyncio stream server (plain or TLS with a `trustme` certificate) whose
routes write byte-exact answers. It logs each request with the connection it came on and
counts the connections it holds open when each request arrives, so the cap is checked from
its side. The tests shared with AiohttpFetcher are in test_fetcher.py and the contract suite.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest
import trustme
from tests.servers.raw_http import response_head

from trawl.fetch.dns import CachingResolver, HostMap
from trawl.fetch.fetcher import AiohttpFetcher
from trawl.fetch.http1 import IDLE_S, Http1Fetcher

if TYPE_CHECKING:
    from trawl.fetch.http_common import FetcherBase

pytestmark = pytest.mark.timeout(30)

UA = "trawl/0.1 (+https://example.org/bot)"
PAGE = b"<!doctype html><title>t</title>" + b"<p>http1 test page</p>" * 100
HOSTS = ("site.test", "a.test", "b.test", "c.test")


PAGE_ANSWER = response_head(
    "200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(PAGE)))]
)
PAGE_ANSWER += PAGE


@dataclass
class Server:
    """Logs (connection number, path) a request; `peak` is the most connections it held
    open when a request arrived (a closed connection is seen as such before a later
    connection's request is read)."""

    port: int = 0
    connections: int = 0
    open_now: int = 0
    peak: int = 0
    requests: list[tuple[int, str]] = field(default_factory=list)


Route = Callable[[asyncio.StreamWriter, int], Awaitable[bool]]  # (writer, request no.) -> keep?


async def _page(writer: asyncio.StreamWriter, n: int) -> bool:
    writer.write(PAGE_ANSWER)
    return True


async def _slow(writer: asyncio.StreamWriter, n: int) -> bool:
    await asyncio.sleep(0.2)
    return await _page(writer, n)


async def _early_hints(writer: asyncio.StreamWriter, n: int) -> bool:
    writer.write(response_head("100 Continue", []))
    writer.write(response_head("103 Early Hints", [("Link", "</s.css>; rel=preload; as=style")]))
    await writer.drain()
    await asyncio.sleep(0.05)  # the real answer in a read of its own
    return await _page(writer, n)


async def _many_headers(writer: asyncio.StreamWriter, n: int) -> bool:
    extra = [(f"X-H{i}", "v") for i in range(5)]
    writer.write(response_head("200 OK", [*extra, ("Content-Length", "0")]))
    return True


async def _long_header(writer: asyncio.StreamWriter, n: int) -> bool:
    writer.write(response_head("200 OK", [("X-Long", "v" * 300), ("Content-Length", "0")]))
    return True


async def _long_reason(writer: asyncio.StreamWriter, n: int) -> bool:
    writer.write(response_head("200 " + "O" * 300, [("Content-Length", "0")]))
    return True


async def _endless_header(writer: asyncio.StreamWriter, n: int) -> bool:
    writer.write(b"HTTP/1.1 200 OK\r\nX-Endless: ")
    for _ in range(64):
        writer.write(b"v" * 1024)
        await writer.drain()
        await asyncio.sleep(0.001)
    return False


async def _until_close(writer: asyncio.StreamWriter, n: int) -> bool:
    writer.write(response_head("200 OK", [("Content-Type", "text/html")]) + PAGE[:1000])
    await writer.drain()
    await asyncio.sleep(0.05)
    writer.write(PAGE[1000:])
    return False  # the close ends the body


async def _chunked_cut(writer: asyncio.StreamWriter, n: int) -> bool:
    headers = [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")]
    writer.write(response_head("200 OK", headers) + b"5\r\nhello\r\n")
    return False


async def _chunked(writer: asyncio.StreamWriter, n: int) -> bool:
    headers = [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")]
    writer.write(response_head("200 OK", headers) + b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
    return True


async def _first_only(writer: asyncio.StreamWriter, n: int) -> bool:
    """Answers the first request on a connection, closes on any later one unanswered: a
    server that dropped an idle keep-alive connection just as it was reused."""
    return n == 0 and await _page(writer, n)


async def _never(writer: asyncio.StreamWriter, n: int) -> bool:
    return False  # closes without a byte, whatever the connection


async def _drip(writer: asyncio.StreamWriter, n: int) -> bool:
    writer.write(
        response_head("200 OK", [("Content-Type", "text/html"), ("Content-Length", "100")])
    )
    for _ in range(100):
        writer.write(b"x")
        await writer.drain()
        await asyncio.sleep(0.1)
    return True


ROUTES: dict[str, Route] = {
    "/page": _page,
    "/slow": _slow,
    "/early-hints": _early_hints,
    "/many-headers": _many_headers,
    "/long-header": _long_header,
    "/long-reason": _long_reason,
    "/endless-header": _endless_header,
    "/until-close": _until_close,
    "/chunked-cut": _chunked_cut,
    "/chunked": _chunked,
    "/first-only": _first_only,
    "/never": _never,
    "/drip": _drip,
}


async def _serve(
    server: Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    number = server.connections
    server.connections += 1
    server.open_now += 1
    try:
        for n in range(1000):
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ")[1].decode()
            server.requests.append((number, path))
            server.peak = max(server.peak, server.open_now)
            if not await ROUTES[path](writer, n):
                break
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        server.open_now -= 1
        writer.close()


def run(
    test: Callable[[Server, Any], Awaitable[None]],
    *,
    server_tls: ssl.SSLContext | None = None,
    adapter: type[FetcherBase] = Http1Fetcher,
    **options: Any,
) -> None:
    """Run `test` with a fresh server and a fetcher that maps HOSTS to 127.0.0.1."""

    async def main() -> None:
        server = Server()
        http = await asyncio.start_server(
            lambda r, w: _serve(server, r, w), "127.0.0.1", 0, ssl=server_tls
        )
        server.port = http.sockets[0].getsockname()[1]
        resolver = CachingResolver(HostMap.from_options([f"{h}:127.0.0.1" for h in HOSTS], None))
        try:
            async with adapter(user_agent=UA, resolver=resolver, **options) as fetcher:
                await test(server, fetcher)
        finally:
            http.close()  # asyncio.run cancels the handlers still running
            await http.wait_closed()

    asyncio.run(main())


def url(server: Server, path: str, host: str = "site.test", scheme: str = "http") -> str:
    return f"{scheme}://{host}:{server.port}{path}"


# --- TLS ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _server_tls(ca: trustme.CA, name: str, seen: list[str] | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(name).configure_cert(context)
    if seen is not None:
        context.sni_callback = lambda sslobj, sni, ctx: seen.append(sni)
    return context


def _trusting(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


def test_https_with_a_trusted_certificate(ca: trustme.CA) -> None:
    sni: list[str] = []

    async def test(server: Server, fetcher: Http1Fetcher) -> None:
        first = await fetcher.fetch(url(server, "/page", scheme="https"))
        second = await fetcher.fetch(url(server, "/page", scheme="https"))
        assert (first.status, first.body, first.error) == (200, PAGE, None)
        assert (second.status, second.body) == (200, PAGE)
        assert first.request_head.startswith(b"GET /page HTTP/1.1\r\nHost: site.test:")
        assert server.connections == 1  # kept alive over TLS too
        assert sni == ["site.test"]  # the host name went out as SNI

    run(test, server_tls=_server_tls(ca, "site.test", sni), ssl_context=_trusting(ca))


@pytest.mark.parametrize("adapter", [Http1Fetcher, AiohttpFetcher])
def test_https_with_an_untrusted_certificate_is_a_connect_failure(
    ca: trustme.CA, adapter: type[FetcherBase]
) -> None:
    async def test(server: Server, fetcher: Http1Fetcher) -> None:
        sent: list[None] = []
        result = await fetcher.fetch(
            url(server, "/page", scheme="https"), on_sent=lambda: sent.append(None)
        )
        assert (result.status, result.error_kind, result.body) == (0, "connect", None)
        assert result.error is not None
        assert result.error.startswith(f"Cannot connect to host site.test:{server.port} ssl:")
        assert "CERTIFICATE_VERIFY_FAILED" in result.error
        assert (sent, result.request_head, server.requests) == ([], b"", [])

    # The machine's trust store: it does not know the test CA.
    run(test, server_tls=_server_tls(ca, "site.test"), adapter=adapter)


def test_https_with_a_certificate_for_another_name_is_a_connect_failure(ca: trustme.CA) -> None:
    async def test(server: Server, fetcher: Http1Fetcher) -> None:
        result = await fetcher.fetch(url(server, "/page", scheme="https"))
        assert (result.status, result.error_kind) == (0, "connect")
        assert result.error is not None
        assert "site.test" in result.error
        assert server.requests == []

    run(test, server_tls=_server_tls(ca, "other.test"), ssl_context=_trusting(ca))


# --- the pool -------------------------------------------------------------------------------


def test_the_connection_cap_holds_on_the_server_side() -> None:
    async def test(server: Server, fetcher: Http1Fetcher) -> None:
        hosts = ("a.test", "b.test", "c.test")
        results = await asyncio.gather(*(fetcher.fetch(url(server, "/slow", h)) for h in hosts))
        assert [(r.status, r.body) for r in results] == [(200, PAGE)] * 3
        assert server.connections == 3  # a host's connection serves that host only
        assert server.peak == 2
        assert fetcher.pool.open <= 2
        again = await fetcher.fetch(url(server, "/page", "c.test"))  # kept: reused
        assert (again.status, server.connections) == (200, 3)

    run(test, max_connections=2)


def test_under_the_cap_an_idle_connection_makes_room_only_once_needed() -> None:
    async def test(server: Server, fetcher: Http1Fetcher) -> None:
        for host in ("a.test", "b.test"):
            assert (await fetcher.fetch(url(server, "/page", host))).status == 200
        assert (fetcher.pool.open, fetcher.pool.idle) == (2, 2)
        third = await fetcher.fetch(url(server, "/page", "c.test"))  # closes a.test's
        assert third.status == 200
        assert (fetcher.pool.open, fetcher.pool.idle) == (2, 2)
        b_again = await fetcher.fetch(url(server, "/page", "b.test"))
        assert b_again.status == 200
        assert server.connections == 3  # b.test's connection was kept
        assert server.peak == 2

    run(test, max_connections=2)


def test_idle_connections_expire() -> None:
    async def test(server: Server, fetcher: Http1Fetcher) -> None:
        assert (await fetcher.fetch(url(server, "/page"))).status == 200
        fetcher.close_expired(time.monotonic() + IDLE_S - 1)  # not yet
        assert (fetcher.pool.idle, server.open_now) == (1, 1)
        fetcher.close_expired(time.monotonic() + IDLE_S)
        assert fetcher.pool.idle == 0
        for _ in range(50):  # the server sees the close
            if server.open_now == 0:
                break
            await asyncio.sleep(0.01)
        assert (server.open_now, fetcher.pool.open) == (0, 0)
        assert (await fetcher.fetch(url(server, "/page"))).status == 200
        assert server.connections == 2
        assert "open=1 idle=1" in repr(fetcher)

    run(test)


def test_a_stale_keep_alive_connection_is_retried_once_on_a_fresh_one() -> None:
    async def test(server: Server, fetcher: Http1Fetcher) -> None:
        sent: list[str] = []
        first = await fetcher.fetch(url(server, "/first-only"), on_sent=lambda: sent.append("1"))
        second = await fetcher.fetch(url(server, "/first-only"), on_sent=lambda: sent.append("2"))
        assert (first.status, second.status, second.body) == (200, 200, PAGE)
        assert server.requests == [(0, "/first-only"), (0, "/first-only"), (1, "/first-only")]
        assert sent == ["1", "2"]  # once a fetch, though the head went out twice
        assert second.request_head == first.request_head

    run(test)


def test_a_fresh_connection_closed_unanswered_is_not_retried() -> None:
    async def test(server: Server, fetcher: Http1Fetcher) -> None:
        result = await fetcher.fetch(url(server, "/never"))
        assert (result.status, result.error_kind) == (0, "reset")
        assert server.requests == [(0, "/never")]

    run(test)


def test_a_cancelled_fetch_leaves_no_connection_in_the_pool() -> None:
    async def test(server: Server, fetcher: Http1Fetcher) -> None:
        task = asyncio.create_task(fetcher.fetch(url(server, "/drip")))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(100):  # the server sees the close at its next write
            if server.open_now == 0:
                break
            await asyncio.sleep(0.02)
        assert (fetcher.pool.idle, fetcher.pool.open, server.open_now) == (0, 0, 0)
        assert (await fetcher.fetch(url(server, "/page"))).body == PAGE
        assert server.connections == 2

    run(test)


# --- answers ------------------------------------------------------------------------------


@pytest.mark.parametrize("adapter", [Http1Fetcher, AiohttpFetcher])
def test_interim_answers_are_skipped(adapter: type[FetcherBase]) -> None:
    async def test(server: Server, fetcher: Http1Fetcher) -> None:
        result = await fetcher.fetch(url(server, "/early-hints"))
        assert (result.status, result.body) == (200, PAGE)
        assert result.header("Link") is None
        assert result.raw_headers_block.startswith(b"HTTP/1.1 200 OK\r\n")
        again = await fetcher.fetch(url(server, "/page"))
        assert (again.status, server.connections) == (200, 1)

    run(test, adapter=adapter)


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("/many-headers", "more than 4 headers"),
        ("/long-header", "over 256 bytes"),
        ("/long-reason", "over 256 bytes"),
        ("/endless-header", "over 1536 bytes"),
    ],
)
def test_heads_over_the_limits_are_protocol_failures(path: str, error: str) -> None:
    async def test(server: Server, fetcher: Http1Fetcher) -> None:
        result = await fetcher.fetch(url(server, path))
        assert (result.status, result.error_kind, result.body) == (0, "protocol", None)
        assert result.error is not None
        assert error in result.error

    run(test, max_headers=4, max_header_bytes=256)


def test_a_head_at_the_limits_is_read() -> None:
    async def test(server: Server, fetcher: Http1Fetcher) -> None:
        result = await fetcher.fetch(url(server, "/many-headers"))
        assert (result.status, len(result.headers)) == (200, 6)

    run(test, max_headers=6)


@pytest.mark.parametrize("adapter", [Http1Fetcher, AiohttpFetcher])
@pytest.mark.parametrize(
    ("path", "status", "kind", "body"),
    [
        ("/until-close", 200, None, PAGE),
        ("/chunked", 200, None, b"hello world"),
        ("/chunked-cut", 0, "protocol", None),
    ],
)
def test_framing(
    adapter: type[FetcherBase], path: str, status: int, kind: str | None, body: bytes | None
) -> None:
    async def test(server: Server, fetcher: Http1Fetcher) -> None:
        result = await fetcher.fetch(url(server, path))
        assert (result.status, result.error_kind, result.body) == (status, kind, body)

    run(test, adapter=adapter)


def test_a_callers_header_takes_the_place_of_a_default_whatever_its_case() -> None:
    async def test(server: Server, fetcher: Http1Fetcher) -> None:
        result = await fetcher.fetch(
            url(server, "/page"), headers={"accept": "text/html", "If-None-Match": '"x"'}
        )
        assert result.request_head.decode().split("\r\n") == [
            "GET /page HTTP/1.1",
            f"Host: site.test:{server.port}",
            f"User-Agent: {UA}",
            "accept: text/html",
            "Accept-Encoding: gzip, deflate, br",
            'If-None-Match: "x"',
            "",
            "",
        ]
        with pytest.raises(ValueError, match="line break"):
            await fetcher.fetch(url(server, "/page"), headers={"X": "a\r\nInjected: yes"})

    run(test)
