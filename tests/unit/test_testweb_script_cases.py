"""The test web's script-built cases (issue 18), built without a server.

What the pages say to a plain fetch (the render detector's answer on each), which URLs
only rendering reaches, and that the flag leaves the rest of the web as it was.
"""

from __future__ import annotations

import json
import re

import pytest

from trawl.parse.fingerprint import main_text_fingerprint
from trawl.parse.links import parse_html
from trawl.parse.render_need import RenderReason, render_reason
from trawl.testweb.layout import PageKind
from trawl.testweb.script_cases import MIN_SITES
from trawl.testweb.script_pages import APP_SHELL
from trawl.testweb.sites import TestWeb, build_web

SITES, PAGES, SEED, PORT = 12, 8, 7, 8000
Key = tuple[str, str]


@pytest.fixture(scope="module")
def web() -> TestWeb:
    return build_web(SITES, PAGES, SEED, script_cases=True)


def body(web: TestWeb, key: Key) -> bytes:
    site = web.site_of(key[0])
    assert site is not None, key
    return site.files[key].body_at(PORT)


def reason(html: bytes) -> RenderReason | None:
    _, tokens = main_text_fingerprint(html)
    return render_reason(parse_html(html), tokens)


def plain_targets(web: TestWeb) -> set[Key]:
    return {(link.host, link.path) for s in web.sites for p in s.pages.values() for link in p.links}


def test_the_cases_need_three_sites() -> None:
    assert MIN_SITES == 3
    with pytest.raises(ValueError, match="script_cases needs >= 3 sites, got 2"):
        build_web(2, 8, script_cases=True)
    build_web(3, 8, script_cases=True).script_cases()


def test_without_the_flag_there_are_no_cases() -> None:
    with pytest.raises(ValueError, match="without script_cases=True"):
        build_web(SITES, PAGES, SEED).script_cases()


def test_same_arguments_same_web(web: TestWeb) -> None:
    again = build_web(SITES, PAGES, SEED, script_cases=True)
    assert again.script_cases() == web.script_cases()
    assert [s.files for s in again.sites] == [s.files for s in web.sites]
    assert [s.pages for s in again.sites] == [s.pages for s in web.sites]


def test_the_rest_of_the_web_is_as_without_the_flag(web: TestWeb) -> None:
    base = build_web(SITES, PAGES, SEED)
    cases = web.script_cases()
    assert web.seed_domains == base.seed_domains
    assert web.sites[: len(base.sites)] != base.sites  # three home pages gained links
    for old, new in zip(base.sites, web.sites, strict=False):
        assert (new.domain, new.hosts, new.ips, new.robots) == (
            old.domain,
            old.hosts,
            old.ips,
            old.robots,
        )
        for key, page in old.pages.items():
            if key in cases.linked_from:
                assert new.pages[key].links[: len(page.links)] == page.links
            else:
                assert new.pages[key] == page, key
    added = [s.domain for s in web.sites[len(base.sites) :]]
    assert added == [cases.app_site, cases.foreign_site]
    assert base.expected_fetches(PORT) <= web.expected_fetches(PORT)


@pytest.mark.parametrize(
    "flags", [{"hostile": True}, {"freshness": True}, {"robots_cases": True}, {"scope_cases": True}]
)
def test_the_cases_combine_with_the_other_flags(flags: dict[str, bool]) -> None:
    web = build_web(SITES, PAGES, SEED, script_cases=True, **flags)
    cases = web.script_cases()
    assert set(cases.render_urls) | set(cases.no_render_urls) <= web.expected_fetches(PORT)


def test_every_app_page_is_the_same_shell(web: TestWeb) -> None:
    cases = web.script_cases()
    assert len(cases.app_pages) >= 6
    for key in cases.app_pages:
        assert body(web, key) == APP_SHELL.encode()
        assert web.page(*key) is not None
    app = web.site_of(cases.app_site)
    assert app is not None
    html_files = [k for k, f in app.files.items() if f.content_type.startswith("text/html")]
    assert sorted(html_files) == sorted(cases.app_pages)


def test_shells_are_render_candidates(web: TestWeb) -> None:
    cases = web.script_cases()
    for key in (*cases.render_urls, *cases.render_only_urls, *cases.never_settles_urls):
        assert reason(body(web, key)) is RenderReason.EMPTY_MOUNT, key
    assert b'<div id="app"></div>' in body(web, cases.vue_page)


