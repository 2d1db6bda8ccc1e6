"""What the test web answers to one request: status, headers and body, decided without I/O.

The server shell calls `Responder.answer` for each request. Bodies are rendered once per
(host, path, gzip) and cached: the server must sustain hundreds of requests a second.
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trawl.testweb.layout import PageKind
from trawl.testweb.render import render_html, render_pdf
from trawl.testweb.robots_variants import robots_answer

if TYPE_CHECKING:
    from trawl.testweb.sites import TestWeb

_HTML = "text/html; charset=utf-8"
_TEXT = "text/plain; charset=utf-8"
_LAST_MODIFIED = "Mon, 01 Jan 2024 00:00:00 GMT"


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    etag: str | None = None  # set on cacheable 200s, for If-None-Match


class Responder:
    """Answers requests for one test web served on one port; caches rendered replies."""

    def __init__(self, web: TestWeb, port: int) -> None:
        self._web = web
        self._port = port
        self._cache: dict[tuple[str, str, bool], Reply] = {}

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
            reply = self._cache[key] = self._make(host, path, accepts_gzip)
        return reply

    def _make(self, host: str, path: str, accepts_gzip: bool) -> Reply:
        site = self._web.site_of(host)
        if site is None:
            return _plain(404, f"unknown host {host!r}\n")
        robots = robots_answer(site.robots, path)
        if robots is not None:
            if robots.location is not None:
                return self._redirect(host, robots.location, robots.status)
            return _plain(robots.status, robots.body)
        page = site.pages.get((host, path))
        if page is None:
            return _not_found(path)
        if page.kind is PageKind.REDIRECT:
            assert page.redirect_to is not None
            return self._redirect(host, page.redirect_to, page.redirect_status)
        if page.kind is PageKind.PDF:
            return _ok(render_pdf(page), "application/pdf", compress=False)
        body = render_html(site, page, self._port)
        return _ok(body, _HTML, compress=site.gzip and accepts_gzip)

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


def _ok(body: bytes, content_type: str, *, compress: bool) -> Reply:
    etag = '"' + hashlib.sha1(body, usedforsecurity=False).hexdigest()[:16] + '"'
    headers = [("Content-Type", content_type), ("ETag", etag), ("Last-Modified", _LAST_MODIFIED)]
    if compress:
        # mtime=0 keeps the bytes the same from run to run.
        body = gzip.compress(body, compresslevel=6, mtime=0)
        headers += [("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")]
    return Reply(200, tuple(headers), body, etag)
