"""One HTTP/1.1 client connection of Http1Fetcher: an asyncio protocol parsing with llhttp.

How this works (fetch/http1.py says why, and what the fetcher around it does):
- One request at a time. The fetching task calls `send` (the head goes to the transport) and
  awaits the future it returns; the protocol callbacks, on the same loop, write what arrives
  straight into the fetch's Exchange and end it by resolving that future, with the body's
  decoder (None: the body was not read) or with the failure. The task wakes once a fetch.
- Reads go into the owner's one buffer (asyncio.BufferedProtocol) and llhttp
  (`httptools.HttpResponseParser`, with aiohttp's leniencies) parses all of it before the
  callback returns, so no bytes object is made a read. Header limits as aiohttp's: a header
  whose name and value are over `max_header_bytes`, a reason phrase over it, or more than
  `max_headers` headers is `protocol`; an unfinished head may not grow past a status line
  and a header line (`_head_cap`), so a never-ending header holds no memory.
- 1xx interim answers (103 Early Hints, RFC 9110 §15.2) are skipped; the next answer is the
  one. A body is fed to the BodyDecoder as it arrives (raw cap, decoded cap: Exchange.
  feed_body), and only for stored types or `read_any_type`; otherwise the connection is
  dropped unless the body was already complete in the bytes that brought the head.
- Framing is llhttp's (Content-Length, chunked, or until close: RFC 9112 §6.3). A
  connection lost mid-body is `reset`, `protocol` for a chunked body, or the body's end
  when the close is what delimits it. Lost before any byte of the answer after an earlier
  request on it, the failure is `stale` (the server dropped it while it idled): the fetcher
  retries once, on a fresh connection.
- An exchange that ends drops every reference to its answer (`_unbind`) before the
  connection goes back to the pool (issue 17: idle connections that held their last
  response were what the crawl's garbage collections walked); bytes that arrive while no
  request is out answer nothing and close the connection.
- Failures are `ExchangeFailed(kind)`. A bug of ours raised in a parser callback reaches
  the fetching task, not the event loop's exception handler.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol, cast

import httptools

from trawl.fetch.decode import BodyDecoder
from trawl.fetch.http_common import decode_header, mime_type, one_line
from trawl.model import first_header

if TYPE_CHECKING:
    from trawl.fetch.http_common import Exchange

Key = tuple[str, str, int, str]  # scheme, host, port, ip
_SPENT_PARSER = httptools.HttpResponseParser(object())  # what a closed connection keeps


class ExchangeFailed(Exception):
    """A web failure found on the wire: its error kind, and whether the connection was a
    reused one that closed before answering (`stale`: worth one retry on a fresh one)."""

    def __init__(self, kind: str, message: str, *, stale: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.stale = stale


class ConnectionOwner(Protocol):
    """What a connection needs of the fetcher that opened it (Http1Fetcher)."""

    max_header_bytes: int
    max_headers: int
    max_decoded_bytes: int
    stored_types: tuple[str, ...]
    read_buffer: memoryview  # one for all connections: each parses its read at once

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    def connection_up(self, conn: Http1Connection) -> None:
        """`conn` connected: from now on it holds its slot until `connection_gone`."""

    def connection_gone(self, conn: Http1Connection) -> None:
        """`conn`'s transport is gone: out of the pool, and its slot free."""

    def keep_idle(self, conn: Http1Connection) -> None:
        """`conn` answered in full and may be reused."""

    def drop_idle(self, conn: Http1Connection) -> None:
        """`conn` is closing: out of the pool if it idles there."""


