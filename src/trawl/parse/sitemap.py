"""Sitemaps (sitemaps.org protocol 0.9): URL sets, sitemap indexes and plain-text lists (pure).

How this works: `parse_sitemap` takes the fetched body and returns every usable `<loc>` with
its `<lastmod>`, plus counts of what it dropped and why it stopped. It never raises on bad
input: a broken sitemap is the web's fault (STYLE §5), so the outcome says what went wrong.

1. A body starting with the gzip magic (1f 8b) is inflated first: `.xml.gz` sitemaps are
   served as application/gzip, not with a Content-Encoding the fetcher would undo. Inflation
   stops at `max_bytes` of output, so a bomb costs a few times that in memory, not its size.
2. A body whose first non-blank character is `<` is XML; anything else is a text sitemap,
   one URL per line in UTF-8 (sitemaps.org "Text file").
3. XML goes through expat with Python handlers and no tree (bench/sitemap_bench.py measured it
   against ElementTree and lxml iterparse). Entity declarations and external entities are
   refused, as defusedxml does by default: that stops billion-laughs and XXE documents before
   anything is expanded or read. Sitemaps need only the five predefined entities.
4. Elements count when they sit where the protocol puts them (root > url|sitemap > loc|lastmod)
   in the root's namespace, whatever that is (0.9, the old Google 0.84, none), so extension
   elements such as `<image:loc>` inside a `<url>` are ignored.

Rules for the result:
- Only http(s) locs with a host are kept, trimmed of surrounding whitespace but otherwise as
  written: the caller filters by site and normalises.
- `max_urls` counts kept entries. The first entry past it is dropped (counted in `skipped`)
  and parsing stops with `truncated` set.
- A body over `max_bytes` (after inflating) is cut there: the entries before the cut are
  returned with `truncated` set and `error` saying so; the XML error the cut causes is not
  reported.
- Malformed XML keeps the entries completed before the error and sets `error`. The kind
  stays URLSET or INDEX once the root element is known; it is INVALID when no root was read
  (empty body, corrupt gzip, a DTD declaring entities, an encoding expat can't read) or the
  root is something else (an HTML error page, a feed).
"""

from __future__ import annotations

import re
from datetime import date
from enum import StrEnum
from typing import NamedTuple
from xml.parsers import expat

from isal import isal_zlib

__all__ = [
    "MAX_UNCOMPRESSED_BYTES",
    "MAX_URLS",
    "SitemapEntry",
    "SitemapKind",
    "SitemapParse",
    "parse_lastmod",
    "parse_sitemap",
]

# sitemaps.org: "no more than 50,000 URLs and must be no larger than 50MB (52,428,800 bytes)"
MAX_URLS = 50_000
MAX_UNCOMPRESSED_BYTES = 50 * 1024 * 1024

_GZIP_MAGIC = b"\x1f\x8b"
# isal's stub declares `error` as an instance; it is the exception class.
_GZIP_ERROR: type[Exception] = isal_zlib.error  # type: ignore[assignment]
# A scheme of http or https and a non-empty host; the rest is the caller's to normalise.
_WEB_URL = re.compile(r"https?://[^\s/?#\\]", re.IGNORECASE)
# A UTF-8 byte order mark and blank lines before the XML: expat rejects an XML declaration
# that is not at the very start, and PHP-generated sitemaps often have a newline there.
_LEADING_BLANKS = re.compile(rb"(?:\xef\xbb\xbf)?[ \t\r\n]*")
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


class SitemapKind(StrEnum):
    URLSET = "urlset"
    INDEX = "index"
    TEXT = "text"
    INVALID = "invalid"


class SitemapEntry(NamedTuple):
    """A page (in a URL set or text sitemap) or a child sitemap (in an index)."""

    loc: str
    lastmod_at: float | None  # epoch seconds UTC; None when absent or not a W3C datetime


class SitemapParse(NamedTuple):
    kind: SitemapKind
    entries: tuple[SitemapEntry, ...]  # for INDEX: child sitemap locations
    skipped: int  # entries dropped: bad/missing loc, not http(s), over the limit
    truncated: bool  # stopped at max_urls or max_bytes
    error: str  # "" or a one-line reason


