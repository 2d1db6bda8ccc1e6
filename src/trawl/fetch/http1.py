"""The lean HTTP/1.1 fetcher: asyncio protocols and llhttp, under AiohttpFetcher's rules.

Why: aiohttp cost the crawl loop ~285 µs of CPU a fetched 100 KB page, a bare keep-alive
client on uvloop and httptools ~54 µs (bench/lean_fetch_price.py). Http1Fetcher does the
whole job of the Fetcher port (fetch/fetcher.py's docstring lists the rules, and
fetch/http_common.py holds what the two adapters share) with as little Python a fetch as
it can. `python -m bench.fetch_bench --compare-fetchers` prices the two side by side: 169
against 338 µs of CPU a page, 70 against 223 µs of it in user space (5 rounds, 2 CPUs).

How this works:
- `fetch` resolves the host and runs the SSRF guard before connecting (a given `ip` is
  checked too), then connects to exactly that address; TLS gets the host name for SNI and
  the certificate check. One `asyncio.timeout(total_timeout_s)` covers waiting for room
  under the connection cap, connect, TLS, head and body. Only http and https URLs with a
  host are fetched; anything else is `invalid_url`.
- The request head is what aiohttp writes: `GET <target> HTTP/1.1`, Host (with the port
  unless it is the scheme's default), User-Agent, Accept, Accept-Encoding, then the caller's
  headers (one whose name is already there, in any case, takes its place). The target is
  the URL's path and query as given when the URL is plain ASCII (`is_plain_ascii`), else as
  yarl quotes it; `_split_url` derives the rest as yarl does. `on_sent` is called once, when
  the head is handed to the transport. The connection (fetch/http1_connection.py) reads the
  answer into the fetch's Exchange.
- Connections are pooled (fetch/pool.py) by (scheme, host, port, ip) and reused only after
  an answer read to the end with keep-alive. One timer sweeps the ones idle for `IDLE_S`.
  At most `max_connections` sockets are open (0: no cap): past that the least recently used
  idle connection is closed to make room, one for each waiting fetch, else the fetch waits
  for a connection to close or idle. A reused connection that closes before any byte of
  the answer (the server dropped it while it idled) is retried once on a fresh connection,
  as aiohttp retries (a GET is idempotent: RFC 9110 §9.2.2, RFC 9112 §9.3.1).
- A connect or TLS failure is `connect`, with aiohttp's message ("Cannot connect to host
  …"); wire failures are ExchangeFailed; `FetcherBase.fetch` turns them into results.
  CancelledError and our own bugs propagate, and a cancelled fetch closes its connection
  rather than leave a half-read answer in the pool.
"""

from __future__ import annotations

import asyncio
import functools
import re
import ssl
import time
from typing import TYPE_CHECKING, Unpack

import yarl

from trawl.errors import FetchError
from trawl.fetch.http1_connection import ExchangeFailed, Http1Connection
from trawl.fetch.http_common import (
    ACCEPT,
    ACCEPT_ENCODING,
    FetcherBase,
    FetcherSettings,
    is_plain_ascii,
    one_line,
)
from trawl.fetch.pool import ConnectionPool

if TYPE_CHECKING:
    from collections.abc import Mapping

    from trawl.fetch.decode import BodyDecoder
    from trawl.fetch.http1_connection import Key
    from trawl.fetch.http_common import Exchange

IDLE_S = 15.0  # an idle connection is closed after this long (aiohttp's keepalive_timeout)
_SWEEP_GAP_S = 1.0  # the idle sweep runs at most this often, however many connections expire
_READ_BUFFER_BYTES = 256 * 1024  # what uvloop reads at once
_DEFAULT_PORTS = {"http": 80, "https": 443}
# An authority `_split_url` takes as it is: a lower-case host name or IPv4 address and a
# port without leading zeros. Any other (and any URL that is not plain ASCII or has no
# path) goes through yarl, as in AiohttpFetcher.
_PLAIN_AUTHORITY = re.compile(r"([a-z0-9_-]+(?:\.[a-z0-9_-]+)*)(?::([1-9][0-9]{0,4}))?")


def _classify(exc: BaseException) -> tuple[str, str]:
    """Map a known web failure to (error_kind, message); the message is one short line."""
    if isinstance(exc, ExchangeFailed | FetchError):
        return exc.kind, one_line(exc)
    if isinstance(exc, TimeoutError):
        return "timeout", "total deadline passed"
    return "reset", one_line(exc)  # an OSError from a transport


