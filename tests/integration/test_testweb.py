"""The test web over real loopback sockets: pages, robots variants, gzip, the request log."""

from __future__ import annotations

import gzip
import http.client
import time
from html.parser import HTMLParser
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

import pytest
from tests.integration.testweb_client import UA, fetch, logged

from trawl.testweb.politeness import ViolationKind, check_politeness
from trawl.testweb.process import TestWebProcess
from trawl.testweb.sites import PageKind, RobotsVariant, Site, TestWeb, build_web

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture(scope="module")
def proc() -> Iterator[TestWebProcess]:
    with TestWebProcess(sites=12, pages=12, seed=3) as running:
        yield running


def site_with(web: TestWeb, variant: RobotsVariant) -> Site:
    return next(site for site in web.sites if site.robots is variant)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.base: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        if tag == "a" and attr.get("href"):
            self.hrefs.append(str(attr["href"]))
        elif tag == "base" and attr.get("href"):
            self.base = attr["href"]
        elif tag == "link" and attr.get("rel") == "next":
            self.hrefs.append(str(attr["href"]))


def fold(url: str) -> tuple[str, str]:
    """A minimal normaliser: host lowercased, fragment and utm_* query dropped."""
    parts = urlsplit(url)
    assert parts.query in ("", "utm_source=x&utm_medium=y"), url
    return (parts.hostname or "", parts.path)


def test_ready_line_and_hosts_file(proc: TestWebProcess) -> None:
    assert proc.port > 0
    assert len(proc.seeds) == 5
    assert all(url.endswith(f".test:{proc.port}/") for url in proc.seeds)
    lines = proc.hosts_file.read_text().splitlines()
    assert lines == proc.web.hosts_lines(proc.port)
    ips = [line.split()[0] for line in lines]
    assert "127.0.0.1" not in ips
    assert all(ip.startswith("127.") for ip in ips)
    assert len(set(ips)) < len(ips)  # some sites share an address


def test_home_page_is_realistic_html(proc: TestWebProcess) -> None:
    host = urlsplit(proc.seeds[0]).hostname or ""
    status, headers, body = fetch(proc, host, "/")
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert int(headers["Content-Length"]) == len(body)
    html = body.decode()
    assert html.startswith("<!DOCTYPE html>")
    for tag in ("<title>", "<nav>", "<footer>", "<p "):
        assert tag in html


def test_links_resolve_to_the_pages_canonical_targets(proc: TestWebProcess) -> None:
    checked = 0
    for site in proc.web.sites:
        for page in site.pages.values():
            if page.kind is not PageKind.HTML:
                continue
            status, _, body = fetch(proc, page.host, page.path, {"Accept-Encoding": "identity"})
            assert status == 200
            parser = _Links()
            parser.feed(body.decode())
            page_url = f"http://{page.host}:{proc.port}{page.path}"
            base = urljoin(page_url, parser.base) if parser.base else page_url
            found = {fold(urljoin(base, href)) for href in parser.hrefs}
            assert found == {(link.host, link.path) for link in page.links}, page_url
            checked += 1
    assert checked > 100


def test_many_spellings_appear(proc: TestWebProcess) -> None:
    bodies = b"".join(
        fetch(proc, host, path)[2]
        for site in proc.web.sites
        for (host, path), page in site.pages.items()
        if page.kind is PageKind.HTML
    ).decode()
    port = proc.port
    for spelling in (
        'href="../',
        'href="./"',
        "#sec-",
        "utm_source=x&amp;utm_medium=y",
        f".TEST:{port}/",
        f".test:{port}/",
        'href="/',
        "<base href=",
        '<link rel="next"',
        'content="nofollow"',
        'content="noindex"',
    ):
        assert spelling in bodies, spelling


def test_missing_page_and_unknown_host_are_404(proc: TestWebProcess) -> None:
    site = proc.web.sites[0]
    assert fetch(proc, site.domain, "/no/such/page.html")[0] == 404
    conn = http.client.HTTPConnection(site.ips[0], proc.port, timeout=5)
    try:
        conn.request("GET", "/", headers={"Host": "nowhere.test"})
        assert conn.getresponse().status == 404
    finally:
        conn.close()


