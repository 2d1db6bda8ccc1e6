"""What the test web answers to one request: status, headers and body, decided without I/O.

The server shell calls `Responder.answer` for each request. Bodies are rendered once per
(host, path, gzip) and cached: the server must sustain hundreds of requests a second.
Live pages are the exception: each request renders the next revision, numbered per
(host, path) from 1, so their text and ETag change on every fetch.
"""

from __future__ import annotations

import gzip
import hashlib
import time
from dataclasses import dataclass
from email.utils import formatdate
from typing import TYPE_CHECKING

from trawl.testweb.layout import PageKind
from trawl.testweb.render import render_document, render_html, render_pdf
from trawl.testweb.robots_variants import robots_answer
from trawl.testweb.sitemaps import render_sitemap

if TYPE_CHECKING:
    from trawl.testweb.layout import Page, Site
    from trawl.testweb.robots_variants import RobotsAnswer
    from trawl.testweb.sitemaps import Sitemap
    from trawl.testweb.sites import TestWeb

_HTML = "text/html; charset=utf-8"
_TEXT = "text/plain; charset=utf-8"
_LAST_MODIFIED_AT = 1_704_067_200.0  # Mon, 01 Jan 2024 00:00:00 GMT, for every cached 200


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    etag: str | None = None  # set on 200s, for If-None-Match
    last_modified_at: float | None = None  # set on 200s but live pages, for If-Modified-Since
    is_cacheable: bool = True  # False for live pages: the next request gets a new revision


class Responder:
    """Answers requests for one test web served on one port; caches rendered replies."""

    def __init__(self, web: TestWeb, port: int) -> None:
        self._web = web
        self._port = port
        self._cache: dict[tuple[str, str, bool], Reply] = {}
        self._revisions: dict[tuple[str, str], int] = {}  # live page -> revisions served

    def __repr__(self) -> str:
        return (
            f"<Responder port={self._port} sites={len(self._web.sites)} cached={len(self._cache)}>"
        )

    def answer(self, host: str, path: str, accepts_gzip: bool) -> Reply:
        """Reply for `path` (query ignored) on `host` (lowercase, without port)."""
        path = path.split("?", 1)[0]
        key = (host, path, accepts_gzip)
        reply = self._cache.get(key)
        if reply is None:
            reply = self._make(host, path, accepts_gzip)
            if reply.is_cacheable:
                self._cache[key] = reply
        return reply

    def _make(self, host: str, path: str, accepts_gzip: bool) -> Reply:
        site = self._web.site_of(host)
        if site is None:
            return _plain(404, f"unknown host {host!r}\n")
        if path == "/robots.txt" and site.robots_redirect_host is not None:
            return self._redirect(site.robots_redirect_host, path, 301)
        robots = robots_answer(site.robots, path)
        if robots is not None:
            return self._robots(site, host, robots)
        file = site.files.get((host, path))
        if file is not None:
            compress = site.gzip and accepts_gzip and not file.content_type.startswith("image/")
            return _ok(file.body_at(self._port), file.content_type, compress=compress)
        sitemap = site.sitemaps.get((host, path))
        if sitemap is not None:
            return self._sitemap(site, sitemap, accepts_gzip)
        page = site.pages.get((host, path))
        if page is None:
            return _not_found(path)
        return self._page(site, page, accepts_gzip)

    def _page(self, site: Site, page: Page, accepts_gzip: bool) -> Reply:
        if page.kind is PageKind.REDIRECT:
            assert page.redirect_to is not None
            host = page.redirect_host or page.host
            return self._redirect(host, page.redirect_to, page.redirect_status)
        if page.kind is PageKind.PDF:
            return _ok(render_pdf(page), "application/pdf", compress=False)
        compress = site.gzip and accepts_gzip
        if page.kind is PageKind.DOCUMENT:
            return _ok(render_document(page), _HTML, compress=compress)
        if page.kind is PageKind.LIVE:
            key = (page.host, page.path)
            revision = self._revisions[key] = self._revisions.get(key, 0) + 1
            body = render_html(site, page, self._port, revision)
            return _ok(body, _HTML, compress=compress, is_live=True)
        return _ok(render_html(site, page, self._port), _HTML, compress=compress)

    def _robots(self, site: Site, host: str, robots: RobotsAnswer) -> Reply:
        if robots.location is not None:
            return self._redirect(host, robots.location, robots.status)
        body = robots.body
        if robots.status == 200 and host == site.apex and site.robots_sitemaps:
            # RFC 9309 §2.2.4: Sitemap lines stand outside the groups, with absolute URLs.
            body += "".join(
                f"\nSitemap: http://{host}:{self._port}{p}" for p in site.robots_sitemaps
            )
            body += "\n"
        return _plain(robots.status, body)

    def _sitemap(self, site: Site, sitemap: Sitemap, accepts_gzip: bool) -> Reply:
        body = render_sitemap(sitemap, self._port, time.time())
        live = sitemap.is_live
        if sitemap.is_gzipped:  # a gzip file, not a gzip transfer: no Content-Encoding
            return _ok(body, sitemap.content_type, compress=False, is_live=live)
        compress = site.gzip and accepts_gzip
        return _ok(body, sitemap.content_type, compress=compress, is_live=live)

    def _redirect(self, host: str, path: str, status: int) -> Reply:
        location = f"http://{host}:{self._port}{path}"
        body = f'<!DOCTYPE html>\n<title>Moved</title>\n<a href="{location}">moved here</a>\n'
        headers = (("Content-Type", _HTML), ("Location", location))
        return Reply(status, headers, body.encode())


def _plain(status: int, body: str) -> Reply:
    return Reply(status, (("Content-Type", _TEXT),), body.encode())


def _not_found(path: str) -> Reply:
    body = f"<!DOCTYPE html>\n<title>Not Found</title>\n<h1>Not Found</h1>\n<p>{len(path)}</p>\n"
    return Reply(404, (("Content-Type", _HTML),), body.encode())


def _ok(body: bytes, content_type: str, *, compress: bool, is_live: bool = False) -> Reply:
    """A 200 with an ETag; a Last-Modified too unless `is_live` (its text has no stable date)."""
    etag = '"' + hashlib.sha1(body, usedforsecurity=False).hexdigest()[:16] + '"'
    headers = [("Content-Type", content_type), ("ETag", etag)]
    if is_live:
        headers.append(("Cache-Control", "no-cache"))
        last_modified_at = None
    else:
        last_modified_at = _LAST_MODIFIED_AT
        headers.append(("Last-Modified", formatdate(last_modified_at, usegmt=True)))
    if compress:
        # mtime=0 keeps the bytes the same from run to run.
        body = gzip.compress(body, compresslevel=6, mtime=0)
        headers += [("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")]
    return Reply(200, tuple(headers), body, etag, last_modified_at, is_cacheable=not is_live)
