"""What both HTTP/1.1 fetchers share: the request defaults, one exchange's record, the shell.

The crawl has two adapters of the Fetcher port (fetch/ports.py): `AiohttpFetcher`
(fetch/fetcher.py, on aiohttp) and `Http1Fetcher` (fetch/http1.py, on asyncio protocols and
llhttp). Everything here is the part of the job that does not depend on the HTTP client:

- `FetcherBase` holds the settings both take as keyword arguments, the counters `stats()`
  reads, `resolve` (the CachingResolver and the SSRF guard, before any connection), and
  `fetch` itself: one `asyncio.timeout(total_timeout_s)` over the adapter's `_exchange`, and
  known web failures turned into results by the adapter's `_classify`. CancelledError and
  anything else (our bugs) propagate.
- `Exchange` is what one fetch learned so far, written only by the task running that fetch
  (and, in Http1Fetcher, by the protocol callbacks of the connection serving it, on the same
  event loop); `feed_body` and `take_body` are the body rules: raw bytes counted against
  `max_body_bytes` (hit: keep what was read, `truncated=True`), decoded by a BodyDecoder
  capped at `max_decoded_bytes` (hit: `too_big`; a corrupt stream: `decode`).
- The invariant of every result: `status == 0` if and only if `error_kind is not None`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Required, Self, TypedDict
from urllib.parse import urlsplit

from trawl.errors import ConfigError, FetchError
from trawl.fetch.ssrf import check_address
from trawl.model import FetchResult

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from types import TracebackType

    from trawl.fetch.decode import BodyDecoder
    from trawl.fetch.dns import CachingResolver
    from trawl.fetch.ssrf import IPNetwork

MIB = 1024 * 1024
DEFAULT_STORED_TYPES = ("text/html", "application/xhtml+xml")
ACCEPT_ENCODING = "gzip, deflate, br"
ACCEPT = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1"
MAX_ERROR_CHARS = 300  # parsers quote the offending bytes: a 20 KB header stays out of records


def build_user_agent(version: str, contact_url: str) -> str:
    """`trawl/<version> (+<contact URL>)`; raises ConfigError unless the URL is http(s)."""
    parts = urlsplit(contact_url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"contact URL {contact_url!r} must be an http(s) URL")
    return f"trawl/{version} (+{contact_url.strip()})"


def decode_header(raw: bytes) -> str:
    # UTF-8 keeps a Location with non-ASCII characters usable; Latin-1 never fails.
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def mime_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def is_plain_ascii(url: str) -> bool:
    """Send a normalised URL byte for byte; let yarl quote anything that isn't."""
    # Every character in 33..126: ASCII, printable (no C0 controls, no DEL), and no space
    # (the one printable ASCII character below 33). Three C loops instead of a genexpr.
    return url.isascii() and url.isprintable() and " " not in url


def one_line(exc: BaseException) -> str:
    """The exception's message as one short line (its type's name if it has none)."""
    return " ".join(str(exc).split())[:MAX_ERROR_CHARS] or type(exc).__name__


class FetcherSettings(TypedDict, total=False):
    """FetcherBase's keyword arguments (its signature has the defaults), for an adapter
    that takes them all and some of its own (`**settings: Unpack[FetcherSettings]`)."""

    user_agent: Required[str]
    resolver: Required[CachingResolver]
    allow_private: bool
    allow_networks: Sequence[IPNetwork]
    total_timeout_s: float
    max_body_bytes: int
    max_decoded_bytes: int
    max_header_bytes: int
    max_headers: int
    stored_types: tuple[str, ...]
    max_connections: int


@dataclass(frozen=True, slots=True)
class FetcherStats:
    fetches: int
    in_flight: int
    failures: int
    bytes_read: int


