"""The link memo: its keys never change an answer, and it gives the plain loop's output."""

from __future__ import annotations

from typing import NamedTuple

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from trawl.errors import InvalidUrl
from trawl.urls.link_memo import LinkMemo, LinkMemoStats
from trawl.urls.normalise import (
    BaseNeed,
    base_need,
    base_scopes,
    normalise_url,
    url_hash,
    without_fragment,
)
from trawl.urls.registered_domain import site_of_normalised


class Link(NamedTuple):
    url: str
    url_hash: str
    site: str


def _outcome(href: str, base: str) -> str:
    try:
        return normalise_url(href, base)
    except InvalidUrl:
        return "<invalid>"


def _plain_links(hrefs: list[str], base: str) -> tuple[list[Link], int]:
    """normalise_links as it was before the memo (commit d985f65)."""
    seen: set[str] = set()
    out: list[Link] = []
    bad = 0
    for href in hrefs:
        try:
            url = normalise_url(href, base)
            site = site_of_normalised(url)
        except (InvalidUrl, ValueError):
            bad += 1
            continue
        if url in seen:
            continue
        seen.add(url)
        out.append(Link(url, url_hash(url), site))
    return out, bad


# Characters that move the parser's decisions: delimiters, cleaning, escapes, dots, colons.
_TRICKY = st.text(alphabet="ab/\\?#:.;%\t\n @[]Aé0", max_size=12)
_HREFS = st.one_of(
    _TRICKY,
    st.tuples(
        st.sampled_from(
            [
                *("", "/", "//", "./", "../", "http://", "https://", "HTTP://", "http:"),
                *("HTTPS:", "mailto:", "Tel:", "h\tttp:", "a1+.-:", "1a:", "ftp://", "é:"),
            ]
        ),
        _TRICKY,
    ).map("".join),
    st.text(max_size=12),
)
_HOSTS = st.sampled_from(["h", "H.example", "[::1]", "h:8080", "u@h", "é.de", "h:x", ""])
_PATHS = st.text(alphabet="ab/.;%?#:\\é", max_size=10)
_BASES = st.one_of(
    st.builds(
        lambda s, h, p: f"{s}://{h}{p}", st.sampled_from(["http", "https", "ftp"]), _HOSTS, _PATHS
    ),
    st.text(max_size=10),
)


@settings(max_examples=2000, deadline=None)
@given(_HREFS, _BASES, _PATHS)
def test_bases_that_share_what_an_href_needs_give_the_same_answer(
    href: str, base: str, rest: str
) -> None:
    """The memo's soundness: only the part of the base named by base_need changes answers."""
    need = base_need(href)
    assume(need is not BaseNeed.WHOLE)
    if need is BaseNeed.NOTHING:
        other = rest  # any text at all, even no URL
    else:
        try:
            scopes = base_scopes(base)
        except InvalidUrl:
            return
        # Keep the needed part of `base`, put anything after it.
        kept = scopes[need - 1]
        other = kept + ("/" if need is BaseNeed.ORIGIN else "") + rest
        assume(base_scopes(other)[need - 1] == kept)
    assert _outcome(href, base) == _outcome(href, other)


@settings(max_examples=1000, deadline=None)
@given(st.tuples(_HREFS, st.sampled_from(["", "#", "#f", "#a:b", "# ", "#?q", "#/x"])), _BASES)
def test_a_cut_fragment_never_changes_the_answer(parts: tuple[str, str], base: str) -> None:
    href = "".join(parts)
    assert _outcome(without_fragment(href), base) == _outcome(href, base)


@pytest.mark.parametrize(
    ("href", "cut"),
    [
        ("a.html#top", "a.html"),
        ("/#s1", "/"),
        ("http://h/x#y#z", "http://h/x"),
        ("#top", "#top"),  # keeps the base's query: not the same as ""
        ("a #top", "a #top"),  # "a%20", but "a " would be stripped to "a"
        ("a\t#top", "a\t#top"),
        ("a" * 8192 + "#" + "f" * 10, "a" * 8192 + "#" + "f" * 10),  # over 4 x max_length
    ],
)
def test_without_fragment_examples(href: str, cut: str) -> None:
    assert without_fragment(href) == cut


