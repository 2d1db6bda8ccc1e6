"""The test web's freshness features (issue 5) over real loopback sockets.

Live and static pages with conditional GETs, sitemaps (index, gzipped child, urlset, one
entry of another site), exact copies, near-copies across sites, popular pages; and the
default web left exactly as it was.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import time
from collections import deque
from email.utils import formatdate
from typing import TYPE_CHECKING
from urllib.parse import urlsplit
from xml.etree import ElementTree

import pytest
from protego import Protego
from tests.integration.testweb_client import fetch

from trawl.parse.fingerprint import hamming, text_fingerprint
from trawl.parse.sitemap import parse_lastmod
from trawl.testweb.answers import Responder
from trawl.testweb.process import TestWebProcess
from trawl.testweb.sites import PageKind, RobotsVariant, TestWeb, build_web

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

NS = {"sm": "http://www.sitemaps.org/schemas/sitemap/0.9"}
SITES, PAGES, SEED = 12, 8, 7
Key = tuple[str, str]


@pytest.fixture(scope="module")
def proc() -> Iterator[TestWebProcess]:
    with TestWebProcess(sites=SITES, pages=PAGES, seed=SEED, freshness=True) as running:
        yield running


def body_of(proc: TestWebProcess, key: Key) -> bytes:
    status, _, body = fetch(proc, *key, {"Accept-Encoding": "identity"})
    assert status == 200, key
    return body


def in_links(web: TestWeb) -> dict[Key, set[Key]]:
    """Target -> pages linking it, over every page of the web."""
    found: dict[Key, set[Key]] = {}
    for site in web.sites:
        for key, page in site.pages.items():
            for link in page.links:
                found.setdefault((link.host, link.path), set()).add(key)
    return found


def site_depths(web: TestWeb, domain: str) -> dict[Key, int]:
    """Clicks from the site's home page, following links within the site only."""
    site = web.site_of(domain)
    assert site is not None
    depth = {(site.apex, "/"): 0}
    queue = deque(depth)
    while queue:
        key = queue.popleft()
        page = site.pages.get(key)
        for link in page.links if page is not None else ():
            target = (link.host, link.path)
            if target[0] in site.hosts and target not in depth:
                depth[target] = depth[key] + 1
                queue.append(target)
    return depth


# --- the default web stays as it was ---------------------------------------------------


def digest(web: TestWeb, port: int = 8000) -> str:
    """One hash over expected fetches and every answer (status, headers, body) of the web."""
    h = hashlib.sha256(repr(sorted(web.expected_fetches(port))).encode())
    responder = Responder(web, port)
    for site in web.sites:
        for host in site.hosts:
            for path in ["/robots.txt", *sorted(p for h_, p in site.pages if h_ == host)]:
                for accepts_gzip in (False, True):
                    reply = responder.answer(host, path, accepts_gzip)
                    h.update(f"{host} {path} {reply.status} {reply.headers}".encode())
                    h.update(reply.body)
    return h.hexdigest()


@pytest.mark.parametrize(
    ("args", "wanted"),
    [
        # Computed with the test web of commit ac7e92c, before the freshness features.
        ((12, 12, 3), "98a788feb58fb44f3cc79d8d71f3426f326ba4ba63d2d753aaf5cc6118aa8faf"),
        ((12, 8, 7), "09cd4535a3f02d78beb367ddd03cb84b8280186104991a7c41461150583ad1c1"),
    ],
)
def test_default_web_answers_exactly_as_before(args: tuple[int, int, int], wanted: str) -> None:
    assert digest(build_web(*args)) == wanted


def test_default_demo_web_fetches_exactly_as_before() -> None:
    fetches = sorted(build_web(60, 20, 1).expected_fetches(8000))
    got = hashlib.sha256(repr(fetches).encode()).hexdigest()
    # Computed with the test web of commit ac7e92c, before the freshness features.
    assert got == "76a21eb5ded90de0780f45eabe82181b8d9ce09e9ad5594c0ba68da6320ac478"


def test_freshness_only_adds_to_the_base_web() -> None:
    base = build_web(SITES, PAGES, SEED)
    web = build_web(SITES, PAGES, SEED, freshness=True)
    assert web == build_web(SITES, PAGES, SEED, freshness=True)  # deterministic
    assert web.seed_domains == base.seed_domains
    assert web.hosts_lines() == base.hosts_lines()
    for old, new in zip(base.sites, web.sites, strict=True):
        assert (old.robots, old.gzip) == (new.robots, new.gzip)
        assert set(old.pages) <= set(new.pages)
    assert base.expected_fetches(8000) < web.expected_fetches(8000)
    with pytest.raises(ValueError, match="freshness=True"):
        base.freshness()
    with pytest.raises(ValueError, match="freshness needs"):
        build_web(11, 8, freshness=True)


