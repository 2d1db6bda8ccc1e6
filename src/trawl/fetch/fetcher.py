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

import asyncio
import contextvars
import functools
import socket
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self, cast
from urllib.parse import urlsplit

import aiohttp
import yarl
from aiohttp import http_exceptions
from aiohttp.client_proto import ResponseHandler

from trawl.errors import ConfigError, FetchError
from trawl.fetch.decode import BodyDecoder
from trawl.fetch.dns import AiohttpResolver, pinned_address
from trawl.fetch.ssrf import check_address
from trawl.model import FetchResult

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from types import TracebackType

    from aiohttp.client_reqrep import ConnectionKey
    from aiohttp.connector import Connection

    from trawl.fetch.dns import CachingResolver
    from trawl.fetch.ssrf import IPNetwork

MIB = 1024 * 1024
DEFAULT_STORED_TYPES = ("text/html", "application/xhtml+xml")
ACCEPT_ENCODING = "gzip, deflate, br"
ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1"
_MAX_ERROR_CHARS = 300  # aiohttp quotes the offending bytes: a 20 KB header stays out of records


def build_user_agent(version: str, contact_url: str) -> str:
    """`trawl/<version> (+<contact URL>)`; raises ConfigError unless the URL is http(s)."""
    parts = urlsplit(contact_url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"contact URL {contact_url!r} must be an http(s) URL")
    return f"trawl/{version} (+{contact_url.strip()})"


def _decode_header(raw: bytes) -> str:
    # UTF-8 keeps a Location with non-ASCII characters usable; Latin-1 never fails.
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


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


def _mime_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _classify(exc: BaseException) -> tuple[str, str]:
    """Map a known web failure to (error_kind, message); the message is one short line."""
    message = " ".join(str(exc).split())[:_MAX_ERROR_CHARS] or type(exc).__name__
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


# The failures a hostile or broken web can cause; anything else is our bug and propagates.
_WEB_FAILURES = (FetchError, TimeoutError, aiohttp.ClientError, OSError)


@dataclass(slots=True)
class _Exchange:
    """What one fetch learned so far; written only by the task running that fetch."""

    url: str
    started_at: float
    start_s: float
    ip: str | None = None
    status: int = 0
    headers: tuple[tuple[str, str], ...] = ()
    raw_headers_block: bytes = b""
    body: bytes | None = None
    truncated: bool = False
    raw_bytes: int = 0
    error_kind: str | None = None  # set for failures found after the response arrived
    error: str | None = None
    request_head: bytes = b""  # set by _RecordingRequest.send
    on_sent: Callable[[], None] | None = None

    def result(self) -> FetchResult:
        failed = self.error_kind is not None
        return FetchResult(
            url=self.url,
            status=0 if failed else self.status,
            headers=self.headers,
            body=None if failed else self.body,
            started_at=self.started_at,
            elapsed_s=time.monotonic() - self.start_s,
            ip=self.ip,
            truncated=self.truncated,
            error_kind=self.error_kind,
            error=self.error,
            raw_headers_block=self.raw_headers_block,
            request_head=self.request_head,
        )


@dataclass(frozen=True, slots=True)
class FetcherStats:
    fetches: int
    in_flight: int
    failures: int
    bytes_read: int