def _split_url(url: str) -> tuple[str, str, int, str, str]:
    """(scheme, host, port, request target, Host header) as aiohttp derives them (yarl's
    raw_host, port, raw_path_qs and host_port_subcomponent); raises ExchangeFailed
    ("invalid_url")."""
    scheme, _, rest = url.partition("://")
    cut = rest.find("/")
    if scheme in _DEFAULT_PORTS and cut > 0 and is_plain_ascii(rest):
        origin = _plain_origin(scheme, rest[:cut])
        target = rest[cut:].partition("#")[0]  # the fragment is not sent
        if origin is not None and not target.endswith("?"):  # yarl drops an empty query
            return scheme, origin[0], origin[1], target, origin[2]
    try:
        parsed = yarl.URL(url, encoded=is_plain_ascii(url))
        host, port = parsed.raw_host, parsed.port  # yarl checks the port only here
    except ValueError as exc:
        raise ExchangeFailed("invalid_url", f"{url} - {exc}") from exc
    if not host or port is None or parsed.scheme not in _DEFAULT_PORTS:
        raise ExchangeFailed("invalid_url", url)
    return parsed.scheme, host, port, parsed.raw_path_qs, parsed.host_port_subcomponent or host


@functools.lru_cache(maxsize=4096)
def _plain_origin(scheme: str, authority: str) -> tuple[str, int, str] | None:
    """(host, port, Host header) of a plain authority, or None. Cached: a crawl asks for the
    same sites page after page."""
    match = _PLAIN_AUTHORITY.fullmatch(authority)
    if match is None:
        return None
    host, port_text = match.groups()
    port = int(port_text) if port_text else _DEFAULT_PORTS[scheme]
    if port > 65535:
        return None
    return host, port, host if port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"


def _refuse_line_breaks(headers: Mapping[str, str]) -> None:
    """Raise ValueError for CR or LF in a header (a caller's bug: it would split the head),
    as aiohttp's writer does."""
    for name, value in headers.items():
        if "\r" in name or "\n" in name or "\r" in value or "\n" in value:
            raise ValueError(f"line break in request header {name!r}: {value!r}")