def parse_sitemap(
    body: bytes, *, max_urls: int = MAX_URLS, max_bytes: int = MAX_UNCOMPRESSED_BYTES
) -> SitemapParse:
    """The entries of a sitemap body (gzip, XML URL set or index, or text); never raises.

    `max_bytes` caps the decoded size; `max_urls` caps the entries kept (see the module doc).
    """
    gzip_error = ""
    too_big = False
    if body.startswith(_GZIP_MAGIC):
        body, too_big, gzip_error = _gunzip(body, max_bytes)
    elif len(body) > max_bytes:
        body, too_big = body[:max_bytes], True
    start = _content_start(body)
    if start == len(body):
        return SitemapParse(SitemapKind.INVALID, (), 0, False, gzip_error or "empty body")
    if body.startswith(_UTF16_BOMS) or body[start : start + 1] == b"<":
        xml = body[start:] if start else body
        result = _parse_xml(xml, max_urls, is_cut=too_big or bool(gzip_error))
    else:
        result = _parse_text(body, max_urls, is_cut=too_big or bool(gzip_error))
    if too_big:
        error = f"sitemap is over {max_bytes} bytes decoded; read only the first {max_bytes}"
        return result._replace(truncated=True, error=result.error or error)
    if gzip_error:
        return result._replace(error=result.error or gzip_error)
    return result


def _content_start(body: bytes) -> int:
    """Offset of the first byte after a UTF-8 byte order mark and blank lines."""
    blanks = _LEADING_BLANKS.match(body)
    return blanks.end() if blanks else 0


def _gunzip(body: bytes, max_bytes: int) -> tuple[bytes, bool, str]:
    """(decoded bytes up to max_bytes, whether more was there, error or "")."""
    pieces: list[bytes] = []
    size = 0
    rest = body
    # A gzip file may hold several members back to back (RFC 1952 §2.2); read them all.
    while rest.startswith(_GZIP_MAGIC):
        # isal inflates 5x faster than zlib here (bench/sitemap_bench.py), same interface.
        inflater = isal_zlib.decompressobj(wbits=16 + isal_zlib.MAX_WBITS)
        try:
            # One extra byte of room tells "exactly max_bytes" from "more than max_bytes".
            piece = inflater.decompress(rest, max_bytes - size + 1)
        except _GZIP_ERROR as exc:
            return b"".join(pieces), False, f"bad gzip data: {exc}"
        pieces.append(piece)
        size += len(piece)
        if size > max_bytes:
            return b"".join(pieces)[:max_bytes], True, ""
        if not inflater.eof:
            return b"".join(pieces), False, "gzip stream ends early"
        rest = inflater.unused_data
    # Bytes after the last member that are not another member are ignored, as gzip(1) does.
    return b"".join(pieces), False, ""


def _parse_text(body: bytes, max_urls: int, *, is_cut: bool) -> SitemapParse:
    text = body.decode("utf-8", errors="replace").removeprefix("\ufeff")
    lines = text.splitlines()
    if is_cut and lines and not text.endswith(("\n", "\r")):
        lines.pop()  # the cut split the last URL
    entries: list[SitemapEntry] = []
    skipped = 0
    for line in lines:
        loc = line.strip()
        if not loc:
            continue
        if not _WEB_URL.match(loc):
            skipped += 1
        elif len(entries) == max_urls:
            return SitemapParse(SitemapKind.TEXT, tuple(entries), skipped + 1, True, "")
        else:
            entries.append(SitemapEntry(loc, None))
    return SitemapParse(SitemapKind.TEXT, tuple(entries), skipped, False, "")


class _Stop(Exception):
    """Raised from an expat handler to end the parse: limit reached or forbidden markup."""


class _SitemapReader:
    """expat handlers collecting entries; see the module doc for the rules they apply."""

    def __init__(self, max_urls: int) -> None:
        self.max_urls = max_urls
        self.kind = SitemapKind.INVALID
        self.entries: list[SitemapEntry] = []
        self.skipped = 0
        self.truncated = False
        self.error = ""
        self._depth = 0
        self._item = ""  # qualified names of the item, loc and lastmod elements
        self._loc_name = ""
        self._lastmod_name = ""
        self._in_item = False
        self._loc: str | None = None
        self._lastmod: str | None = None
        self._text: list[str] | None = None  # collecting character data of loc or lastmod

    def start(self, name: str, _attrs: object) -> None:
        self._depth += 1
        if self._depth == 1:
            self._start_root(name)
        elif self._depth == 2:
            self._in_item = name == self._item
            self._loc = self._lastmod = None
        elif self._depth == 3 and self._in_item and name in (self._loc_name, self._lastmod_name):
            self._text = []

    def _start_root(self, name: str) -> None:
        namespace, _, local = name.rpartition(" ")
        prefix = namespace + " " if namespace else ""
        if local == "urlset":
            self.kind, self._item = SitemapKind.URLSET, prefix + "url"
        elif local == "sitemapindex":
            self.kind, self._item = SitemapKind.INDEX, prefix + "sitemap"
        else:
            self.error = f"root element <{local}> is not <urlset> or <sitemapindex>"
            raise _Stop
        self._loc_name, self._lastmod_name = prefix + "loc", prefix + "lastmod"

    def characters(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)

    def end(self, name: str) -> None:
        self._depth -= 1
        if self._text is not None:
            # First <loc> and <lastmod> win, should an entry carry two.
            if name == self._loc_name and self._loc is None:
                self._loc = "".join(self._text).strip()
            elif name == self._lastmod_name and self._lastmod is None:
                self._lastmod = "".join(self._text)
            self._text = None
        elif self._depth == 1 and self._in_item:
            self._in_item = False
            self._finish_item()

    def _finish_item(self) -> None:
        loc = self._loc
        if loc is None or not _WEB_URL.match(loc):
            self.skipped += 1
        elif len(self.entries) == self.max_urls:
            self.skipped += 1
            self.truncated = True
            raise _Stop
        else:
            lastmod_at = parse_lastmod(self._lastmod) if self._lastmod is not None else None
            self.entries.append(SitemapEntry(loc, lastmod_at))

    def refuse_entity(self, *_args: object) -> None:
        self.error = "entity declarations are not allowed in a sitemap"
        raise _Stop

    def refuse_external(self, *_args: object) -> int:
        self.error = "external entities are not allowed in a sitemap"
        raise _Stop