@pytest.mark.parametrize(
    ("href", "need"),
    [
        ("http://h/x", BaseNeed.NOTHING),
        ("https://h", BaseNeed.NOTHING),
        ("http:///x", BaseNeed.NOTHING),  # no host: invalid against any base
        ("http://\t/h", BaseNeed.NOTHING),  # the tab goes, and the host with it
        ("http:/\t/h", BaseNeed.WHOLE),
        ("/x", BaseNeed.ORIGIN),
        ("/", BaseNeed.ORIGIN),
        ("//h/x", BaseNeed.ORIGIN),  # network-path: reads the scheme only
        ("/\\h", BaseNeed.ORIGIN),  # a backslash is a slash: network-path too
        ("/\t/h", BaseNeed.ORIGIN),  # the tab is dropped: network-path too
        ("x.html", BaseNeed.DIRECTORY),
        ("../x", BaseNeed.DIRECTORY),
        ("http:x", BaseNeed.WHOLE),  # relative to an http base, invalid against https
        ("HTTPS:x", BaseNeed.WHOLE),
        ("a:b", BaseNeed.NOTHING),  # another scheme: refused against any base
        ("mailto:x@y", BaseNeed.NOTHING),
        ("javascript:void(0)", BaseNeed.NOTHING),
        ("java\tscript:x", BaseNeed.WHOLE),  # the tab goes: the check does not guess
        ("1a:b", BaseNeed.WHOLE),  # no scheme (a digit first), ":" in a relative path
        ("?q", BaseNeed.WHOLE),
        ("#f", BaseNeed.WHOLE),
        ("", BaseNeed.WHOLE),
        (" x", BaseNeed.WHOLE),
    ],
)
def test_base_need_examples(href: str, need: BaseNeed) -> None:
    assert base_need(href) is need


def test_base_scopes_are_origin_and_directory_unnormalised() -> None:
    assert base_scopes("HTTP://H:80/a/b?q#f") == ("http://H:80", "http://H:80/a/")
    assert base_scopes("https://h") == ("https://h", "https://h/")
    with pytest.raises(InvalidUrl):
        base_scopes("ftp://h/")


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.tuples(st.lists(_HREFS, max_size=8), _BASES), max_size=6),
    st.integers(1, 3000),
    st.integers(1, 3),
    st.integers(0, 2),
)
def test_memo_gives_the_plain_loops_links_page_after_page(
    pages: list[tuple[list[str], str]], max_bytes: int, window: int, bypass: int
) -> None:
    """Whether the memo answers or is skipped for a while (short windows here, so that
    hypothesis reaches both)."""
    memo = LinkMemo(
        Link, max_bytes=max_bytes, window_pages=window, warm_windows=0, bypass_pages=bypass
    )
    for _ in range(2):  # the second round answers from the memo
        for hrefs, base in pages:
            assert memo.links(hrefs, base) == _plain_links(hrefs, base)
    # Each entry counts 120 bytes or more, and the memo is emptied before a page once full.
    assert memo.stats().entries <= max_bytes // 120 + max((len(h) for h, _ in pages), default=0)


def test_memo_answers_a_sites_navigation_once() -> None:
    memo = LinkMemo(Link)
    nav = ["/", "/about", "news/", "http://other.example/", "mailto:x@y"]
    for page in ("a.html", "b.html", "c/d.html"):
        links, bad = memo.links(nav, f"http://site.example/{page}")
        assert bad == 1
    assert [link.url for link in links] == [
        "http://site.example/",
        "http://site.example/about",
        "http://site.example/c/news/",
        "http://other.example/",
    ]
    # "/" and "/about" once for the site, "news/" once per directory, the absolute URL
    # and "mailto:" (refused whatever the base) once.
    assert memo.stats().misses == 2 + 2 + 1 + 1
    # 120 a key and its characters (48), 300 a distinct URL and its characters (118),
    # 200 a table (one origin, two directories) and its key's characters (19 + 20 + 22).
    assert repr(memo) == "<LinkMemo entries=6 bytes=3047/16000000 misses=6/15 bypassed=0>"