def test_server_rendered_and_login_pages_are_not(web: TestWeb) -> None:
    cases = web.script_cases()
    kinds = [b'id="__next"', b'id="__nuxt"', b"data-reactroot", b"<form"]
    for key, marker in zip(cases.no_render_urls, kinds, strict=True):
        html = body(web, key)
        assert marker in html, key
        assert reason(html) is None, key
    next_html = body(web, cases.no_render_urls[0]).decode()
    data = re.search(
        r'<script id="__NEXT_DATA__" type="application/json">(.*?)</script>', next_html
    )
    assert data is not None
    assert json.loads(data.group(1))["page"] == "/stories/[slug]"
    assert "window.__NUXT__=" in body(web, cases.no_render_urls[1]).decode()
    login = body(web, cases.no_render_urls[3]).decode().lower()
    assert "javascript" not in login
    assert "<script" not in login
    assert 'id="root"' not in login


def test_render_only_pages_are_linked_only_from_rendered_pages(web: TestWeb) -> None:
    cases = web.script_cases()
    rendered = {t for targets in cases.rendered_links.values() for t in targets}
    plain = plain_targets(web)
    assert set(cases.render_only_urls) <= rendered
    assert not set(cases.render_only_urls) & plain
    plain_crawl = web.expected_fetches(PORT)
    rendering_crawl = web.expected_fetches_with_rendering(PORT)
    assert not plain_crawl & set(cases.render_only_urls)
    assert set(cases.render_only_urls) <= rendering_crawl
    assert rendering_crawl - plain_crawl == set(cases.render_only_urls)


def test_the_app_bundle_holds_each_pages_text_and_links(web: TestWeb) -> None:
    cases = web.script_cases()
    bundle = body(web, cases.app_bundle).decode()
    routes = json.loads(bundle.split("var ROUTES = ", 1)[1].split(";\n", 1)[0])
    notes = [k for k in cases.app_pages if k[1].startswith("/notes/")]
    assert sorted(routes) == sorted(p for _, p in cases.app_pages if not p.startswith("/notes/"))
    for key, api in zip(notes, cases.api_urls, strict=True):
        assert api == (cases.app_site, f"/api{key[1]}.json")
        view = json.loads(body(web, api))
        assert view["title"]
        assert len(view["paragraphs"]) >= 3
    for path, view in routes.items():
        hrefs = {href for href, _ in view["links"]}
        same_site = {
            t[1] for t in cases.rendered_links[(cases.app_site, path)] if t[0] == cases.app_site
        }
        assert hrefs - {f"http://{web.seed_domains[0]}:{PORT}/"} <= same_site
        assert sum(len(p.split()) for p in view["paragraphs"]) >= 50  # a few paragraphs of prose


def test_the_foreign_site_is_linked_by_no_anchor(web: TestWeb) -> None:
    cases = web.script_cases()
    assert cases.foreign_site not in {host for host, _ in plain_targets(web)}
    assert cases.foreign_site not in {host for host, _ in web.expected_fetches_with_rendering(PORT)}
    html = body(web, cases.foreign_page).decode()
    script = next(k for k in cases.scripts if k[0] == cases.foreign_page[0] and "widgets" in k[1])
    loaded = html + body(web, script).decode()
    for host, path in cases.foreign_urls:
        if path != "/img/pixel.gif":  # asked for by the foreign script itself
            assert f"http://{host}:{PORT}{path}" in loaded, path
    assert f"{cases.foreign_site}:{PORT}/img/pixel.gif" in body(web, cases.foreign_urls[0]).decode()


def test_the_never_settling_page_keeps_timers_a_socket_and_polling(web: TestWeb) -> None:
    cases = web.script_cases()
    (ticker,) = cases.never_settles_urls
    script = next(k for k in cases.scripts if k[0] == ticker[0] and "ticker" in k[1])
    code = body(web, script).decode()
    assert "setInterval(" in code
    assert "new WebSocket(" in code
    assert "fetch(" in code
    assert cases.websocket_url[1] in code
    assert cases.poll_url[1] in code
    site = web.site_of(ticker[0])
    assert site is not None
    assert cases.websocket_url not in site.files
    assert cases.websocket_url not in site.pages


def test_every_case_is_linked_from_the_first_seed_and_allowed(web: TestWeb) -> None:
    cases = web.script_cases()
    first_home = (web.seed_domains[0], "/")
    assert cases.linked_from[0] == first_home
    page = web.page(*first_home)
    assert page is not None
    linked = {(link.host, link.path) for link in page.links}
    every = (*cases.render_urls, *cases.no_render_urls)
    assert set(every) <= linked
    for key in (
        *every,
        *cases.render_only_urls,
        *cases.scripts,
        *cases.api_urls,
        *cases.foreign_urls,
    ):
        assert web.is_allowed(*key, PORT), key
    for key in every:
        case_page = web.page(*key)
        assert case_page is not None
        assert case_page.kind is PageKind.FRAMEWORK