# --- live and static pages, conditional requests -----------------------------------------


def test_changing_page_differs_on_every_get(proc: TestWebProcess) -> None:
    spec = proc.web.freshness()
    assert len(spec.changing_urls) >= 2
    for key in sorted(spec.changing_urls):
        first_status, first, first_body = fetch(proc, *key)
        assert first_status == 200
        # A conditional refetch with the ETag just received still gets a new page.
        status, second, second_body = fetch(proc, *key, {"If-None-Match": first["ETag"]})
        assert status == 200
        assert second_body != first_body
        assert second["ETag"] != first["ETag"]
        assert first["Last-Modified"] is None  # no validator that could match later
        assert b"Live update number" in second_body
        distance = hamming(text_fingerprint(first_body), text_fingerprint(second_body))
        assert distance > 3, key  # not a near-copy of itself: the text changed


def test_live_pages_are_linked_from_home_like_static_ones(proc: TestWebProcess) -> None:
    web = proc.web
    spec = web.freshness()
    links = in_links(web)
    for host, path in spec.changing_urls | spec.static_urls:
        site = web.site_of(host)
        assert site is not None
        assert (site.apex, "/") in links[(host, path)]
    assert {web.site_of(h) for h, _ in spec.changing_urls} == {
        web.site_of(h) for h, _ in spec.static_urls
    }
    assert all(web.page(*key).kind is PageKind.LIVE for key in spec.changing_urls)  # type: ignore[union-attr]


def test_static_page_is_stable_and_carries_validators(proc: TestWebProcess) -> None:
    key = sorted(proc.web.freshness().static_urls)[0]
    status, headers, body = fetch(proc, *key)
    assert status == 200
    assert headers["ETag"].startswith('"')
    assert headers["Last-Modified"] == "Mon, 01 Jan 2024 00:00:00 GMT"
    assert fetch(proc, *key)[2] == body


def etag_of(proc: TestWebProcess, key: Key) -> str:
    return str(fetch(proc, *key)[1]["ETag"])


@pytest.mark.parametrize(
    ("spell", "status"),
    [
        (lambda tag: tag, 304),
        (lambda tag: f"W/{tag}", 304),  # weak comparison (RFC 9110 §13.1.2)
        (lambda tag: f'W/"x", {tag}', 304),
        (lambda tag: f'"a,b", {tag} , "c"', 304),  # a comma inside a tag is not a separator
        (lambda _: "*", 304),
        (lambda tag: f'"{tag.strip(chr(34))}-other"', 200),
        (lambda tag: tag.strip('"'), 200),  # unquoted: not an entity tag
    ],
)
def test_if_none_match(proc: TestWebProcess, spell: Callable[[str], str], status: int) -> None:
    key = sorted(proc.web.freshness().static_urls)[0]
    etag = etag_of(proc, key)
    got, headers, body = fetch(proc, *key, {"If-None-Match": spell(etag)})
    assert got == status
    if status == 304:
        assert body == b""
        assert headers["ETag"] == etag
        assert headers["Content-Type"] is None  # a 304 sends validators only (§15.4.5)
    else:
        assert len(body) > 1000


@pytest.mark.parametrize(
    ("since", "status"),
    [
        ("Mon, 01 Jan 2024 00:00:00 GMT", 304),
        ("Tue, 02 Jan 2024 00:00:00 GMT", 304),
        ("Sunday, 31-Dec-23 23:59:59 GMT", 200),  # RFC 850 form, a second too early
        ("not a date", 200),
    ],
)
def test_if_modified_since(proc: TestWebProcess, since: str, status: int) -> None:
    key = sorted(proc.web.freshness().static_urls)[-1]
    got, _, body = fetch(proc, *key, {"If-Modified-Since": since})
    assert (got, body == b"") == (status, status == 304)


def test_if_none_match_takes_precedence_over_if_modified_since(proc: TestWebProcess) -> None:
    key = sorted(proc.web.freshness().static_urls)[0]
    now = formatdate(time.time(), usegmt=True)
    headers = {"If-None-Match": '"stale"', "If-Modified-Since": now}
    assert fetch(proc, *key, headers)[0] == 200
    headers = {"If-None-Match": etag_of(proc, key), "If-Modified-Since": "garbage"}
    assert fetch(proc, *key, headers)[0] == 304


def test_conditions_apply_only_to_success(proc: TestWebProcess) -> None:
    site = proc.web.site_of(sorted(proc.web.freshness().static_urls)[0][0])
    assert site is not None
    assert fetch(proc, site.apex, "/no/such.html", {"If-None-Match": "*"})[0] == 404
    assert fetch(proc, site.apex, "/old/1.html", {"If-None-Match": "*"})[0] == 301