def test_hrefs_that_read_the_whole_base_are_kept_for_the_page_only() -> None:
    memo = LinkMemo(Link)
    for page in ("a?x=1", "a?x=2"):
        links, bad = memo.links(["?y=1", "?y=1", "", "http:b"], f"http://site.example/{page}")
        assert [link.url for link in links] == [
            "http://site.example/a?y=1",
            f"http://site.example/{page}",
            "http://site.example/b",
        ]
        assert bad == 0
    # Looked up once a page ("?y=1" twice); no key is kept, only the four URLs' links
    # (300 and 25 + 25 + 21 + 25 characters) and the tables for the origin and directory.
    tables = 200 + len("http://site.example") + 200 + len("http://site.example/")
    assert memo.stats() == LinkMemoStats(0, 4 * 300 + 96 + tables, lookups=8, misses=6)


def test_memo_is_bounded() -> None:
    memo = LinkMemo(Link, max_bytes=2500)
    for i in range(100):
        memo.links([f"/p{i}-{j}" for j in range(3)], "http://site.example/")
    # Emptied when a page starts with 2,500 bytes or more counted: at most 5 entries
    # (120 bytes a key, 300 a URL, and their characters) plus one page's three.
    assert memo.stats().entries <= 5 + 3
    assert memo.stats().lookups == 300


def _new_hrefs_pages(n: int, per_page: int = 4) -> list[tuple[list[str], str]]:
    """Pages whose hrefs are all new: a web too big for the memo."""
    return [
        ([f"http://s{i}.example/p{j}" for j in range(per_page)], f"http://b{i}.example/")
        for i in range(n)
    ]


def test_a_memo_that_misses_is_skipped_for_a_while_then_tried_again() -> None:
    memo = LinkMemo(Link, window_pages=2, warm_windows=1, bypass_pages=3)
    pages = _new_hrefs_pages(12)
    for n, (hrefs, base) in enumerate(pages, 1):
        assert memo.links(hrefs, base) == _plain_links(hrefs, base)
        if n == 4:  # a warm window (pages 1-2), then a judged one with no hit: skipped
            assert memo.stats().bypassed == 0
        if n == 7:  # pages 5-7 through the plain loop
            assert memo.stats().bypassed == 3 * 4
    # Pages 8-9 through the memo again, missing again; pages 10-12 plain.
    stats = memo.stats()
    assert (stats.lookups, stats.misses, stats.bypassed) == (6 * 4, 6 * 4, 6 * 4)


def test_a_memo_that_hits_is_never_skipped() -> None:
    memo = LinkMemo(Link, window_pages=2, warm_windows=0, bypass_pages=3)
    nav = ["/", "/about", "/news", "http://other.example/"]
    for n in range(20):
        memo.links(nav, f"http://site.example/p{n}")
    stats = memo.stats()
    assert stats.bypassed == 0
    assert stats.misses == len(nav)  # the first page's, then only hits


def test_hits_below_the_share_skip_the_memo_and_above_it_do_not() -> None:
    # Each page: `repeat` hrefs that hit after the first page, the rest new.
    def run(repeat: int) -> int:
        memo = LinkMemo(Link, window_pages=4, warm_windows=1, bypass_pages=100)
        for i in range(12):
            hrefs = [f"/nav{j}" for j in range(repeat)]
            hrefs += [f"http://s{i}.example/{j}" for j in range(10 - repeat)]
            memo.links(hrefs, "http://site.example/")
        return memo.stats().bypassed

    assert run(2) > 0  # 20 % of hrefs hit: under MIN_HIT_SHARE
    assert run(4) == 0  # 40 %
