"""The HTTP fetcher: one GET per call, capped in time and size, failures as results.

How this works:
- `fetch` resolves the host through the shared CachingResolver and applies the SSRF guard
  *before* connecting, then pins that (host, ip) in a context variable that the connector's
  resolver (`AiohttpResolver`, with aiohttp's own DNS cache off) answers from, so aiohttp
  connects to exactly the address that was checked. IP-literal URLs never reach aiohttp's
  resolver, which is another reason the check happens here. Both checks are given the same
  rules, `allow_networks` included.
- One `asyncio.timeout(total_timeout_s)` covers queueing for a connection, connect, headers
  and body: a total deadline, so a server dripping one byte a second is cut at the deadline.
- aiohttp does not decompress (`auto_decompress=False`); the raw body is counted against
  `max_body_bytes` (hit: stop, keep what was read, `truncated=True`) and fed to a BodyDecoder
  capped at `max_decoded_bytes` (hit: the `too_big` failure).
- Bodies are read only for stored types (HTML) or `read_any_type=True` (robots.txt); any
  other response is closed unread, dropping the connection rather than draining a video.
- Redirects are not followed: a 3xx is returned with its Location header for the frontier.
- The request head is kept as aiohttp wrote it (request line and headers, read by our
  ClientRequest subclass once it has sent them) for the WARC request record.
- Known web failures become a FetchResult with `status=0`, `error_kind` and `error`; the
  invariant is `status == 0` if and only if `error_kind is not None`. CancelledError and
  programming errors propagate.
"""

from __future__ import annotations

import contextvars
import functools
import socket
from typing import TYPE_CHECKING, Any, cast

import aiohttp
import yarl
from aiohttp import http_exceptions
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.client_proto import ResponseHandler

from trawl.errors import FetchError
from trawl.fetch.decode import BodyDecoder
from trawl.fetch.dns import normalise_host
from trawl.fetch.http_common import (
    Exchange,
    FetcherBase,
    decode_header,
    is_plain_ascii,
    mime_type,
    one_line,
)
from trawl.fetch.ssrf import check_address

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from aiohttp.client_reqrep import ConnectionKey
    from aiohttp.connector import Connection

    from trawl.fetch.dns import CachingResolver
    from trawl.fetch.ssrf import IPNetwork


# The (host, ip) the current fetch already resolved and checked; the connector's resolver
# uses it so aiohttp connects to exactly that address. Task-local, so concurrent fetches of
# one host cannot see each other's pin.
pinned_address: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "trawl_pinned_address", default=None
)