class Http1Fetcher(FetcherBase):
    """GET pages over a keep-alive pool of asyncio connections; see the module docstring.

    Takes AiohttpFetcher's keyword arguments and `ssl_context` (default: one built by
    `ssl.create_default_context()` on the first https fetch, verifying certificates).
    `close()` closes every connection and the CachingResolver the fetcher was built with.
    Bound to the event loop of its first fetch, as an aiohttp session is.
    """

    _web_failures = (FetchError, TimeoutError, ExchangeFailed, OSError)

    def __init__(
        self, *, ssl_context: ssl.SSLContext | None = None, **settings: Unpack[FetcherSettings]
    ) -> None:
        super().__init__(**settings)
        _refuse_line_breaks({"User-Agent": self.user_agent})
        self._ssl_context = ssl_context
        self._head_tail = (
            f"User-Agent: {self.user_agent}\r\nAccept: {ACCEPT}\r\n"
            f"Accept-Encoding: {ACCEPT_ENCODING}\r\n\r\n"
        )
        self.pool: ConnectionPool[Http1Connection] = ConnectionPool(self.max_connections, IDLE_S)
        # What every connection reads into (asyncio.BufferedProtocol): the loop reads, then
        # calls buffer_updated, which parses all of it before it returns, so one buffer
        # serves every connection, and no ~100 KB bytes object is made (and freed) a read.
        self.read_buffer = memoryview(bytearray(_READ_BUFFER_BYTES))
        # Shared state, all on the fetcher's loop. `_connections`: connections from
        # connection_made to connection_lost (each holds a slot; written by the protocols,
        # read by close). `_room_waiters`: fetches waiting for room under the cap (FIFO;
        # appended by them, woken by a slot freed or a connection idling). `_making_room`:
        # idle connections closed for a waiting fetch whose close has not yet freed a slot.
        self._connections: set[Http1Connection] = set()
        self._room_waiters: list[asyncio.Future[None]] = []
        self._making_room = 0
        self._sweep: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        s = self.stats()
        return (
            f"<Http1Fetcher fetches={s.fetches} in_flight={s.in_flight} failures={s.failures} "
            f"bytes_read={s.bytes_read} open={self.pool.open} idle={self.pool.idle}>"
        )

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    async def close(self) -> None:
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        self.pool.drain()
        for conn in list(self._connections):
            conn.close()
        for _ in range(3):  # a TLS transport takes a turn more: none may outlive the loop
            if not self._connections:
                break
            await asyncio.sleep(0)
        await super().close()

    _classify = staticmethod(_classify)

    async def _exchange(self, exchange: Exchange) -> None:
        scheme, host, port, target, authority = _split_url(exchange.url)
        ip = await self._address(exchange, host)
        head = self._request_head(target, authority, exchange.extra_headers)
        key = (scheme, host, port, ip)
        conn = self._take_idle(key) or await self._connection(key, reuse=True)
        try:
            decoder = await self._send(conn, exchange, head)
        except ExchangeFailed as exc:
            if not exc.stale:
                raise
            conn = await self._connection(key, reuse=False)  # once, on a fresh connection
            decoder = await self._send(conn, exchange, head)
        if decoder is not None:
            exchange.take_body(decoder)

    async def _send(
        self, conn: Http1Connection, exchange: Exchange, head: bytes
    ) -> BodyDecoder | None:
        try:
            waiter = conn.send(exchange, head)
            if not exchange.request_head:  # a stale connection's retry sends it again
                exchange.request_head = head
                if exchange.on_sent is not None:
                    exchange.on_sent()
            return await waiter
        finally:
            conn.abandon(exchange)  # a no-op unless the exchange did not end (cancelled)

    def _request_head(self, target: str, authority: str, extra: Mapping[str, str] | None) -> bytes:
        """The request line and headers as aiohttp writes them (UTF-8), ending in CRLF CRLF."""
        if not extra:
            head = f"GET {target} HTTP/1.1\r\nHost: {authority}\r\n{self._head_tail}"
            return head.encode("utf-8", "replace")
        _refuse_line_breaks(extra)
        lines = {"host": ("Host", authority)}
        for name, value in (*self._request_headers(None).items(), *extra.items()):
            lines[name.lower()] = (name, value)  # a name already there keeps its place
        text = "".join(f"{name}: {value}\r\n" for name, value in lines.values())
        return f"GET {target} HTTP/1.1\r\n{text}\r\n".encode("utf-8", "replace")

    # --- connections: the pool's shell --------------------------------------------------------

    def _take_idle(self, key: Key) -> Http1Connection | None:
        while (conn := self.pool.take(key)) is not None:
            if conn.transport is not None and not conn.transport.is_closing():
                return conn
        return None  # skipped: connections that are closing, their slots not yet free

    async def _connection(self, key: Key, *, reuse: bool) -> Http1Connection:
        """An idle connection for `key` (if `reuse`) or a new one, once the cap leaves
        room; raises ExchangeFailed("connect")."""
        while True:
            if reuse and (conn := self._take_idle(key)) is not None:
                return conn
            if self.pool.reserve():
                return await self._connect(key)
            # One closing idle connection for each waiting fetch, this one included: more
            # would close connections nobody needs closed.
            if self._making_room <= len(self._room_waiters):
                victim = self.pool.oldest()
                if victim is not None:
                    victim.making_room = True
                    self._making_room += 1
                    victim.close()
            await self._wait_for_room()

    async def _connect(self, key: Key) -> Http1Connection:
        """Open a connection for `key` on a slot already reserved; raises
        ExchangeFailed("connect") with aiohttp's message."""
        scheme, host, port, ip = key
        tls = self._tls() if scheme == "https" else None
        made: list[Http1Connection] = []

        def build() -> Http1Connection:
            made.append(Http1Connection(self, key))
            return made[-1]

        try:
            _, conn = await self.loop.create_connection(
                build, ip, port, ssl=tls, server_hostname=host.rstrip(".") if tls else None
            )
        except BaseException as exc:
            if not (made and made[-1].transport is not None):
                self.pool.release_slot()  # else its connection_lost frees the slot
                self._wake_one()
            if isinstance(exc, OSError):  # refused, unreachable, TLS (ssl.SSLError)
                reason = exc.strerror or one_line(exc)
                message = f"Cannot connect to host {host}:{port} ssl:default [{reason}]"
                raise ExchangeFailed("connect", message) from exc
            raise
        return conn

    def _tls(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = ssl.create_default_context()
            self._ssl_context.set_alpn_protocols(["http/1.1"])
        return self._ssl_context

    async def _wait_for_room(self) -> None:
        waiter = self.loop.create_future()
        self._room_waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._wake_one()  # woken and cancelled at once: pass the turn on
            raise
        finally:
            if waiter in self._room_waiters:
                self._room_waiters.remove(waiter)

    def _wake_one(self) -> None:
        while self._room_waiters:
            waiter = self._room_waiters.pop(0)
            if not waiter.done():
                waiter.set_result(None)
                return

    def _sweep_idle(self) -> None:
        self._sweep = None
        self.close_expired(time.monotonic())

    def close_expired(self, now: float) -> None:
        """Close the connections idle for IDLE_S at `now` (monotonic seconds); run by the
        sweep timer, which it sets again while connections idle."""
        for conn in self.pool.expired(now):
            conn.close()
        due = self.pool.next_expiry()
        if due is not None and self._sweep is None:
            self._sweep = self.loop.call_later(max(due - now, _SWEEP_GAP_S), self._sweep_idle)

    # --- what the connections call (http1_connection.ConnectionOwner) ---------------------

    def connection_up(self, conn: Http1Connection) -> None:
        self._connections.add(conn)

    def connection_gone(self, conn: Http1Connection) -> None:
        self.pool.discard(conn)
        if conn in self._connections:
            self._connections.discard(conn)
            if conn.making_room:
                self._making_room -= 1
            self.pool.release_slot()
            self._wake_one()

    def keep_idle(self, conn: Http1Connection) -> None:
        self.pool.put(conn, time.monotonic())
        if self._sweep is None:
            self._sweep = self.loop.call_later(IDLE_S, self._sweep_idle)
        if self._room_waiters:
            self._wake_one()  # a fetch waiting for room may reuse or close it

    def drop_idle(self, conn: Http1Connection) -> None:
        self.pool.discard(conn)
