"""The link extractor on good, broken and hostile pages."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trawl.model import ParsedPage
from trawl.parse.links import extract_links

PAGE = "http://example.com/dir/page.html"


def _page(body: str, head: str = "") -> bytes:
    return f"<!DOCTYPE html><html><head>{head}</head><body>{body}</body></html>".encode()


def test_each_link_source() -> None:
    html = _page(
        body=(
            '<a href="/a">a</a>'
            '<map name=m><area href="area.html" alt=x></map>'
            '<iframe src="https://frames.example/f"></iframe>'
        ),
        head=(
            '<link rel="next" href="?page=2">'
            '<link rel="PREV" href="?page=0">'
            '<link rel="alternate" hreflang="de" href="/de/page.html">'
            '<link rel="stylesheet" href="/site.css">'
            '<link rel="icon" href="/favicon.ico">'
        ),
    )
    page = extract_links(html, PAGE)
    assert page == ParsedPage(
        hrefs=(
            "?page=2",
            "?page=0",
            "/de/page.html",
            "/a",
            "area.html",
            "https://frames.example/f",
        ),
        base_url=PAGE,
    )


def test_frames_in_a_frameset() -> None:
    html = b'<html><frameset><frame src="left.html"><frame src="right.html"></frameset></html>'
    assert extract_links(html, PAGE).hrefs == ("left.html", "right.html")


def test_hrefs_are_stripped_deduplicated_and_fragments_only_dropped() -> None:
    html = _page('<a href="  /x \n">1</a><a href="/x">2</a><a href="#top">3</a>'
                 '<a href="">4</a><a href>5</a><a>6</a><a href="/y#frag">7</a>'
                 '<a href="mailto:a@example.com">8</a>')  # fmt: skip
    assert extract_links(html, PAGE).hrefs == ("/x", "/y#frag", "mailto:a@example.com")


def test_base_href_is_resolved_against_the_page_and_first_one_wins() -> None:
    head = '<base href="../other/"><base href="http://ignored.example/">'
    page = extract_links(_page('<a href="x">x</a>', head), PAGE)
    assert page.base_url == "http://example.com/other/"
    assert page.hrefs == ("x",)


@pytest.mark.parametrize("base", ["javascript:alert(1)", "", "   ", "mailto:x@y", "http://[::1"])
def test_unusable_base_href_falls_back_to_page_url(base: str) -> None:
    page = extract_links(_page("", f'<base href="{base}">'), PAGE)
    assert page.base_url == PAGE


@pytest.mark.parametrize(
    ("meta", "noindex", "nofollow"),
    [
        ('<meta name="robots" content="noindex,nofollow">', True, True),
        ('<meta name="ROBOTS" content="NOINDEX">', True, False),
        ('<meta name="robots" content="none">', True, True),
        ('<meta name="trawl" content="nofollow">', False, True),
        ('<meta name="googlebot" content="noindex,nofollow">', False, False),
        ('<meta name="robots" content="index,follow">', False, False),
        ('<meta name="robots">', False, False),
        (
            '<meta name="robots" content="noindex"><meta name="trawl" content="nofollow">',
            True,
            True,
        ),
    ],
)
def test_meta_robots(meta: str, noindex: bool, nofollow: bool) -> None:
    page = extract_links(_page('<a href="/kept">k</a>', meta), PAGE)
    assert (page.noindex, page.nofollow) == (noindex, nofollow)
    assert page.hrefs == ("/kept",)  # the caller decides what nofollow means


def test_meta_for_a_custom_agent_token() -> None:
    html = _page("", '<meta name="MyBot" content="noindex">')
    assert extract_links(html, PAGE, agent_token="mybot").noindex
    assert not extract_links(html, PAGE).noindex


@pytest.mark.parametrize(
    ("html", "hrefs"),
    [
        (b"", ()),
        (b"<a href=", ()),
        (b"<a href='/cut", ()),
        (b"<a href=/one>one<a href=/two", ("/one",)),
        (b"<p><a href=/a><p><a href=/b>", ("/a", "/b")),
        (b"<table><a href=/t1><tr><td><a href=/t2>", ("/t1", "/t2")),
        (b"<a href='/x'<b>y</a>", ("/x",)),
        (b"<!-- <a href=/comment> --><a href=/real>", ("/real",)),
        (b"<script>var s = '<a href=/script>';</script><a href=/ok>", ("/ok",)),
        (b"</html><a href=/after-end>", ("/after-end",)),
        (b"<A HREF=/upper>", ("/upper",)),
    ],
)
def test_broken_and_truncated_markup(html: bytes, hrefs: tuple[str, ...]) -> None:
    assert extract_links(html, PAGE).hrefs == hrefs


def test_latin1_bytes_declared_utf8() -> None:
    html = '<meta charset="utf-8"><a href="/caf\u00e9">x</a>'.encode("latin-1")
    assert extract_links(html, PAGE).hrefs == ("/caf\u00e9",)


def test_declared_charset_is_used_when_bytes_are_not_utf8() -> None:
    html = '<meta charset="shift_jis"><a href="/\u30c6\u30b9\u30c8">x</a>'.encode("shift_jis")
    assert extract_links(html, PAGE).hrefs == ("/\u30c6\u30b9\u30c8",)


def test_utf8_bytes_declared_latin1_stay_utf8() -> None:
    html = '<meta charset="iso-8859-1"><a href="/\u00fcber">x</a>'.encode()
    assert extract_links(html, PAGE).hrefs == ("/\u00fcber",)


def test_unknown_charset_and_binary_junk() -> None:
    html = b'<meta charset="x-no-such-codec">\xff\xfe\x00\x81<a href="/j\x9d">\x00\x00'
    assert extract_links(html, PAGE).hrefs == ("/j\ufffd",)


def test_nul_bytes_and_utf16_bom() -> None:
    assert extract_links(b"\x00" * 1000, PAGE).hrefs == ()
    assert extract_links("<a href=/u>".encode("utf-16"), PAGE).base_url == PAGE


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_never_raise(html: bytes) -> None:
    page = extract_links(html, PAGE)
    assert all(href and not href.startswith("#") for href in page.hrefs)
    assert page.base_url == PAGE  # no <base href> can be spelled by chance


_TAGS = st.sampled_from(
    ["<a href=", "<a href='", '<a href="', "<base href=", "<meta name=robots content=",
     "<link rel=next href=", "<iframe src=", "</a>", "<p>", "<!--", "-->", "<script>", ">",
     "/x", "#f", "http://h.example/", "\u00e9", "\x00", "\xff", "'", '"', " "]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_TAGS, max_size=40), st.sampled_from(["utf-8", "latin-1", "utf-16"]))
def test_tag_soup_never_raises(pieces: list[str], encoding: str) -> None:
    html = "".join(pieces).encode(encoding, errors="replace")
    page = extract_links(html, PAGE)
    assert page.base_url.startswith("http")
    assert len(set(page.hrefs)) == len(page.hrefs)


def test_max_links_keeps_the_first_distinct_hrefs_and_counts_the_rest() -> None:
    body = "".join(f'<a href="/{i % 7}">x</a>' for i in range(20))  # 7 distinct, repeated
    body += '<meta name="robots" content="nofollow">'  # after the cap's last link: still read
    page = extract_links(_page(body), PAGE, max_links=3)
    assert page.hrefs == ("/0", "/1", "/2")
    assert page.links_dropped == 4
    assert page.nofollow
    assert extract_links(_page(body), PAGE, max_links=7).links_dropped == 0
    assert extract_links(_page(body), PAGE).hrefs == tuple(f"/{i}" for i in range(7))


@given(st.lists(st.integers(0, 30), max_size=60), st.integers(1, 40))
def test_max_links_is_a_prefix_of_the_uncapped_links(targets: list[int], cap: int) -> None:
    html = _page("".join(f'<a href="/p{t}">x</a>' for t in targets))
    whole = extract_links(html, PAGE).hrefs
    capped = extract_links(html, PAGE, max_links=cap)
    assert capped.hrefs == whole[:cap]
    assert capped.links_dropped == len(whole) - len(capped.hrefs)
