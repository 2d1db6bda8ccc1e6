"""Hostile sites of the test web, and what each answers, decided without I/O.

How this works: each `HostileKind` is one registered domain `hostile-<kind>.test` on its
own 127.3.0.x address. `HostileResponder.answer` turns one request into a
`HostileAnswer`: the exact head bytes to send (malformed on purpose for some paths), a
body that is either bytes, a `Repeat` (a long body described, never held in memory), a
`Drip` (a byte a second, forever) or `Silence`, and how the connection ends. The raw
socket shell in `hostile_server` carries it out and logs what it really sent.

The responder keeps a little state (which throttled paths were seen, a session-id
serial), so it is one object per server; it never reads a clock (`now` is passed in).
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass
from email.utils import formatdate
from enum import StrEnum
from functools import cache
from html import escape
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode

from trawl.testweb.text import paragraph, title, topic_words

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

HTML = "text/html; charset=utf-8"
ROBOTS_ALLOW_ALL = "User-agent: *\nDisallow:\n"
ROBOTS_DISALLOW_ALL = "User-agent: *\nDisallow: /\n"
MIB = 1 << 20


class HostileKind(StrEnum):
    STALL = "stall"  # headers, then a byte a second forever; /no-headers: nothing at all
    GIANT = "giant"  # 50 MiB of HTML at full speed, no Content-Length
    BOMB = "bomb"  # gzip: ~10 MiB on the wire, 10 GiB decoded
    THROTTLE = "throttle"  # first request per path: 429 Retry-After: 3 (/busy: 503 + date)
    FLAKY = "flaky"  # every page 503, no Retry-After
    ROBOTS_5XX = "robots-5xx"  # robots.txt 500: no page may be fetched
    ROBOTS_STALL = "robots-stall"  # robots.txt never completes: no page may be fetched
    BROKEN = "broken"  # truncated, bad bytes, bad charset, bad chunking, huge header, reset
    BINARY = "binary"  # 200 MiB PDF, 1 GiB MP4
    REDIRECTS = "redirects"  # /loop/a <-> /loop/b; /chain/1 .. /chain/12 -> /end.html
    CALENDAR = "calendar"  # /cal/YYYY/MM/ -> previous and next month, forever
    SESSION = "session"  # ~10 pages, every link with a fresh ?sid= and ;jsessionid=
    REPEAT = "repeat"  # /a/b/a/b/... and /2026/11/2026/11/... one level deeper each page
    FACETS = "facets"  # /search?color=&size=&sort=&page= every one-step change linked
    COPIES = "copies"  # /item/1 .. /item/5000, each linking the next 20, near-identical
    # Fetch faults (issue 13): one bad URL next to healthy pages of the same site.
    ENDLESS_REDIRECT = "endless-redirect"  # /inf/N -> /inf/N+1, forever
    RESET_PAGE = "reset-page"  # /resets.html resets mid-body on every try; /healthy.html
    BAD_HEADERS = "bad-headers"  # oversized header, too many headers, bad status line; /ok/
    CLOSED_PORT = "closed-port"  # home links its own origin on port 81 (closed) and /ok/
    RELPATH = "relpath"  # /docs/ links intro/ guide/ api/: one body under ever longer paths


# Trap sites also have real pages (`REAL_PATHS`: a home, news, products, each with text of
# its own), and their home links the trap's entry (issue 13: traps are contained while real
# pages are still fetched). The home and news page link every real page.
TRAP_ENTRIES: dict[HostileKind, tuple[str, ...]] = {
    HostileKind.CALENDAR: ("/cal/2026/01/",),
    HostileKind.SESSION: (),  # the home links the session pages, each with fresh ids
    HostileKind.REPEAT: ("a/b/", "2026/11/"),
    HostileKind.FACETS: ("/search",),
    HostileKind.COPIES: ("/item/1",),
    HostileKind.RELPATH: ("/docs/",),
}
REAL_PATHS = (
    "/",
    "/news/",
    "/news/1.html",
    "/news/2.html",
    "/products/1.html",
    "/products/2.html",
)
DOCS_SEGMENTS = ("intro", "guide", "api")


FAULT_OK_PAGES = tuple(f"/ok/{n}.html" for n in range(1, 4))
BAD_HEADER_PATHS = ("/oversized-header.html", "/many-headers.html", "/bad-status.html")
MANY_HEADERS = 300  # aiohttp (and trawl's fetcher) refuse more than 128
CLOSED_PORT = 81  # nothing listens there on the hostile addresses

# Page requests (robots.txt not counted) a sane crawler makes on each hostile site. The
# trap kinds are bounded by the crawler's trap rules: their real pages plus 20.
PAGE_BOUNDS: dict[HostileKind, int] = {
    HostileKind.STALL: 10,
    HostileKind.GIANT: 5,
    HostileKind.BOMB: 5,
    HostileKind.THROTTLE: 30,
    HostileKind.FLAKY: 10,
    HostileKind.ROBOTS_5XX: 0,
    HostileKind.ROBOTS_STALL: 0,
    HostileKind.BROKEN: 40,
    HostileKind.BINARY: 10,
    HostileKind.REDIRECTS: 40,
    # Trap sites: their real pages plus at most 20 fetches before containment (issue 13).
    HostileKind.CALENDAR: len(REAL_PATHS) + 20,
    HostileKind.SESSION: len(REAL_PATHS) + 20,
    HostileKind.REPEAT: len(REAL_PATHS) + 20,
    HostileKind.FACETS: len(REAL_PATHS) + 20,
    HostileKind.COPIES: len(REAL_PATHS) + 20,
    HostileKind.RELPATH: len(REAL_PATHS) + 20,
    HostileKind.ENDLESS_REDIRECT: 12,  # home, then /inf/1 .. /inf/11 (fetch.max_redirects 10)
    HostileKind.RESET_PAGE: 5,  # home, healthy, the reset page fetch.max_attempts (3) times
    HostileKind.BAD_HEADERS: 4 + len(FAULT_OK_PAGES),  # home and each bad URL once
    HostileKind.CLOSED_PORT: 1 + len(FAULT_OK_PAGES),  # port 81 refuses: never logged
}

# Paths the seed home page links to, besides "/".
_EXTRA_ENTRIES: dict[HostileKind, tuple[str, ...]] = {HostileKind.STALL: ("/no-headers",)}

GIANT_BYTES = 50 * MIB
PDF_BYTES = 200 * MIB
MP4_BYTES = 1024 * MIB
BOMB_DECODED_BYTES = 10 * 1024 * MIB
THROTTLE_RETRY_AFTER_S = 3
BUSY_RETRY_AFTER_S = 4
CHAIN_LENGTH = 12
COPIES_COUNT = 5000
COPIES_LINKS = 20
SESSION_PAGES = 9  # plus the home page
BROKEN_PATHS = (
    "/truncated.html",
    "/invalid-utf8.html",
    "/wrong-charset.html",
    "/bad-chunk.html",
    "/huge-header.html",
    "/reset.html",
)
HUGE_HEADER_BYTES = 70_000
FACETS: dict[str, tuple[str, ...]] = {
    "color": ("red", "green", "blue", "black", "white"),
    "size": ("s", "m", "l", "xl"),
    "sort": ("price", "name", "new"),
    "page": tuple(str(n) for n in range(1, 21)),
}


@dataclass(frozen=True, slots=True)
class HostileSite:
    kind: HostileKind
    domain: str  # also its only hostname
    ip: str
    entry_paths: tuple[str, ...]  # linked from the first seed site's home page

    @property
    def page_bound(self) -> int:
        """Most page requests (robots.txt excluded) a sane crawler makes here."""
        return PAGE_BOUNDS[self.kind]

    @property
    def real_paths(self) -> tuple[str, ...]:
        """Paths of a trap site's real pages (each fetched once by a sane crawler); the
        rest of a trap site is trap. Empty for the other kinds."""
        return REAL_PATHS if self.kind in TRAP_ENTRIES else ()

    @property
    def robots_rules(self) -> str:
        """The robots.txt a correct crawler acts on (an unreadable one forbids all)."""
        if self.kind in (HostileKind.ROBOTS_5XX, HostileKind.ROBOTS_STALL):
            return ROBOTS_DISALLOW_ALL
        return ROBOTS_ALLOW_ALL


def build_hostile_sites() -> tuple[HostileSite, ...]:
    """One site per kind, on 127.3.0.1, 127.3.0.2, ... in `HostileKind` order."""
    return tuple(
        HostileSite(
            kind,
            f"hostile-{kind.value}.test",
            f"127.3.0.{n}",
            ("/", *_EXTRA_ENTRIES.get(kind, ())),
        )
        for n, kind in enumerate(HostileKind, start=1)
    )


class Ending(StrEnum):
    KEEP_ALIVE = "keep_alive"  # the body has a Content-Length; the connection may go on
    CLOSE = "close"  # close after the body (close-delimited or deliberately cut)
    RESET = "reset"  # abort with a TCP RST after the body bytes


@dataclass(frozen=True, slots=True)
class Repeat:
    """A long body: `head`, then `block` `count` times, then `tail`."""

    head: bytes
    block: bytes
    count: int
    tail: bytes = b""

    @property
    def size(self) -> int:
        return len(self.head) + len(self.block) * self.count + len(self.tail)

    def materialise(self) -> bytes:
        """The whole body in memory: for tests of small instances only."""
        return self.head + self.block * self.count + self.tail


@dataclass(frozen=True, slots=True)
class Drip:
    """`prefix` then `filler`, forever, one byte every `interval_s`."""

    prefix: bytes
    filler: bytes = b" "
    interval_s: float = 1.0

    def byte_at(self, n: int) -> bytes:
        return self.prefix[n : n + 1] if n < len(self.prefix) else self.filler


@dataclass(frozen=True, slots=True)
class Silence:
    """Send nothing at all, not even a status line, until the client leaves."""


Body = bytes | Repeat | Drip | Silence


@dataclass(frozen=True, slots=True)
class HostileAnswer:
    status: int  # as logged; 0 when nothing is sent
    head: bytes  # status line and header lines, exactly as sent
    body: Body
    ending: Ending
    retry_after_s: float | None = None  # seconds from the answer until retrying is allowed
    # An HTTP-date Retry-After names an instant, not a delay: the log measures from it, so
    # the time the server spends sending does not move the deadline (epoch seconds).
    retry_at: float | None = None


def response_head(status: int, headers: Sequence[tuple[str, str]]) -> bytes:
    reason = _REASONS.get(status, "Status")
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in headers), "", ""]
    return "\r\n".join(lines).encode("latin-1")


_REASONS = {
    200: "OK",
    301: "Moved Permanently",
    302: "Found",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def fixed(
    status: int, body: bytes, content_type: str = HTML, extra: Sequence[tuple[str, str]] = ()
) -> HostileAnswer:
    """A well-formed answer with a Content-Length; the connection stays open."""
    headers = [("Content-Type", content_type), ("Content-Length", str(len(body))), *extra]
    return HostileAnswer(status, response_head(status, headers), body, Ending.KEEP_ALIVE)


def streamed(
    content_type: str, body: Repeat, extra: Sequence[tuple[str, str]] = ()
) -> HostileAnswer:
    headers = [("Content-Type", content_type), ("Content-Length", str(body.size)), *extra]
    return HostileAnswer(200, response_head(200, headers), body, Ending.CLOSE)


def html_page(title: str, links: Sequence[str], text: str = "") -> bytes:
    items = "".join(f'<li><a href="{escape(href)}">{escape(href)}</a></li>\n' for href in links)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"</head>\n<body><h1>{escape(title)}</h1>\n<p>{escape(text)}</p>\n<ul>\n{items}</ul>\n"
        "</body></html>\n"
    ).encode()


def not_found() -> HostileAnswer:
    return fixed(404, html_page("Not Found", []))


# --- gzip bomb ---------------------------------------------------------------------------

_CRC_POLY = 0xEDB88320


def _multmodp(a: int, b: int) -> int:
    """a(x) * b(x) mod the CRC-32 polynomial, bit-reflected (zlib's crc32.c); a != 0."""
    m, p = 1 << 31, 0
    while True:
        if a & m:
            p ^= b
            if (a & (m - 1)) == 0:
                return p
        m >>= 1
        b = (b >> 1) ^ _CRC_POLY if b & 1 else b >> 1


def _x2n_table() -> list[int]:
    table = [1 << 30]  # x^1
    for _ in range(31):
        table.append(_multmodp(table[-1], table[-1]))
    return table


_X2N = _x2n_table()


def _x8nmodp(n: int) -> int:
    """x^(8n) mod p: the operator that appends n zero bytes to a CRC register."""
    p, k = 1 << 31, 3
    while n:
        if n & 1:
            p = _multmodp(_X2N[k & 31], p)
        n >>= 1
        k += 1
    return p


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32 of A+B from crc32(A), crc32(B) and len(B) (zlib's crc32_combine)."""
    return _multmodp(_x8nmodp(len2), crc1) ^ crc2


def gzip_bomb(block_zeros: int = MIB, count: int = BOMB_DECODED_BYTES // MIB) -> Repeat:
    """A valid gzip stream of `block_zeros * count` zero bytes, built from one block.

    Each block is raw deflate ended by a full flush (byte-aligned, dictionary reset), so
    the same compressed bytes can be repeated; CRC and size come from combining, not from
    decoding 10 GiB. Costs ~10 ms; the default is 10 GiB from ~10 MiB.
    """
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(block_zeros)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    final = zlib.compressobj(9, zlib.DEFLATED, -15).flush()  # an empty last block
    block_crc, crc = zlib.crc32(zeros), 0
    step = _x8nmodp(block_zeros)
    for _ in range(count):
        crc = _multmodp(step, crc) ^ block_crc
    size = block_zeros * count
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # no name, mtime 0, best, unknown OS
    trailer = crc.to_bytes(4, "little") + (size & 0xFFFFFFFF).to_bytes(4, "little")
    return Repeat(header, block, count, final + trailer)


@cache
def _default_bomb() -> Repeat:
    return gzip_bomb()


# --- the broken site's bodies ------------------------------------------------------------

_OK_PAGES = tuple(f"/ok/{n}.html" for n in range(1, 5))


def _broken_answer(path: str) -> HostileAnswer | None:
    links = "".join(f'<a href="{p}">ok {n}</a> ' for n, p in enumerate(_OK_PAGES, 1))
    good = f"<!DOCTYPE html><html><head><title>{path}</title></head><body><p>{links}</p>"
    if path == "/truncated.html":
        return fixed(200, (good + '<p>and then <a hre="/ok/9.ht').encode())
    if path == "/invalid-utf8.html":
        return fixed(200, good.encode() + b"<p>\xff\xfe\xc3\x28 \xed\xa0\x80 \xf8\x88</p></body>")
    if path == "/wrong-charset.html":
        # The header names no real charset, the meta a wrong one; the bytes are latin-1.
        body = good.replace("<head>", '<head><meta charset="utf-16">') + "<p>caf\xe9</p>"
        return fixed(200, body.encode("latin-1"), "text/html; charset=x-no-such-charset")
    if path == "/bad-chunk.html":
        first = good.encode()
        head = response_head(200, [("Content-Type", HTML), ("Transfer-Encoding", "chunked")])
        chunks = b"%x\r\n%s\r\nzz-not-hex\r\n<p>garbage</p>\r\n" % (len(first), first)
        return HostileAnswer(200, head, chunks, Ending.CLOSE)
    if path == "/huge-header.html":
        filler = ("X-Filler", "a" * HUGE_HEADER_BYTES)
        return fixed(200, good.encode() + b"</body></html>", extra=[filler])
    if path == "/reset.html":
        first = good.encode() + b"<p>" + b"lorem ipsum " * 800
        head = response_head(200, [("Content-Type", HTML), ("Content-Length", "100000")])
        return HostileAnswer(200, head, first, Ending.RESET)
    if path in _OK_PAGES:
        return fixed(200, html_page(f"ok {path}", ["/"]))
    return None


# --- the responder -----------------------------------------------------------------------


class HostileResponder:
    """Answers requests to the hostile sites served on `port`."""

    def __init__(self, sites: Sequence[HostileSite], port: int) -> None:
        self._sites = {site.domain: site for site in sites}
        self._port = port
        self._throttled: set[tuple[str, str]] = set()  # (host, path) already told to wait
        self._serial = 0  # session ids: a fresh one per link

    def __repr__(self) -> str:
        return (
            f"<HostileResponder port={self._port} sites={len(self._sites)} "
            f"throttled={len(self._throttled)} sessions={self._serial}>"
        )

    def site_of(self, host: str) -> HostileSite | None:
        return self._sites.get(host.lower())

    def answer(self, host: str, target: str, now: float) -> HostileAnswer:
        """The answer to GET `target` (path and query as received) on `host` at `now`."""
        site = self.site_of(host)
        if site is None:
            return fixed(404, b"unknown host\n", "text/plain")
        path, _, query = target.partition("?")
        if path == "/robots.txt":
            return _robots(site.kind)
        if site.kind in TRAP_ENTRIES and path in REAL_PATHS:
            return fixed(200, self._real_page(site.kind, path))
        handler: Callable[[HostileResponder, str, str, str, float], HostileAnswer]
        handler = _HANDLERS[site.kind]
        return handler(self, site.domain, path, query, now)

    def _url(self, host: str, path: str) -> str:
        return f"http://{host}:{self._port}{path}"

    def _redirect(self, host: str, path: str) -> HostileAnswer:
        location = self._url(host, path)
        return fixed(302, html_page("Moved", [location]), extra=[("Location", location)])

    def _session_id(self) -> str:
        self._serial += 1
        return f"{self._serial * 2654435761 % 2**32:08x}{self._serial:04x}"

    def _stall(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        if path == "/no-headers":
            return HostileAnswer(0, b"", Silence(), Ending.CLOSE)
        head = response_head(200, [("Content-Type", HTML), ("Connection", "close")])
        drip = Drip(b'<!DOCTYPE html><html><body><a href="/more.html">more</a>')
        return HostileAnswer(200, head, drip, Ending.CLOSE)

    def _giant(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        if path != "/":
            return not_found()
        head = b'<!DOCTYPE html><html><body><h1>Giant</h1><a href="/">home</a>\n'
        block = b"<p>" + b"all work and no play makes a giant page " * 25 + b"</p>\n"
        count = (GIANT_BYTES - len(head)) // len(block)
        tail = b" " * (GIANT_BYTES - len(head) - count * len(block))
        headers = [("Content-Type", HTML), ("Connection", "close")]
        return HostileAnswer(
            200, response_head(200, headers), Repeat(head, block, count, tail), Ending.CLOSE
        )

    def _bomb(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        if path != "/":
            return not_found()
        return streamed(HTML, _default_bomb(), [("Content-Encoding", "gzip")])

    def _throttle(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        pages = ["/", *(f"/p/{n}.html" for n in range(1, 6)), "/busy"]
        if path not in pages:
            return not_found()
        if (host, path) not in self._throttled:
            self._throttled.add((host, path))
            if path == "/busy":
                # HTTP-dates have whole seconds: the next whole second, plus 4 s.
                at = float(int(now) + 1 + BUSY_RETRY_AFTER_S)
                answer = fixed(
                    503, html_page("Busy", []), extra=[("Retry-After", formatdate(at, usegmt=True))]
                )
                return _with_retry_after(answer, at - now, at=at)
            answer = fixed(
                429,
                html_page("Slow down", []),
                extra=[("Retry-After", str(THROTTLE_RETRY_AFTER_S))],
            )
            return _with_retry_after(answer, float(THROTTLE_RETRY_AFTER_S))
        return fixed(200, html_page(f"throttle {path}", pages))

    def _flaky(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        return fixed(503, html_page("Unavailable", ["/", "/a.html"]))

    def _robots_blocked(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        return fixed(200, html_page("You should not be here", ["/secret/1.html", "/secret/2.html"]))

    def _broken(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        if path == "/":
            return fixed(200, html_page("Broken things", BROKEN_PATHS))
        return _broken_answer(path) or not_found()

    def _binary(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        if path == "/":
            return fixed(200, html_page("Downloads", ["/files/big.pdf", "/video.mp4"]))
        block = bytes(range(256)) * 256  # 64 KiB
        if path == "/files/big.pdf":
            head = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"
            return streamed(
                "application/pdf",
                Repeat(
                    head,
                    block,
                    (PDF_BYTES - len(head)) // len(block),
                    b" " * ((PDF_BYTES - len(head)) % len(block)),
                ),
            )
        if path == "/video.mp4":
            head = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"
            n, rest = divmod(MP4_BYTES - len(head), len(block))
            return streamed("video/mp4", Repeat(head, block, n, bytes(rest)))
        return not_found()

    def _redirects(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        if path == "/":
            return fixed(200, html_page("Redirects", ["/loop/a", "/chain/1"]))
        if path in ("/loop/a", "/loop/b"):
            return self._redirect(host, "/loop/b" if path == "/loop/a" else "/loop/a")
        if path.startswith("/chain/") and path[7:].isdigit() and 1 <= int(path[7:]) <= CHAIN_LENGTH:
            n = int(path[7:])
            return self._redirect(host, f"/chain/{n + 1}" if n < CHAIN_LENGTH else "/end.html")
        if path == "/end.html":
            return fixed(200, html_page("The end", ["/"]))
        return not_found()

    def _endless_redirect(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        if path == "/":
            return fixed(200, html_page("Endless redirects", ["/inf/1"]))
        n = _int_after(path, "/inf/")
        return self._redirect(host, f"/inf/{n + 1}") if n is not None else not_found()

    def _reset_page(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        if path == "/":
            return fixed(200, html_page("One bad page", ["/resets.html", "/healthy.html"]))
        if path == "/resets.html":
            body = b"<!DOCTYPE html><html><body><p>" + b"cut short " * 500
            head = response_head(200, [("Content-Type", HTML), ("Content-Length", "100000")])
            return HostileAnswer(200, head, body, Ending.RESET)
        if path == "/healthy.html":
            return fixed(200, html_page("Healthy", ["/"]))
        return not_found()

    def _bad_headers(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        if path == "/":
            return fixed(200, html_page("Bad heads", [*BAD_HEADER_PATHS, *FAULT_OK_PAGES]))
        body = html_page(path, ["/"])
        if path == "/oversized-header.html":
            return fixed(200, body, extra=[("X-Filler", "a" * HUGE_HEADER_BYTES)])
        if path == "/many-headers.html":
            return fixed(200, body, extra=[(f"X-Many-{n}", str(n)) for n in range(MANY_HEADERS)])
        if path == "/bad-status.html":
            head = f"HTTP/1.1 2OO Okay-ish\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            return HostileAnswer(200, head, body, Ending.CLOSE)
        if path in FAULT_OK_PAGES:
            return fixed(200, html_page(f"ok {path}", ["/"]))
        return not_found()

    def _closed_port(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        if path == "/":
            closed = [f"http://{host}:{CLOSED_PORT}{p}" for p in ("/", "/a.html", "/b.html")]
            return fixed(200, html_page("Two origins", [*closed, *FAULT_OK_PAGES]))
        if path in FAULT_OK_PAGES:
            return fixed(200, html_page(f"ok {path}", ["/"]))
        return not_found()

    def _real_page(self, kind: HostileKind, path: str) -> bytes:
        """A real page of a trap site: two paragraphs of its own text, links to the other
        real pages (the home and news page also to the trap's entry)."""
        rng = random.Random(f"{kind.value}:{path}")
        text = paragraph(rng, topic_words(len(path))) + " " + paragraph(rng)
        links = list(REAL_PATHS)
        if path in ("/", "/news/"):
            links += TRAP_ENTRIES[kind] or self._session_links()
        return html_page(f"{kind.value} {path} {title(rng)}", links, text)

    def _session_links(self) -> list[str]:
        pages = ["/", *(f"/page/{n}.html" for n in range(1, SESSION_PAGES + 1))]
        return [f"{p};jsessionid={self._session_id()}?sid={self._session_id()}" for p in pages]

    def _calendar(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        month = calendar_month(path)
        if month is None:
            return not_found()
        year, mon = month
        around = (calendar_path(year, mon - 1), calendar_path(year, mon + 1))
        links = [link for link in around if link is not None]
        return fixed(200, html_page(f"{year:04d}-{mon:02d}", links, "No events this month."))

    def _session(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        path = path.split(";", 1)[0]
        if path not in [f"/page/{n}.html" for n in range(1, SESSION_PAGES + 1)]:
            return not_found()
        return fixed(200, html_page(f"session {path}", self._session_links()))

    def _repeat(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        for unit in ("/a/b", "/2026/11"):
            if path.endswith("/") and path[:-1] == unit * (len(path[:-1]) // len(unit)):
                step = unit.lstrip("/") + "/"
                return fixed(200, html_page(f"repeat {path}", [step]))
        return not_found()

    def _facets(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        if path != "/search":
            return not_found()
        return fixed(200, html_page(f"search {query}", facet_links(query)))

    def _copies(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        n = _int_after(path, "/item/")
        if n is None or not 1 <= n <= COPIES_COUNT:
            return not_found()
        links = [f"/item/{m}" for m in range(n + 1, min(n + COPIES_LINKS, COPIES_COUNT) + 1)]
        return fixed(200, html_page(f"Item {n}", links, _BOILERPLATE + f" Item number {n}."))

    def _relpath(self, host: str, path: str, query: str, now: float) -> HostileAnswer:
        """Every /docs/ path made of known segments serves the same bytes, whose relative
        links resolve one level deeper: a server that ignores the path's tail."""
        segments = path.split("/")
        if segments[:2] != ["", "docs"] or segments[-1] != "":
            return not_found()
        if not all(part in DOCS_SEGMENTS for part in segments[2:-1]):
            return not_found()
        links = [f"{part}/" for part in DOCS_SEGMENTS]
        return fixed(200, html_page("Documentation", links, "Read the manual."))


_BOILERPLATE = (
    "Welcome to our catalogue. Every item ships in two to three working days. "
    "Returns are free within thirty days. Prices include VAT. "
) * 20

_HANDLERS: dict[HostileKind, Callable[[HostileResponder, str, str, str, float], HostileAnswer]] = {
    HostileKind.STALL: HostileResponder._stall,
    HostileKind.GIANT: HostileResponder._giant,
    HostileKind.BOMB: HostileResponder._bomb,
    HostileKind.THROTTLE: HostileResponder._throttle,
    HostileKind.FLAKY: HostileResponder._flaky,
    HostileKind.ROBOTS_5XX: HostileResponder._robots_blocked,
    HostileKind.ROBOTS_STALL: HostileResponder._robots_blocked,
    HostileKind.BROKEN: HostileResponder._broken,
    HostileKind.BINARY: HostileResponder._binary,
    HostileKind.REDIRECTS: HostileResponder._redirects,
    HostileKind.CALENDAR: HostileResponder._calendar,
    HostileKind.SESSION: HostileResponder._session,
    HostileKind.REPEAT: HostileResponder._repeat,
    HostileKind.FACETS: HostileResponder._facets,
    HostileKind.COPIES: HostileResponder._copies,
    HostileKind.ENDLESS_REDIRECT: HostileResponder._endless_redirect,
    HostileKind.RESET_PAGE: HostileResponder._reset_page,
    HostileKind.BAD_HEADERS: HostileResponder._bad_headers,
    HostileKind.CLOSED_PORT: HostileResponder._closed_port,
    HostileKind.RELPATH: HostileResponder._relpath,
}


def _robots(kind: HostileKind) -> HostileAnswer:
    if kind is HostileKind.ROBOTS_5XX:
        return fixed(500, b"internal server error\n", "text/plain")
    if kind is HostileKind.ROBOTS_STALL:
        head = response_head(200, [("Content-Type", "text/plain"), ("Connection", "close")])
        return HostileAnswer(200, head, Drip(b"User-agent: *\n", b"#"), Ending.CLOSE)
    return fixed(200, ROBOTS_ALLOW_ALL.encode(), "text/plain")


def _with_retry_after(
    answer: HostileAnswer, seconds: float, *, at: float | None = None
) -> HostileAnswer:
    return HostileAnswer(answer.status, answer.head, answer.body, answer.ending, seconds, at)


def _int_after(path: str, prefix: str) -> int | None:
    rest = path.removeprefix(prefix)
    return int(rest) if rest != path and rest.isdigit() and len(rest) < 9 else None


def calendar_month(path: str) -> tuple[int, int] | None:
    """(year, month) of a `/cal/YYYY/MM/` path, or None."""
    parts = path.split("/")
    if len(parts) != 5 or parts[:2] != ["", "cal"] or parts[4] != "":
        return None
    year, month = parts[2], parts[3]
    if not (year.isdigit() and month.isdigit() and len(month) == 2 and 4 <= len(year) <= 6):
        return None
    return (int(year), int(month)) if 1 <= int(month) <= 12 and int(year) >= 1 else None


def calendar_path(year: int, month: int) -> str | None:
    """The page of `month` (may be 0 or 13: rolls over); None before year 1."""
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    return f"/cal/{year:04d}/{month:02d}/" if year >= 1 else None


def facet_links(query: str) -> list[str]:
    """Every /search URL that adds one facet to `query` or changes one facet's value.

    Parameters keep the order they were added in, so one combination is reachable under
    several spellings, as on real shops.
    """
    current = {k: v for k, v in parse_qsl(query) if k in FACETS}
    links = []
    for name, values in FACETS.items():
        for value in values:
            if current.get(name) != value:
                links.append("/search?" + urlencode({**current, name: value}))
    return links