class Http1Connection(asyncio.BufferedProtocol):
    """One HTTP/1.1 connection, one request at a time; see the module docstring.

    The fetching task writes `exchange` and `waiter` in `send`; the protocol callbacks
    write the rest, until the exchange ends (`_finish`, `_fail`).
    """

    __slots__ = (
        "_decoder",
        "_head_cap",
        "_head_done",
        "_head_pending",
        "_informational",
        "_keep_alive",
        "_message_done",
        "_raw",
        "_reason",
        "_received",
        "_stopped",
        "exchange",
        "idle_since",
        "key",
        "making_room",
        "owner",
        "parser",
        "peer_ip",
        "served",
        "transport",
        "waiter",
    )

    def __init__(self, owner: ConnectionOwner, key: Key) -> None:
        self.owner = owner
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.peer_ip: str | None = None
        self.idle_since = 0.0  # written by the pool
        self.making_room = False  # closed to make room under the cap (the owner counts them)
        self.served = 0  # requests sent on this connection
        self.parser = httptools.HttpResponseParser(self)
        # aiohttp's leniencies for responses (its _http_parser.pyx, outside debug mode).
        self.parser.set_dangerous_leniencies(
            lenient_headers=True,
            lenient_optional_cr_before_lf=True,
            lenient_spaces_after_chunk_size=True,
        )
        # Bytes of an unfinished head since a header line last completed: more than a
        # status line and one header line of `max_header_bytes` means no valid head.
        self._head_cap = 2 * owner.max_header_bytes + 1024
        self._raw: list[tuple[bytes, bytes]] = []  # reused: cleared, never handed out
        self._reason = b""
        self.exchange: Exchange | None = None
        self.waiter: asyncio.Future[BodyDecoder | None] | None = None
        self._decoder: BodyDecoder | None = None
        self._received = self._head_done = self._message_done = False
        self._informational = self._stopped = self._keep_alive = False
        self._head_pending = 0

    def __repr__(self) -> str:
        state = "busy" if self.exchange is not None else "idle"
        return f"<Http1Connection {self.key} {state} served={self.served}>"

    # --- the fetching task's side ------------------------------------------------------------

    def send(self, exchange: Exchange, head: bytes) -> asyncio.Future[BodyDecoder | None]:
        """Write the request head; the future ends with the exchange (see the class)."""
        assert self.transport is not None
        self.exchange = exchange
        self.waiter = waiter = self.owner.loop.create_future()
        self._received = self._head_done = self._message_done = False
        self._informational = self._stopped = False
        self._head_pending = 0
        self.served += 1
        self.transport.write(head)
        return waiter

    def abandon(self, exchange: Exchange) -> None:
        """Close the connection if `exchange` still runs on it (its fetch was cancelled):
        the rest of that answer must not be taken for the next request's."""
        if self.exchange is exchange:
            self._unbind()
            self.close()

    def close(self) -> None:
        """Close now. abort(): an unwanted body is not drained and TLS does not wait for
        the peer's close_notify; the slot frees in connection_lost."""
        self.owner.drop_idle(self)
        if self.transport is not None:
            self.transport.abort()

    # --- asyncio's side ----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.Transport", transport)  # uvloop's is no subclass
        peer = transport.get_extra_info("peername")
        self.peer_ip = str(peer[0]) if peer else None
        self.owner.connection_up(self)

    def connection_lost(self, exc: Exception | None) -> None:
        # The parser holds bound methods of this protocol: a reference cycle that only a
        # garbage collection would free (issue 17), were it kept past the connection.
        self.parser = _SPENT_PARSER
        self.owner.connection_gone(self)
        exchange = self.exchange
        if exchange is None:
            return  # idle, or its exchange already ended
        if not self._head_done:
            stale = self.served > 1 and not self._received
            why = f": {one_line(exc)}" if exc is not None else ""
            self._fail(ExchangeFailed("reset", f"Server disconnected{why}", stale=stale))
            return
        cut = _cut_short(exchange.headers)
        if cut is not None:
            self._fail(cut)
            return
        self._message_done = True  # the close ends a body delimited by it
        self._keep_alive = False
        self._finish()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.owner.read_buffer

    def buffer_updated(self, nbytes: int) -> None:
        if self.exchange is None:
            # Bytes while idling in the pool answer no request (issue 17): never take them
            # for the answer to the next one.
            self.close()
            return
        self._received = True
        if not self._head_done:
            self._head_pending += nbytes
        try:
            self.parser.feed_data(self.owner.read_buffer[:nbytes])
        except httptools.HttpParserUpgrade:
            self._keep_alive = False  # a 101: what follows is not HTTP/1.1
        except httptools.HttpParserError as exc:
            if not self._message_done:
                self._fail(_parse_failure(exc))
                return
            self._keep_alive = False  # bytes after the answer: no reuse
        if self._head_done:
            if self._message_done or self._stopped or self._decoder is None:
                self._finish()
        elif self._head_pending > self._head_cap:
            cap = self._head_cap
            self._fail(ExchangeFailed("protocol", f"a response head line over {cap} bytes"))

    # --- llhttp's callbacks (inside feed_data) ---------------------------------------------

    def on_message_begin(self) -> None:
        if self._message_done:
            raise ExchangeFailed("protocol", "bytes after the answer")
        self._raw.clear()
        self._reason = b""

    def on_status(self, status: bytes) -> None:
        self._reason += status  # llhttp hands a reason split across reads in pieces
        limit = self.owner.max_header_bytes
        if len(self._reason) > limit:
            raise ExchangeFailed("protocol", f"status line over {limit} bytes")

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_pending = 0
        owner = self.owner
        if len(name) + len(value) > owner.max_header_bytes:
            limit = owner.max_header_bytes
            raise ExchangeFailed("protocol", f"header {name[:100]!r} over {limit} bytes")
        if b"\x00" in value:  # lenient llhttp lets NUL through; aiohttp refuses it
            raise ExchangeFailed("protocol", f"header {name[:100]!r} holds a NUL byte")
        raw = self._raw
        raw.append((name, value.rstrip(b" \t")))  # llhttp strips OWS before a value only
        if len(raw) > owner.max_headers:
            raise ExchangeFailed("protocol", f"more than {owner.max_headers} headers")

    def on_headers_complete(self) -> None:
        self._head_pending = 0
        parser = self.parser
        status = parser.get_status_code()
        if status < 200 and status != 101:
            self._informational = True  # 103 Early Hints and the like: the answer follows
            return
        exchange = self.exchange
        assert exchange is not None
        self._head_done = True
        self._keep_alive = status != 101 and parser.should_keep_alive()
        raw = self._raw
        try:  # decode_header's UTF-8 inline; its Latin-1 fallback only when a byte needs it
            headers = tuple([(k.decode(), v.decode()) for k, v in raw])
        except UnicodeDecodeError:
            headers = tuple([(decode_header(k), decode_header(v)) for k, v in raw])
        exchange.status = status
        exchange.ip = self.peer_ip or exchange.ip
        exchange.headers = headers
        # The status line and header lines as received (values without trailing blanks, as
        # aiohttp keeps them), ending in CRLF CRLF: the WARC response record's head.
        version = parser.get_http_version().encode()
        lines = [b"HTTP/%s %d %s" % (version, status, self._reason)]
        lines += [name + b": " + value for name, value in raw]
        exchange.raw_headers_block = b"\r\n".join(lines) + b"\r\n\r\n"
        owner = self.owner
        if exchange.read_any_type or (
            mime_type(first_header(headers, "Content-Type")) in owner.stored_types
        ):
            encoding = first_header(headers, "Content-Encoding")
            self._decoder = BodyDecoder(encoding, owner.max_decoded_bytes)

    def on_body(self, body: bytes) -> None:
        decoder = self._decoder
        if decoder is not None and not self._stopped:
            exchange = self.exchange
            assert exchange is not None
            self._stopped = exchange.feed_body(decoder, body)

    def on_message_complete(self) -> None:
        if self._informational:
            self._informational = False
            return
        self._message_done = True

    # --- ending an exchange ------------------------------------------------------------------

    def _finish(self) -> None:
        waiter, decoder = self.waiter, self._decoder
        reuse = self._message_done and self._keep_alive and not self._stopped
        self._unbind()
        if reuse:
            self.owner.keep_idle(self)
        else:
            self.close()
        if waiter is not None and not waiter.done():
            waiter.set_result(decoder)

    def _fail(self, exc: BaseException) -> None:
        waiter = self.waiter
        self._unbind()
        self.close()
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def _unbind(self) -> None:
        self.exchange = self.waiter = self._decoder = None
        self._raw.clear()
        self._reason = b""


def _cut_short(headers: tuple[tuple[str, str], ...]) -> ExchangeFailed | None:
    """Why a body that the connection's close cut off is a failure; None when the close is
    how its length is told (no Content-Length, no chunked coding: RFC 9112 §6.3 item 8)."""
    coding = first_header(headers, "Transfer-Encoding")
    if coding is not None and coding.rstrip(" \t").lower().endswith("chunked"):
        return ExchangeFailed("protocol", "the connection closed inside a chunked body")
    if coding is None and first_header(headers, "Content-Length") is not None:
        return ExchangeFailed("reset", "the connection closed before the body's end")
    return None


def _parse_failure(exc: httptools.HttpParserError) -> BaseException:
    """What a parser error means: our own ExchangeFailed raised in a callback, a bug of
    ours raised there (handed on, to propagate from the fetch), or a malformed answer."""
    cause = exc.__context__
    if isinstance(exc, httptools.HttpParserCallbackError) and cause is not None:
        return cause
    return ExchangeFailed("protocol", f"malformed answer: {exc}")