def _parse_xml(body: bytes, max_urls: int, *, is_cut: bool) -> SitemapParse:
    reader = _SitemapReader(max_urls)
    parser = expat.ParserCreate(namespace_separator=" ")
    parser.buffer_text = True  # one characters() call per text node, not one per line
    parser.StartElementHandler = reader.start
    parser.EndElementHandler = reader.end
    parser.CharacterDataHandler = reader.characters
    parser.EntityDeclHandler = reader.refuse_entity
    parser.ExternalEntityRefHandler = reader.refuse_external
    try:
        parser.Parse(body, True)
    except _Stop:
        pass
    except expat.ExpatError as exc:
        if not is_cut:
            reader.error = f"malformed XML: {exc}"
    except (LookupError, ValueError) as exc:
        # pyexpat looks up an encoding it doesn't know among Python's codecs when it reads the
        # XML declaration: LookupError for unknown names, ValueError (UnicodeError included) for
        # multi-byte or failing codecs. Anything raised after the root began is a bug of ours.
        if reader.kind is not SitemapKind.INVALID:
            raise
        reader.error = f"unsupported XML encoding: {exc}"
    if not reader.error and reader.kind is SitemapKind.INVALID:
        reader.error = "no root element"
    return SitemapParse(
        reader.kind, tuple(reader.entries), reader.skipped, reader.truncated, reader.error
    )


# W3C Date and Time Formats (https://www.w3.org/TR/NOTE-datetime), which sitemaps.org names.
# Lenient where sitemaps in the wild are: a space for "T", "+hhmm" offsets, no offset at all
# (read as UTC), a comma before fractional seconds.
_W3C_DATETIME = re.compile(
    r"(\d{4})(?:-(\d\d)(?:-(\d\d)"
    r"(?:[Tt ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d+))?)?\s*([Zz]|[+-]\d\d(?::?\d\d)?)?)?)?)?",
    re.ASCII,
)
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()


def parse_lastmod(text: str) -> float | None:
    """Epoch seconds of a W3C datetime (YYYY, YYYY-MM, YYYY-MM-DD, with time and offset).

    A date alone is midnight UTC, a time without an offset is UTC; None when unreadable or out
    of range (month 13, 25:00, a leap second, year 0, an offset of 24 hours or more).
    """
    match = _W3C_DATETIME.fullmatch(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    try:
        days = date(int(year), int(month or 1), int(day or 1)).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        return None
    hours, minutes, seconds = int(hour or 0), int(minute or 0), int(second or 0)
    offset_s = _offset_s(offset)
    if hours > 23 or minutes > 59 or seconds > 59 or offset_s is None:
        return None
    # Integer microseconds, then one division: the same float as datetime.timestamp(), at
    # two thirds of the cost of building an aware datetime (bench/sitemap_bench.py).
    micros = int(fraction[:6].ljust(6, "0")) if fraction else 0
    whole_s = days * 86_400 + hours * 3_600 + minutes * 60 + seconds - offset_s
    return (whole_s * 1_000_000 + micros) / 1_000_000


def _offset_s(offset: str | None) -> int | None:
    """Seconds east of UTC of "Z", "+hh", "+hhmm" or "+hh:mm"; None when out of range."""
    if offset is None or offset in ("Z", "z"):
        return 0
    hours = int(offset[1:3])
    minutes = int(offset[-2:]) if len(offset) > 3 else 0
    if hours > 23 or minutes > 59:
        return None
    return (hours * 3_600 + minutes * 60) * (-1 if offset[0] == "-" else 1)