@dataclass(slots=True)
class Exchange:
    """What one fetch learned so far; written only on the event loop running that fetch."""

    url: str
    started_at: float
    start_s: float
    # What the caller asked for (see FetcherBase.fetch).
    extra_headers: Mapping[str, str] | None = None
    read_any_type: bool = False
    max_body_bytes: int = 0
    given_ip: str | None = None
    on_sent: Callable[[], None] | None = None
    # What came of it.
    ip: str | None = None
    status: int = 0
    headers: tuple[tuple[str, str], ...] = ()
    raw_headers_block: bytes = b""
    body: bytes | None = None
    truncated: bool = False
    raw_bytes: int = 0
    error_kind: str | None = None  # set for failures found after the response arrived
    error: str | None = None
    request_head: bytes = b""  # set once the head is written

    def feed_body(self, decoder: BodyDecoder, chunk: bytes) -> bool:
        """Count `chunk` against the raw cap and decode it; True once no more is wanted
        (the cap was hit or the decoder stopped): the rest of the body is not read."""
        room = self.max_body_bytes - self.raw_bytes
        if len(chunk) > room:
            chunk = chunk[:room]
            self.truncated = True
        self.raw_bytes += len(chunk)
        decoder.feed(chunk)
        return self.truncated or decoder.is_stopped

    def take_body(self, decoder: BodyDecoder) -> None:
        """Keep the decoded body; a decoded size over the cap or a corrupt stream fails."""
        body = decoder.finish(expect_end=not self.truncated)
        if decoder.too_big:
            self.error_kind = "too_big"
            self.error = f"body decodes to more than {decoder.max_decoded_bytes} bytes"
        elif decoder.error is not None:
            self.error_kind, self.error = "decode", decoder.error
        self.body = body

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


class FetcherBase:
    """Settings, counters, DNS + SSRF and the deadline of a Fetcher; see the module docstring.

    An adapter supplies `_exchange` (connect, send, read into the Exchange; raise on a web
    failure), `_classify` (such a failure as (error_kind, one-line message)), the exception
    types `_web_failures` it may raise for the web's faults, and `close`.
    """

    # The failures a hostile or broken web can cause; anything else is our bug and propagates.
    _web_failures: ClassVar[tuple[type[BaseException], ...]] = (FetchError, TimeoutError, OSError)

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
        self._fetches = 0
        self._in_flight = 0
        self._failures = 0
        self._bytes_read = 0

    def __repr__(self) -> str:
        s = self.stats()
        return (
            f"<{type(self).__name__} fetches={s.fetches} in_flight={s.in_flight} "
            f"failures={s.failures} bytes_read={s.bytes_read}>"
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
        """Close the CachingResolver the fetcher was built with (idempotent, keeps its
        cache, so a resolver shared between fetchers stays usable); adapters close their
        connections first."""
        await self.resolver.close()

    async def resolve(self, host: str) -> str:
        """The IP a fetch of `host` would use; raises FetchError("dns") or BlockedAddress."""
        ip = await self.resolver.resolve(host)
        self._check(host, ip)
        return ip

    async def _address(self, exchange: Exchange, host: str) -> str:
        """Where to connect for `host`: the exchange's given IP, checked again, or the
        resolver's answer, checked; kept as the exchange's `ip`."""
        ip = exchange.given_ip
        if ip is None:
            ip = await self.resolve(host)
        else:
            self._check(host, ip)
        exchange.ip = ip
        return ip

    def _check(self, host: str, ip: str) -> None:
        check_address(
            host,
            ip,
            mapped=self.resolver.is_mapped(host),
            allow_private=self.allow_private,
            allow_networks=self.allow_networks,
        )

    def _request_headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = {
            "User-Agent": self.user_agent,
            "Accept": ACCEPT,
            "Accept-Encoding": ACCEPT_ENCODING,
        }
        if extra:
            headers.update(extra)
        return headers

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
        exchange = Exchange(
            url=url,
            started_at=time.time(),
            start_s=time.monotonic(),
            extra_headers=headers,
            read_any_type=read_any_type,
            max_body_bytes=self.max_body_bytes if max_body_bytes is None else max_body_bytes,
            given_ip=ip,
            on_sent=on_sent,
        )
        self._fetches += 1
        self._in_flight += 1
        try:
            async with asyncio.timeout(self.total_timeout_s):
                await self._exchange(exchange)
        except self._web_failures as exc:
            exchange.error_kind, exchange.error = self._classify(exc)
        finally:
            self._in_flight -= 1
            self._bytes_read += exchange.raw_bytes
        if exchange.error_kind is not None:
            self._failures += 1
        return exchange.result()

    async def _exchange(self, exchange: Exchange) -> None:
        raise NotImplementedError

    @staticmethod
    def _classify(exc: BaseException) -> tuple[str, str]:
        raise NotImplementedError
