"""XML sitemaps and sitemap indexes the test web serves (sitemaps.org protocol 0.9).

A sitemap is stored as values (its entries) and rendered with the port, like pages: its
`<loc>`s are absolute URLs. A gzipped sitemap (`.xml.gz`) is served as a gzip file
(`application/gzip`, no Content-Encoding), as sites publish them.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from datetime import UTC, datetime
from xml.sax.saxutils import escape

_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
LASTMOD_NOW = "now"  # an entry whose <lastmod> is the time of each request: always newer


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    """One `<url>` of a urlset, or one `<sitemap>` of an index."""

    host: str
    path: str
    lastmod: str | None = None  # W3C datetime as written, e.g. "2024-03-05"
    changefreq: str | None = None


@dataclass(frozen=True, slots=True)
class Sitemap:
    """A sitemap file on one host: a urlset, or an index of child sitemaps."""

    host: str
    path: str
    entries: tuple[SitemapEntry, ...]
    is_index: bool = False

    @property
    def is_gzipped(self) -> bool:
        return self.path.endswith(".gz")

    @property
    def is_live(self) -> bool:
        """Rendered per request (a `LASTMOD_NOW` entry), so never cached."""
        return any(e.lastmod == LASTMOD_NOW for e in self.entries)

    @property
    def content_type(self) -> str:
        return "application/gzip" if self.is_gzipped else "application/xml"


def render_sitemap(sitemap: Sitemap, port: int, now: float = 0.0) -> bytes:
    """The file's bytes: XML, gzipped (mtime 0, so stable) when its path ends in .gz.
    `LASTMOD_NOW` entries carry `now` as their lastmod."""
    root, item = ("sitemapindex", "sitemap") if sitemap.is_index else ("urlset", "url")
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', f'<{root} xmlns="{_NS}">']
    for entry in sitemap.entries:
        lines.append(f"  <{item}><loc>{escape(_url(entry, port))}</loc>")
        lastmod = entry.lastmod
        if lastmod == LASTMOD_NOW:
            lastmod = datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds")
        if lastmod is not None:
            lines.append(f"    <lastmod>{escape(lastmod)}</lastmod>")
        if entry.changefreq is not None:
            lines.append(f"    <changefreq>{escape(entry.changefreq)}</changefreq>")
        lines.append(f"  </{item}>")
    lines += [f"</{root}>", ""]
    body = "\n".join(lines).encode()
    return gzip.compress(body, compresslevel=6, mtime=0) if sitemap.is_gzipped else body


def _url(entry: SitemapEntry, port: int) -> str:
    return f"http://{entry.host}:{port}{entry.path}"