def test_redirects_point_at_a_canonical_page_of_the_same_host(proc: TestWebProcess) -> None:
    site = proc.web.sites[0]
    for status_wanted in (301, 302):
        page = next(p for p in site.pages.values() if p.redirect_status == status_wanted)
        status, headers, _ = fetch(proc, page.host, page.path)
        assert status == status_wanted
        assert headers["Location"] == f"http://{page.host}:{proc.port}{page.redirect_to}"
        assert (page.host, page.redirect_to) in site.pages


def test_pdf_is_served_as_pdf(proc: TestWebProcess) -> None:
    site = proc.web.sites[0]
    status, headers, body = fetch(proc, site.domain, "/files/report.pdf")
    assert status == 200
    assert headers["Content-Type"] == "application/pdf"
    assert body.startswith(b"%PDF-")


def test_query_is_ignored_when_serving(proc: TestWebProcess) -> None:
    site = proc.web.sites[0]
    plain = fetch(proc, site.domain, "/articles/")[2]
    assert fetch(proc, site.domain, "/articles/?utm_source=x&utm_medium=y")[2] == plain


@pytest.mark.parametrize(
    ("variant", "status"),
    [
        (RobotsVariant.MISSING, 404),
        (RobotsVariant.ALLOW_ALL, 200),
        (RobotsVariant.DISALLOW_PRIVATE, 200),
        (RobotsVariant.AGENT_ALLOWED, 200),
        (RobotsVariant.AGENT_LIMITED, 200),
        (RobotsVariant.CRAWL_DELAY, 200),
        (RobotsVariant.SERVER_ERROR, 503),
        (RobotsVariant.REDIRECTED, 301),
    ],
)
def test_robots_variants(proc: TestWebProcess, variant: RobotsVariant, status: int) -> None:
    site = site_with(proc.web, variant)
    for host in site.hosts:
        got, headers, body = fetch(proc, host, "/robots.txt")
        assert got == status
        if status == 200:
            assert headers["Content-Type"].startswith("text/plain")
            assert b"User-agent: *" in body
    if variant is RobotsVariant.CRAWL_DELAY:
        assert b"Crawl-delay: 2" in fetch(proc, site.domain, "/robots.txt")[2]
    if variant is RobotsVariant.REDIRECTED:
        location = fetch(proc, site.domain, "/robots.txt")[1]["Location"]
        assert location == f"http://{site.domain}:{proc.port}/robots-rules.txt"
        got, _, body = fetch(proc, site.domain, "/robots-rules.txt")
        assert (got, body) == (200, b"User-agent: *\nDisallow: /docs/b/\n")


def test_gzip_only_when_accepted_and_only_on_some_sites(proc: TestWebProcess) -> None:
    zipped = next(site for site in proc.web.sites if site.gzip)
    plain_site = next(site for site in proc.web.sites if not site.gzip)
    status, headers, body = fetch(proc, zipped.domain, "/", {"Accept-Encoding": "gzip"})
    assert (status, headers["Content-Encoding"]) == (200, "gzip")
    html = gzip.decompress(body)
    assert html.startswith(b"<!DOCTYPE html>")
    status, headers, body = fetch(proc, zipped.domain, "/", {"Accept-Encoding": "identity"})
    assert headers["Content-Encoding"] is None
    assert body == html
    headers = fetch(proc, plain_site.domain, "/", {"Accept-Encoding": "gzip"})[1]
    assert headers["Content-Encoding"] is None


def test_keep_alive_and_conditional_get(proc: TestWebProcess) -> None:
    site = proc.web.sites[0]
    conn = http.client.HTTPConnection(site.ips[0], proc.port, timeout=5)
    try:
        headers = {"Host": f"{site.domain}:{proc.port}", "User-Agent": UA}
        conn.request("GET", "/docs/", headers=headers)
        first = conn.getresponse()
        first.read()
        etag = first.headers["ETag"]
        conn.request("GET", "/docs/", headers={**headers, "If-None-Match": etag})
        second = conn.getresponse()
        assert (second.status, second.read()) == (304, b"")
    finally:
        conn.close()