def test_304_is_logged_with_the_request_conditions(proc: TestWebProcess) -> None:
    host, path = sorted(proc.web.freshness().static_urls)[1]
    etag = etag_of(proc, (host, path))
    marked = f"{path}?mark=conditional-log"
    since = "Mon, 01 Jan 2024 00:00:00 GMT"
    began_at = time.time()
    fetch(proc, host, marked, {"If-None-Match": etag, "If-Modified-Since": since})
    deadline = time.monotonic() + 2.0
    while True:
        found = [r for r in proc.requests() if r.path == marked and r.t_start >= began_at]
        if found or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert len(found) == 1
    record = found[0]
    assert (record.status, record.body_bytes) == (304, 0)
    assert (record.if_none_match, record.if_modified_since) == (etag, since)
    plain = [r for r in proc.requests() if r.path == "/robots.txt"]
    assert all(r.if_none_match is None and r.if_modified_since is None for r in plain)


# --- sitemaps ---------------------------------------------------------------------------


def locs(body: bytes, item: str) -> list[tuple[str, str | None]]:
    """(loc, lastmod) of each `<url>` or `<sitemap>` of a sitemap document."""
    root = ElementTree.fromstring(body)
    return [
        (el.findtext("sm:loc", namespaces=NS) or "", el.findtext("sm:lastmod", namespaces=NS))
        for el in root.findall(f"sm:{item}", NS)
    ]


def key_of(url: str) -> Key:
    parts = urlsplit(url)
    return (parts.hostname or "", parts.path)


def test_robots_txt_names_sitemaps_with_absolute_urls(proc: TestWebProcess) -> None:
    spec = proc.web.freshness()
    assert {path for _, path in spec.robots_sitemaps} == {"/sitemap_index.xml", "/sitemap.xml"}
    for host, path in spec.robots_sitemaps:
        status, _, body = fetch(proc, host, "/robots.txt")
        assert status == 200
        rules = Protego.parse(body.decode())
        assert list(rules.sitemaps) == [f"http://{host}:{proc.port}{path}"]
        assert rules.can_fetch(f"http://{host}:{proc.port}/hidden/1.html", "trawl")
    for host, path in spec.unnamed_sitemaps:
        status, _, body = fetch(proc, host, "/robots.txt")
        assert status == 404 or b"Sitemap" not in body
        assert fetch(proc, host, path)[0] == 200


def read_sitemaps(proc: TestWebProcess) -> dict[Key, list[tuple[str, str | None]]]:
    """Every urlset reachable from robots.txt and /sitemap.xml: file -> its url entries."""
    spec = proc.web.freshness()
    todo = sorted(spec.robots_sitemaps | spec.unnamed_sitemaps)
    found: dict[Key, list[tuple[str, str | None]]] = {}
    while todo:
        key = todo.pop()
        status, headers, body = fetch(proc, *key, {"Accept-Encoding": "identity"})
        assert status == 200, key
        if key[1].endswith(".gz"):
            assert headers["Content-Type"] in ("application/gzip", "application/x-gzip")
            assert headers["Content-Encoding"] is None
            body = gzip.decompress(body)
        else:
            assert headers["Content-Type"] == "application/xml"
        root = ElementTree.fromstring(body).tag
        if root == f"{{{NS['sm']}}}sitemapindex":
            todo += [key_of(loc) for loc, _ in locs(body, "sitemap")]
        else:
            assert root == f"{{{NS['sm']}}}urlset"
            found[key] = locs(body, "url")
    return found


def test_sitemap_index_gz_child_and_urlsets(proc: TestWebProcess) -> None:
    web = proc.web
    spec = web.freshness()
    urlsets = read_sitemaps(proc)
    assert any(path.endswith(".xml.gz") for _, path in urlsets)
    assert set(urlsets) | {k for k in spec.sitemap_files if "index" in k[1]} == set(
        spec.sitemap_files
    )
    listed: set[Key] = set()
    foreign: set[Key] = set()
    for (host, _), entries in urlsets.items():
        site = web.site_of(host)
        assert site is not None
        for loc, lastmod in entries:
            assert loc.startswith("http://")
            assert f":{proc.port}/" in loc
            target = key_of(loc)
            if target[0] in site.hosts:
                listed.add(target)
                assert lastmod is not None
                if target in spec.lastmod_now:  # the time of this request
                    stamp = parse_lastmod(lastmod)
                    assert stamp is not None
                    assert abs(stamp - time.time()) < 60
                else:
                    assert lastmod.startswith("2024-")
            else:
                foreign.add(target)
    assert spec.sitemap_only <= listed
    assert foreign == set(spec.foreign_sitemap_entries)
    for key in listed | foreign:
        assert fetch(proc, *key)[0] == 200  # a crawler that follows the foreign one is caught