class AiohttpFetcher:
    """GET pages over a shared keep-alive pool; see the module docstring for the rules.

    `close()` closes the pool and the CachingResolver the fetcher was built with (the loop
    closes the fetcher only); closing a CachingResolver is idempotent and keeps its cache,
    so a resolver shared between fetchers stays usable.
    """

    def __init__(
        self,
        *,
        user_agent: str,
        resolver: CachingResolver,
        allow_private: bool = False,
        allow_networks: Sequence[IPNetwork] = (),
        total_timeout_s: float = 10.0,
        max_body_bytes: int = 10 * MIB,
        max_decoded_bytes: int = 50 * MIB,
        max_header_bytes: int = 16 * 1024,
        max_headers: int = 128,
        stored_types: tuple[str, ...] = DEFAULT_STORED_TYPES,
        max_connections: int = 2000,
    ) -> None:
        self.user_agent = user_agent
        self.resolver = resolver
        self.allow_private = allow_private
        self.allow_networks = tuple(allow_networks)
        self.total_timeout_s = total_timeout_s
        self.max_body_bytes = max_body_bytes
        self.max_decoded_bytes = max_decoded_bytes
        self.max_header_bytes = max_header_bytes
        self.max_headers = max_headers
        self.stored_types = tuple(t.lower() for t in stored_types)
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._fetches = 0
        self._in_flight = 0
        self._failures = 0
        self._bytes_read = 0

    def __repr__(self) -> str:
        s = self.stats()
        return (
            f"<AiohttpFetcher fetches={s.fetches} in_flight={s.in_flight} failures={s.failures} "
            f"bytes_read={s.bytes_read}>"
        )

    def stats(self) -> FetcherStats:
        return FetcherStats(
            fetches=self._fetches,
            in_flight=self._in_flight,
            failures=self._failures,
            bytes_read=self._bytes_read,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
        await self.resolver.close()

    async def resolve(self, host: str) -> str:
        """The IP a fetch of `host` would use; raises FetchError("dns") or BlockedAddress."""
        ip = await self.resolver.resolve(host)
        self._check(host, ip)
        return ip

    def _check(self, host: str, ip: str) -> None:
        check_address(
            host,
            ip,
            mapped=self.resolver.is_mapped(host),
            allow_private=self.allow_private,
            allow_networks=self.allow_networks,
        )

    async def fetch(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        read_any_type: bool = False,
        max_body_bytes: int | None = None,
        ip: str | None = None,
        on_sent: Callable[[], None] | None = None,
    ) -> FetchResult:
        """GET `url` without following redirects; web failures come back as results.

        `ip`, if given, is the address from an earlier `resolve(host)` (it is checked
        again); otherwise the host is resolved here. `max_body_bytes` overrides the
        fetcher's raw body cap for this call (robots.txt uses 500 KiB). `on_sent` is called
        once the request head is written to the connection (the per-IP gate's start).
        """
        exchange = _Exchange(
            url=url, started_at=time.time(), start_s=time.monotonic(), on_sent=on_sent
        )
        self._fetches += 1
        self._in_flight += 1
        try:
            async with asyncio.timeout(self.total_timeout_s):
                await self._exchange(
                    exchange,
                    headers=headers,
                    read_any_type=read_any_type,
                    max_body_bytes=self.max_body_bytes
                    if max_body_bytes is None
                    else max_body_bytes,
                    ip=ip,
                )
        except _WEB_FAILURES as exc:
            exchange.error_kind, exchange.error = _classify(exc)
        finally:
            self._in_flight -= 1
            self._bytes_read += exchange.raw_bytes
        if exchange.error_kind is not None:
            self._failures += 1
        return exchange.result()

    async def _exchange(
        self,
        exchange: _Exchange,
        *,
        headers: Mapping[str, str] | None,
        read_any_type: bool,
        max_body_bytes: int,
        ip: str | None,
    ) -> None:
        try:
            target = yarl.URL(exchange.url, encoded=_is_plain_ascii(exchange.url))
        except ValueError as exc:
            raise aiohttp.InvalidURL(exchange.url, str(exc)) from exc
        host = target.raw_host
        if not host or target.scheme not in ("http", "https"):
            raise aiohttp.InvalidURL(exchange.url)
        if ip is None:
            ip = await self.resolve(host)
        else:
            self._check(host, ip)
        exchange.ip = ip
        token = pinned_address.set((host.rstrip(".").lower(), ip))
        sending = _sending.set(exchange)
        try:
            session = self._ensure_session()
            async with session.get(
                target, headers=self._request_headers(headers), allow_redirects=False
            ) as resp:
                exchange.ip = _peer_ip(resp) or ip
                exchange.status = resp.status
                exchange.headers = tuple(
                    (_decode_header(k), _decode_header(v)) for k, v in resp.raw_headers
                )
                exchange.raw_headers_block = _raw_headers_block(resp)
                mime = _mime_type(resp.headers.get("Content-Type"))
                if not (read_any_type or mime in self.stored_types):
                    _discard_body(resp)
                    return
                await self._read_body(exchange, resp, max_body_bytes)
        finally:
            _sending.reset(sending)
            pinned_address.reset(token)

    async def _read_body(
        self, exchange: _Exchange, resp: aiohttp.ClientResponse, max_body_bytes: int
    ) -> None:
        decoder = BodyDecoder(resp.headers.get("Content-Encoding"), self.max_decoded_bytes)
        while not decoder.is_stopped:
            chunk = await resp.content.readany()
            if not chunk:
                break
            room = max_body_bytes - exchange.raw_bytes
            if len(chunk) > room:
                chunk = chunk[:room]
                exchange.truncated = True
            exchange.raw_bytes += len(chunk)
            decoder.feed(chunk)
            if exchange.truncated:
                break
        if exchange.truncated or decoder.is_stopped:
            resp.close()  # the rest of the body is unwanted; this connection can't be reused
        body = decoder.finish(expect_end=not exchange.truncated)
        if decoder.too_big:
            exchange.error_kind = "too_big"
            exchange.error = f"body decodes to more than {self.max_decoded_bytes} bytes"
        elif decoder.error is not None:
            exchange.error_kind, exchange.error = "decode", decoder.error
        exchange.body = body

    def _request_headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = {
            "User-Agent": self.user_agent,
            "Accept": ACCEPT,
            "Accept-Encoding": ACCEPT_ENCODING,
        }
        if extra:
            headers.update(extra)
        return headers

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
_sending: contextvars.ContextVar[_Exchange | None] = contextvars.ContextVar(
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


def _is_plain_ascii(url: str) -> bool:
    """Send a normalised URL byte for byte; let yarl quote anything that isn't."""
    # Every character in 33..126: ASCII, printable (no C0 controls, no DEL), and no space
    # (the one printable ASCII character below 33). Three C loops instead of a genexpr.
    return url.isascii() and url.isprintable() and " " not in url