def test_log_records_each_request(proc: TestWebProcess) -> None:
    site = proc.web.sites[-1]
    began_at = time.time()
    fetch(proc, site.domain, "/docs/a/?mark=log-test")
    record = logged(proc, site.domain, "/docs/a/?mark=log-test", began_at)
    assert (record.host, record.site, record.ip) == (site.domain, site.domain, site.ips[0])
    assert (record.method, record.status, record.ua) == ("GET", 200, UA)
    assert record.body_bytes > 1000
    assert record.t_start <= record.t_end


def test_politeness_checker_flags_a_burst_on_the_real_log(proc: TestWebProcess) -> None:
    site = site_with(proc.web, RobotsVariant.DISALLOW_PRIVATE)
    began_at = time.time()
    for path in ("/robots.txt", "/", "/private/1.html"):
        fetch(proc, site.domain, path)
    logged(proc, site.domain, "/private/1.html", began_at)
    records = [r for r in proc.requests() if r.site == site.domain and r.t_start >= began_at]
    assert len(records) == 3
    found = {v.kind for v in check_politeness(records, **proc.web.politeness_inputs())}
    assert found == {
        ViolationKind.SITE_TOO_SOON,
        ViolationKind.IP_TOO_SOON,
        ViolationKind.DISALLOWED,
    }


def test_expected_fetches(proc: TestWebProcess) -> None:
    web = proc.web
    expected = web.expected_fetches(proc.port)
    assert {(urlsplit(url).hostname, "/") for url in proc.seeds} <= expected
    robots_hosts = web.expected_robots(proc.port)
    assert {host for host, _ in expected} <= robots_hosts
    for site in web.sites:
        paths = {path for host, path in expected if host in site.hosts}
        if site.robots in (RobotsVariant.DISALLOW_PRIVATE, RobotsVariant.CRAWL_DELAY):
            assert not any(p.startswith("/private/") for p in paths)
        if site.robots is RobotsVariant.AGENT_LIMITED:
            assert not any(p.startswith(("/docs/", "/private/")) for p in paths)
        if site.robots is RobotsVariant.SERVER_ERROR:
            assert paths == set()
        if site.robots is RobotsVariant.AGENT_ALLOWED and site.domain in robots_hosts:
            assert (site.domain, "/") in expected
    assert any(path.startswith("/old/") for _, path in expected)  # redirect sources
    assert any(web.page(host, path) is None for host, path in expected)  # 404 targets


def test_most_pages_of_a_demo_sized_web_are_reachable() -> None:
    web = build_web(60, 20, seed=1)
    expected = web.expected_fetches(8000)
    pages = {key for site in web.sites for key in site.pages}
    assert len(expected & pages) > 0.8 * len(pages)
    assert build_web(60, 20, seed=1) == web  # deterministic


def test_process_stops_cleanly(tmp_path: Path) -> None:
    running = TestWebProcess(sites=3, pages=6, seed=9, workdir=tmp_path).start()
    site = running.web.sites[0]
    fetch(running, site.domain, "/robots.txt")
    assert running.stop() == 0
    assert [r.path for r in running.requests()] == ["/robots.txt"]
    assert running.stop() is None  # already stopped


def test_a_logged_end_is_never_after_the_client_had_the_whole_response(
    proc: TestWebProcess,
) -> None:
    """`t_end` is stamped before the response's last bytes go out, so a client that waits
    from when it read the response (Retry-After, the site gap) never looks early to the
    checker; a stamp after the write once ran 7 ms late on a loaded machine."""
    site = proc.web.sites[0]
    for n in range(20):
        began = time.time()
        status, _, body = fetch(proc, site.hosts[0], "/")
        received = time.time()
        assert status == 200
        assert body
        record = logged(proc, site.hosts[0], "/", began)
        assert record.t_start <= record.t_end <= received, n