def test_sitemap_only_pages_are_linked_from_nowhere(proc: TestWebProcess) -> None:
    web = proc.web
    spec = web.freshness()
    links = in_links(web)
    assert len(spec.sitemap_only) >= 5
    for key in spec.sitemap_only | spec.foreign_sitemap_entries:
        assert key not in links
    plain = web.expected_fetches(proc.port)
    with_sitemaps = web.expected_fetches_with_sitemaps(proc.port)
    assert plain < with_sitemaps
    added = with_sitemaps - plain
    assert spec.sitemap_only <= added
    # ... and what only they link to
    assert {path for _, path in added - spec.sitemap_only} == {"/archive/1.html"}
    assert not (spec.foreign_sitemap_entries & with_sitemaps)


def test_sitemaps_sit_on_sites_a_crawl_may_read(proc: TestWebProcess) -> None:
    web = proc.web
    spec = web.freshness()
    reached = web.expected_robots(proc.port)
    allowed = {RobotsVariant.ALLOW_ALL, RobotsVariant.DISALLOW_PRIVATE, RobotsVariant.MISSING}
    allowed.add(RobotsVariant.AGENT_ALLOWED)
    for host, _ in spec.sitemap_files:
        site = web.site_of(host)
        assert site is not None
        assert host in reached
        assert site.robots in allowed


# --- exact and near copies ----------------------------------------------------------------


def test_exact_copies_are_byte_identical(proc: TestWebProcess) -> None:
    web = proc.web
    group, shared = web.freshness().copy_groups
    assert len(group) >= 3
    assert len({web.site_of(host) for host, _ in group}) == 1
    assert len({web.site_of(host) for host, _ in shared}) == len(shared) == 3
    for copies in (group, shared):
        bodies = {body_of(proc, key) for key in copies}
        assert len(bodies) == 1
        etags = {fetch(proc, *key, {"Accept-Encoding": "gzip"})[1]["ETag"] for key in copies}
        assert len(etags) == 1
    order = web.breadth_first_order(proc.port)
    assert min(group, key=order.index) == group[0]


def test_near_copies_share_their_text_not_their_bytes(proc: TestWebProcess) -> None:
    web = proc.web
    (group,) = web.freshness().near_copy_groups
    assert 3 <= len(group) - 1 <= 4
    assert len({web.site_of(host) for host, _ in group}) == len(group)
    bodies = [body_of(proc, key) for key in group]
    assert len(set(bodies)) == len(bodies)
    prints = [text_fingerprint(body) for body in bodies]
    assert max(hamming(prints[0], other) for other in prints[1:]) <= 3
    assert min(len(body) for body in bodies) > 5000  # ~500 words of article
    order = web.breadth_first_order(proc.port)
    assert group[0][0] == web.seed_domains[0]
    assert min(group, key=order.index) == group[0]


def test_normal_pages_are_not_near_copies() -> None:
    web = build_web(SITES, PAGES, SEED, freshness=True)
    spec = web.freshness()
    copies = {key for group in spec.copy_groups + spec.near_copy_groups for key in group[1:]}
    responder = Responder(web, 8000)
    prints = {
        key: text_fingerprint(responder.answer(*key, accepts_gzip=False).body)
        for site in web.sites
        for key, page in site.pages.items()
        if page.kind is PageKind.HTML and key not in copies
    }
    assert len(prints) > 150
    closest = min(hamming(a, b) for a, b in itertools.combinations(prints.values(), 2))
    assert closest > 3


# --- popular pages ------------------------------------------------------------------------


def test_popular_pages_are_linked_from_many_sites(proc: TestWebProcess) -> None:
    web = proc.web
    spec = web.freshness()
    links = in_links(web)
    fetched = web.expected_fetches(proc.port)
    assert len(spec.popular) >= 2
    for key in spec.popular:
        linking = {web.site_of(host) for host, _ in links[key] & fetched}
        assert len(linking - {web.site_of(key[0])}) >= 10
    for key in spec.deep_leaves:
        assert len(links[key]) == 1
    assert spec.popular | spec.deep_leaves <= fetched


def test_deep_leaves_match_the_popular_pages_depth(proc: TestWebProcess) -> None:
    web = proc.web
    spec = web.freshness()
    for host, path in spec.popular:
        site = web.site_of(host)
        assert site is not None
        depths = site_depths(web, site.domain)
        assert depths[(host, path)] >= 2
        leaves = {key for key in spec.deep_leaves if key[0] in site.hosts}
        assert len(leaves) >= 2
        assert {depths[key] for key in leaves} == {depths[(host, path)]}