class AiohttpResolver(AbstractResolver):
    """aiohttp's resolver port, answered by a CachingResolver and checked by the SSRF guard.

    Use with `TCPConnector(use_dns_cache=False)` so every connection asks this adapter.
    Raises BlockedAddress (not an OSError, so aiohttp lets it through unwrapped) or
    FetchError("dns").
    """

    def __init__(
        self,
        resolver: CachingResolver,
        *,
        allow_private: bool,
        allow_networks: Sequence[IPNetwork] = (),
    ) -> None:
        self._resolver = resolver
        self._allow_private = allow_private
        self._allow_networks = tuple(allow_networks)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        pin = pinned_address.get()
        if pin is not None and pin[0] == normalise_host(host):
            ip = pin[1]
        else:
            ip = await self._resolver.resolve(host)
        check_address(
            host,
            ip,
            mapped=self._resolver.is_mapped(host),
            allow_private=self._allow_private,
            allow_networks=self._allow_networks,
        )
        addr_family = socket.AF_INET6 if ":" in ip else socket.AF_INET
        return [
            {
                "hostname": host,
                "host": ip,
                "port": port,
                "family": addr_family,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        """The CachingResolver belongs to the fetcher, which closes it; nothing to release."""


def _raw_headers_block(resp: aiohttp.ClientResponse) -> bytes:
    """The status line and header lines as received, ending in CRLF CRLF (for WARC)."""
    version = resp.version or aiohttp.HttpVersion11
    reason = (resp.reason or "").encode("latin-1", "replace")
    lines = [b"HTTP/%d.%d %d %s" % (version.major, version.minor, resp.status, reason)]
    lines.extend(name + b": " + value for name, value in resp.raw_headers)
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _request_head(
    method: str, url: yarl.URL, version: aiohttp.HttpVersion, headers: Mapping[str, str]
) -> bytes:
    """The request line and headers as aiohttp writes them (origin-form target, RFC 9112
    §3.2.1), ending in CRLF CRLF; aiohttp encodes its head as UTF-8 (http_writer)."""
    lines = [f"{method} {url.raw_path_qs} HTTP/{version.major}.{version.minor}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return "\r\n".join(lines).encode("utf-8", "replace") + b"\r\n\r\n"


def _peer_ip(resp: aiohttp.ClientResponse) -> str | None:
    connection = resp.connection
    transport = connection.transport if connection is not None else None
    peer = transport.get_extra_info("peername") if transport is not None else None
    return str(peer[0]) if peer else None


def _discard_body(resp: aiohttp.ClientResponse) -> None:
    """Leave the body unread: keep the connection only if the body was already complete."""
    if resp.content.is_eof():
        resp.release()  # 304s, bodiless redirects: nothing left to drain, keep-alive holds
    else:
        resp.close()  # drop the connection rather than drain a video


def _classify(exc: BaseException) -> tuple[str, str]:
    """Map a known web failure to (error_kind, message); the message is one short line."""
    message = one_line(exc)
    if isinstance(exc, FetchError):
        return exc.kind, message
    if isinstance(exc, TimeoutError):
        return "timeout", "total deadline passed"
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return "dns", message
    if isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ClientSSLError):
        return "connect", message
    if isinstance(exc, aiohttp.InvalidURL):
        return "invalid_url", message
    if isinstance(exc, aiohttp.ClientPayloadError):
        # A body cut short by the peer is a reset; bad chunk framing is a protocol error.
        cause = exc.__cause__
        if isinstance(cause, http_exceptions.ContentLengthError):
            return "reset", message
        return "protocol", message
    if isinstance(exc, aiohttp.ClientResponseError):
        return "protocol", message  # unparsable status line or headers, headers over the cap
    if isinstance(
        exc, aiohttp.ServerDisconnectedError | ConnectionResetError | aiohttp.ClientOSError
    ):
        return "reset", message
    return "protocol", message


class AiohttpFetcher(FetcherBase):
    """GET pages over a shared keep-alive pool; see the module docstring for the rules.

    `close()` closes the pool and the CachingResolver the fetcher was built with (the loop
    closes the fetcher only); closing a CachingResolver is idempotent and keeps its cache,
    so a resolver shared between fetchers stays usable.
    """

    # The failures a hostile or broken web can cause; anything else is our bug and propagates.
    _web_failures = (FetchError, TimeoutError, aiohttp.ClientError, OSError)
    _session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
        await super().close()

    _classify = staticmethod(_classify)

    async def _exchange(self, exchange: Exchange) -> None:
        try:
            target = yarl.URL(exchange.url, encoded=is_plain_ascii(exchange.url))
        except ValueError as exc:
            raise aiohttp.InvalidURL(exchange.url, str(exc)) from exc
        host = target.raw_host
        if not host or target.scheme not in ("http", "https"):
            raise aiohttp.InvalidURL(exchange.url)
        ip = await self._address(exchange, host)
        token = pinned_address.set((normalise_host(host), ip))
        sending = _sending.set(exchange)
        try:
            session = self._ensure_session()
            async with session.get(
                target, headers=self._request_headers(exchange.extra_headers), allow_redirects=False
            ) as resp:
                exchange.ip = _peer_ip(resp) or ip
                exchange.status = resp.status
                exchange.headers = tuple(
                    (decode_header(k), decode_header(v)) for k, v in resp.raw_headers
                )
                exchange.raw_headers_block = _raw_headers_block(resp)
                mime = mime_type(resp.headers.get("Content-Type"))
                if not (exchange.read_any_type or mime in self.stored_types):
                    _discard_body(resp)
                    return
                await self._read_body(exchange, resp)
        finally:
            _sending.reset(sending)
            pinned_address.reset(token)

    async def _read_body(self, exchange: Exchange, resp: aiohttp.ClientResponse) -> None:
        decoder = BodyDecoder(resp.headers.get("Content-Encoding"), self.max_decoded_bytes)
        while not decoder.is_stopped and (chunk := await resp.content.readany()):
            if exchange.feed_body(decoder, chunk):
                break
        if exchange.truncated or decoder.is_stopped:
            resp.close()  # the rest of the body is unwanted; this connection can't be reused
        exchange.take_body(decoder)

    def _ensure_session(self) -> aiohttp.ClientSession:
        # Built on first use so it binds to the running loop (aiohttp requires one).
        if self._session is None:
            connector = _PoolingConnector(
                limit=self.max_connections,
                limit_per_host=0,
                use_dns_cache=False,  # every connection asks our resolver: one cache, one answer
                resolver=AiohttpResolver(
                    self.resolver,
                    allow_private=self.allow_private,
                    allow_networks=self.allow_networks,
                ),
                family=socket.AF_UNSPEC,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                auto_decompress=False,
                timeout=aiohttp.ClientTimeout(total=None),  # our asyncio.timeout is the deadline
                cookie_jar=aiohttp.DummyCookieJar(),
                trust_env=False,
                max_line_size=self.max_header_bytes,
                max_field_size=self.max_header_bytes,
                max_headers=self.max_headers,
                request_class=_RecordingRequest,
            )
        return self._session


class _PoolingConnector(aiohttp.TCPConnector):
    """aiohttp's connector, keeping an idle connection without its last response's parser.

    Why: a pooled connection kept the parser of the response it last carried (with that
    response's header lists, a set and a timer) and its body's stream until its next
    request. A crawl holds one idle connection a site, each renewed every politeness gap,
    so ~2,000 sites kept some 50,000 young objects alive that every garbage collection of
    the crawl loop walked and kept: gen0 collections of 44,000-110,000 objects, 40-85 ms
    each (issue 17's loop stalls). A connection is pooled only when its response was read
    to the end, and the next request builds both anew (`set_response_params`) before it
    is sent, so nothing reads them in between. Bytes a server sends on a connection while
    it idles in the pool answer no request: the connection is closed (`_IdleClosing`).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._factory = cast(
            "functools.partial[ResponseHandler]", functools.partial(_IdleClosing, loop=self._loop)
        )

    def _release(
        self, key: ConnectionKey, protocol: ResponseHandler, *, should_close: bool = False
    ) -> None:
        if not (should_close or protocol.should_close):
            protocol._parser = None
            protocol._payload = None
        super()._release(key, protocol, should_close=should_close)


class _IdleClosing(ResponseHandler):
    """A connection that closes itself when bytes arrive while no response is expected
    (no parser: it idles in the pool, see `_PoolingConnector`). aiohttp would keep them to
    parse as the answer to the next request sent on it."""

    def data_received(self, data: bytes) -> None:
        if data and self._parser is None and self._payload_parser is None and not self._upgraded:
            self._should_close = True
            if self.transport is not None:
                self.transport.close()
            return
        super().data_received(data)


# The fetch the running task is making, for _RecordingRequest: aiohttp builds the request
# object itself, so this is how the exchange reaches it. Set and reset around session.get
# by that fetch's task only (task-local, like dns.pinned_address).
_sending: contextvars.ContextVar[Exchange | None] = contextvars.ContextVar(
    "trawl_sending", default=None
)


class _RecordingRequest(aiohttp.ClientRequest):
    """aiohttp's request, keeping the head it writes for the WARC request record.

    A GET has no body, so `send` writes the head itself (buffered, then out in set_eof)
    before it returns: the moment `on_sent` marks for the per-IP gate. `finally`, because
    the head is recorded and `on_sent` called once the write is tried, as the "headers
    sent" trace signal this replaces did (it fired just before the write). A trace config
    made aiohttp build trace objects and send signals at every step, each body chunk
    included: ~16 % of a 100 KB fetch's CPU (bench/fetch_bench.py).
    """

    async def send(self, conn: Connection) -> aiohttp.ClientResponse:
        try:
            return await super().send(conn)
        finally:
            exchange = _sending.get()
            if exchange is not None:
                exchange.request_head = _request_head(
                    self.method, self.url, self.version, self.headers
                )
                if exchange.on_sent is not None:
                    exchange.on_sent()
