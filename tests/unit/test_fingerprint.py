from __future__ import annotations

import random
import statistics
import time
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from resiliparse.parse.html import HTMLTree

from trawl.parse import fingerprint
from trawl.parse.fingerprint import (
    MIN_PROSE_TOKENS,
    format_simhash,
    hamming,
    main_text,
    main_text_fingerprint,
    simhash_of_text,
    text_fingerprint,
)
from trawl.parse.main_text import _blocks_text, main_blocks, prose, window_blocks

_VOCABULARY = [f"word{i}" for i in range(5000)]
EXPECTED_FOX = "1ad0837090563a37"  # pinned: a change breaks stored simhashes


def _page(seed: int, body_words: int = 400, extra: str = "") -> bytes:
    """A templated page: the same chrome around `body_words` words drawn from `seed`."""
    rng = random.Random(seed)
    text = " ".join(rng.choice(_VOCABULARY) for _ in range(body_words))
    return (
        "<!DOCTYPE html><html><head><title>Site</title><style>p{color:red}</style></head>"
        "<body><nav><a href=/>Home</a> <a href=/about>About us</a></nav>"
        "<script>var tracking = 'script text is not page text';</script>"
        f"<main><h1>Calendar</h1><p>{text}</p><p>{extra}</p></main>"
        "<footer>Copyright footer text</footer></body></html>"
    ).encode()


def test_pages_differing_by_one_number_are_within_three_bits() -> None:
    a = text_fingerprint(_page(1, extra="Events on 2026-11-30: none"))
    b = text_fingerprint(_page(1, extra="Events on 2026-12-01: none"))
    assert hamming(a, b) <= 3


def test_calendar_pages_of_one_template_are_within_three_bits() -> None:
    def calendar(month: int) -> bytes:
        days = " ".join(f"<td>{d}</td>" for d in range(1, 31))
        chrome = " ".join(_VOCABULARY[:300])
        return (
            f"<html><body><div>{chrome}</div><h1>Month {month} of 2026</h1>"
            f"<table><tr>{days}</tr></table><a href=?m={month + 1}>next</a></body></html>"
        ).encode()

    base = text_fingerprint(calendar(1))
    assert all(hamming(base, text_fingerprint(calendar(m))) <= 3 for m in range(2, 40))


def test_unrelated_pages_are_far_apart() -> None:
    prints = [text_fingerprint(_page(seed)) for seed in range(20)]
    distances = [hamming(a, b) for i, a in enumerate(prints) for b in prints[i + 1 :]]
    assert min(distances) > 10
    assert sum(distances) / len(distances) > 24  # about half of 64 bits


def test_script_style_nav_and_footer_are_not_text() -> None:
    bare = b"<html><body><main><h1>Calendar</h1><p>hello world</p></main></body></html>"
    chrome = (
        b"<html><body><nav>menu items</nav><script>var x = 1;</script><style>p{}</style>"
        b"<main><h1>Calendar</h1><p>hello world</p></main><footer>legal</footer></body></html>"
    )
    assert text_fingerprint(bare) == text_fingerprint(chrome)


def test_large_text_heavy_page_is_sampled_but_stable_and_close_to_its_twin() -> None:
    big = _page(7, body_words=20_000)
    twin = big.replace(b"word17 ", b"word18 ", 1)
    assert len(big) > 100_000
    assert text_fingerprint(big) == text_fingerprint(big)
    assert hamming(text_fingerprint(big), text_fingerprint(twin)) <= 3


def test_values_are_stable_across_calls_and_processes() -> None:
    # A fixed expected value: blake2b is the same everywhere, unlike hash().
    page = b"<html><body><p>The quick brown fox jumps over the lazy dog</p></body></html>"
    assert text_fingerprint(page) == text_fingerprint(page)
    assert format_simhash(text_fingerprint(page)) == EXPECTED_FOX


@pytest.mark.parametrize(
    "html",
    [
        b"",
        b"<html>",
        b"<body></body>",
        b"\x00\xff\xfe binary \x80\x81",
        b"<p>unclosed <b>tags <i>everywhere",
        b"<html><head><title>only a title</title></head></html>",
        "<p>caf\u00e9 \u00fcber na\u00efve</p>".encode("latin-1"),
        b"<script>only script</script>",
    ],
)
def test_broken_or_empty_html_does_not_raise(html: bytes) -> None:
    value = text_fingerprint(html)
    assert 0 <= value < 1 << 64


def test_pages_without_text_are_zero() -> None:
    assert text_fingerprint(b"") == 0
    assert text_fingerprint(b"<html><body><script>x()</script></body></html>") == 0


@given(st.binary(max_size=2000))
def test_any_bytes_give_a_64_bit_value(html: bytes) -> None:
    value = text_fingerprint(html)
    assert 0 <= value < 1 << 64
    assert len(format_simhash(value)) == 16


def test_hamming_and_format() -> None:
    assert hamming(0, 0) == 0
    assert hamming(0, (1 << 64) - 1) == 64
    assert hamming(0b1010, 0b0110) == 2
    assert format_simhash(0) == "0000000000000000"
    assert format_simhash(0xABC) == "0000000000000abc"
    assert format_simhash((1 << 64) - 1) == "ffffffffffffffff"


# -- main text ---------------------------------------------------------------------------
# A news article inside a site template: cookie banner, menus, most-read and related
# lists, inline "Read more" links and ads, comments and a footer, all per site and page.
_STOPWORDS = ("the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "was", "on",
              "with", "as", "at", "by", "from", "this")  # fmt: skip


def _prose(rng: random.Random, n_words: int) -> str:
    words = [rng.choice(_STOPWORDS if rng.random() < 0.4 else _VOCABULARY) for _ in range(n_words)]
    return " ".join(words).capitalize() + "."


def _article(seed: int) -> tuple[str, list[str]]:
    rng = random.Random(f"article {seed}")
    return _prose(rng, 9), [_prose(rng, rng.randint(30, 60)) for _ in range(8)]


def _news_page(article: int, site: int, *, semantic: bool) -> bytes:
    """Article `article` in site `site`'s template; other parts vary per site and page."""
    headline, paragraphs = _article(article)
    rng = random.Random(f"site {site} article {article}")
    chrome = random.Random(f"site {site}")
    tag = (lambda name: name) if semantic else (lambda name: "div")

    def links(n: int) -> str:
        return "".join(f'<li><a href="/{i}">{_prose(chrome, 4)}</a></li>' for i in range(n))

    body = []
    for n, paragraph in enumerate(paragraphs):
        body.append(f"<p>{paragraph}</p>")
        if n % 3 == 1:
            body.append(f'<p class="read-more">Read more: <a href="/x">{_prose(rng, 8)}</a></p>')
            body.append('<div class="ad-slot">Advertisement</div>')
    comments = "".join(f'<div class="comment"><p>{_prose(rng, 25)}</p></div>' for _ in range(4))
    return (
        f"<!DOCTYPE html><html><head><title>{headline} | Site {site}</title>"
        f"<script>var cfg = {{site: {site}}};</script></head><body>"
        f'<div id="cookie-banner" class="cookie-consent"><p>{_prose(chrome, 60)}</p>'
        "<button>Accept all</button></div>"
        f'<{tag("header")} class="site-header"><{tag("nav")} class="main-nav"><ul>{links(40)}'
        f'</ul></{tag("nav")}></{tag("header")}><{tag("main")} class="content">'
        f'<{tag("article")} class="story"><h1>{headline}</h1>'
        f'<div class="byline">By Staff, 2026-03-{rng.randint(1, 28):02d}</div>'
        f'<div class="story-body">{"".join(body)}</div></{tag("article")}>'
        f'<section class="related"><h2>More news</h2><ul>{links(12)}</ul></section>'
        f'<div id="comments" class="comments">{comments}</div></{tag("main")}>'
        f'<{tag("aside")} class="sidebar"><h2>Most read</h2><ul>{links(10)}</ul>'
        f'<p class="sponsored">{_prose(chrome, 30)}</p></{tag("aside")}>'
        f'<{tag("footer")} class="site-footer"><ul>{links(30)}</ul><p>{_prose(chrome, 50)}</p>'
        f"</{tag('footer')}></body></html>"
    ).encode()


def _grid() -> list[list[bytes]]:
    """Five articles (rows) in four site templates (columns), two semantic, two div soup."""
    return [[_news_page(a, s, semantic=s % 2 == 0) for s in range(4)] for a in range(5)]


def test_syndicated_copies_in_different_templates_are_within_three_bits() -> None:
    for row in _grid():
        prints = [main_text_fingerprint(page) for page in row]
        assert all(tokens >= MIN_PROSE_TOKENS for _, tokens in prints)
        assert max(hamming(a, b) for (a, _), (b, _) in combinations(prints, 2)) <= 3


def test_main_text_values_are_pinned() -> None:
    # Stored simhashes are compared with later ones: a resiliparse upgrade or a change here
    # that moves this value needs a note in the changelog (old and new ones won't match).
    assert main_text_fingerprint(_news_page(0, 1, semantic=False)) == (0x17FD428A9D4402F3, 371)


def test_syndicated_copies_differ_in_visible_text() -> None:
    # What the main text is for: the templates outweigh the article in the visible text.
    for row in _grid():
        prints = [text_fingerprint(page) for page in row]
        assert min(hamming(a, b) for a, b in combinations(prints, 2)) > 3


def test_different_articles_in_one_template_are_far_apart() -> None:
    distances = []
    for column in zip(*_grid(), strict=True):
        prints = [main_text_fingerprint(page)[0] for page in column]
        distances += [hamming(a, b) for a, b in combinations(prints, 2)]
    # Shared stopwords pull unrelated texts together a little: never near, mostly >= 10.
    assert min(distances) > 6
    assert statistics.median(distances) >= 10


def test_comments_are_not_main_text() -> None:
    page = _news_page(1, 0, semantic=True)
    other_comments = page.replace(b'class="comment"><p>', b'class="comment"><p>Spam spam ')
    assert other_comments != page
    assert main_text_fingerprint(other_comments) == main_text_fingerprint(page)


def test_short_blocks_are_not_prose() -> None:
    blocks = ["Home", "Read more: a headline of nine words in all here", " ".join(["w"] * 15)]
    assert prose(blocks) == " ".join(["w"] * 15)


def test_main_blocks_drop_navigation_and_footer() -> None:
    page = (
        b"<html><body><nav><a href=/>Home</a> <a href=/news>News</a></nav>"
        b"<article><h1>Title</h1><p>First paragraph.</p><p>Second paragraph.</p></article>"
        b"<footer>Copyright footer</footer></body></html>"
    )
    assert main_blocks(page) == ["Title", "First paragraph.", "Second paragraph."]


def test_charset_is_decoded_as_for_links() -> None:
    text = "Caf\u00e9 cr\u00e8me na\u00efve \u00fcber " * 20
    utf8 = f'<html><head><meta charset="utf-8"></head><body><p>{text}</p></body></html>'
    latin = utf8.replace("utf-8", "windows-1252")
    assert main_text_fingerprint(latin.encode("cp1252")) == main_text_fingerprint(utf8.encode())
    assert main_text_fingerprint(utf8.encode())[1] == 80


def test_thin_pages_report_few_tokens_but_do_not_collide() -> None:
    def item(n: int) -> bytes:
        rng = random.Random(n)
        name = " ".join(rng.choice(_VOCABULARY) for _ in range(6))
        return f"<html><body><h1>Item {n}</h1><p>{name}</p><p>In stock.</p></body></html>".encode()

    prints = [main_text_fingerprint(item(n)) for n in range(30)]
    assert all(tokens == 0 for _, tokens in prints)  # no block is long enough to be prose
    assert len({simhash for simhash, _ in prints}) == 30
    assert all(simhash != 0 for simhash, _ in prints)


def test_pages_without_text_give_zero() -> None:
    assert main_text_fingerprint(b"") == (0, 0)
    assert main_text_fingerprint(b"<html><body><script>x()</script></body></html>") == (0, 0)


def test_deeply_nested_containers_stay_cheap() -> None:
    # resiliparse's main-content pass costs ~elements x depth: 20,000 nested divs took 16 s
    # unguarded. 6,000 (30 KB) keep the text within the 32 KiB that are read.
    page = b"<div>" * 6_000 + b"<p>" + b"deep text " * 20 + b"</p>"
    start = time.perf_counter()
    simhash, tokens = main_text_fingerprint(page)
    assert time.perf_counter() - start < 2.0
    assert (simhash, tokens) == simhash_of_text("deep text " * 20)


@given(st.binary(max_size=2000))
def test_main_text_of_any_bytes_is_a_64_bit_value(html: bytes) -> None:
    simhash, tokens = main_text_fingerprint(html)
    assert 0 <= simhash < 1 << 64
    assert tokens >= 0


_MARKUP = st.sampled_from(
    ["<p>", "</p>", "<div class=nav>", "</div>", "<article>", "<nav>", "<table><td>", "<!--",
     "-->", "<script>", "</script>", "<svg>", "<template>", "&amp;", "&#0;", "<li>", "\x00",
     "<body>", "<head>", "<title>", "<frameset>", "<math>", "<select>", "<br>", "<main>"]
)  # fmt: skip


@given(st.lists(st.one_of(_MARKUP, st.text(max_size=30)), max_size=100))
def test_main_text_of_broken_markup_is_a_64_bit_value(parts: list[str]) -> None:
    html = "".join(parts).encode("utf-8", "surrogatepass")
    simhash, tokens = main_text_fingerprint(html)
    assert 0 <= simhash < 1 << 64
    assert tokens >= 0


@settings(max_examples=300)
@given(
    st.lists(st.one_of(_MARKUP, st.text(st.characters(exclude_categories=("Cs",)), max_size=30))),
    st.booleans(),
)
def test_main_blocks_of_utf8_bytes_are_resiliparses_own(parts: list[str], bom: bool) -> None:
    # window_blocks decodes UTF-8 itself and parses text (cheaper than resiliparse's bytes
    # path): the blocks must be the ones its bytes path gives, byte-order mark included.
    html = ("\ufeff" if bom else "") + "".join(parts)
    data = html.encode("utf-8")
    text = _blocks_text(HTMLTree.parse_from_bytes(data, "utf-8"), main_content=True)
    if not text:  # no main content found: all visible text, as window_blocks falls back
        text = _blocks_text(HTMLTree.parse_from_bytes(data, "utf-8"), main_content=False)
    expected = [block for block in text.splitlines() if block and not block.isspace()]
    assert window_blocks(data) == expected


def test_simhash_of_text_counts_tokens_of_the_first_chars() -> None:
    assert simhash_of_text("") == (0, 0)
    assert simhash_of_text("one two  three")[1] == 3
    assert simhash_of_text("word " * 5000)[1] == 3072 // 5 + 1  # cut inside the last word
    page = b"<html><body><p>The quick brown fox jumps over the lazy dog</p></body></html>"
    assert simhash_of_text("The quick brown fox jumps over the lazy dog")[0] == int(
        EXPECTED_FOX, 16
    )
    assert text_fingerprint(page) == int(EXPECTED_FOX, 16)


def test_main_text_is_read_from_64_kib_of_the_body_without_splitting_a_character() -> None:
    from trawl.parse.main_text import body_window

    text = "é" * 40_000  # 2 bytes each
    cut = body_window(text.encode(), 65_535)
    assert isinstance(cut, bytes)
    assert cut.decode("utf-8") == "é" * 32_767  # backed off to a character boundary
    assert body_window(b"short", 10) == b"short"
    assert body_window("<head>x</head><BODY class=a>é", 12) == "<BODY class="
    article = " ".join(f"word{i}" for i in range(400))
    head = b"<html><head><script>" + b"var x = 1;" * 12_000 + b"</script></head>"
    body = f"<body><article><p>{article}</p></article>".encode() + b"<p>x</p>" * 20_000
    simhash, tokens = main_text_fingerprint(head + body)
    assert tokens >= MIN_PROSE_TOKENS  # 120 KB of inline script did not push it out
    assert (simhash, tokens) == main_text_fingerprint(body[:30_000])


def _long_article_page(seed: int) -> bytes:
    """~5 KB of chrome, an article of 30 paragraphs (~10 KB of prose), ~40 KB of chrome."""
    rng = random.Random(f"long {seed}")
    nav = "".join(f'<li><a href="/{i}">{_prose(rng, 4)}</a></li>' for i in range(60))
    paragraphs = "".join(f"<p>{_prose(rng, 50)}</p>" for _ in range(30))
    footer = "".join(f'<li><a href="/f{i}">{_prose(rng, 6)}</a></li>' for i in range(600))
    return (
        f"<html><head><title>t</title></head><body><nav><ul>{nav}</ul></nav>"
        f"<article><h1>{_prose(rng, 8)}</h1>{paragraphs}</article>"
        f"<footer><ul>{footer}</ul></footer></body></html>"
    ).encode()


def test_a_first_try_window_never_changes_the_answer() -> None:
    # The first try only saves work: whatever its size, the answer is the full pass's.
    pages = [_long_article_page(n) for n in range(3)]
    pages += [_news_page(0, 0, semantic=True), _news_page(1, 1, semantic=False), _page(3)]
    pages += [b"<html><body><h1>Item</h1><p>In stock.</p></body></html>", b""]
    for page in pages:
        want = main_text_fingerprint(page)
        for first in (0, 1, 512, 2048, 4096, 8192, 12_288, 20_000, 32_768, 65_536):
            got = main_text(page, first_try=first)
            assert (got.simhash, got.tokens) == want, (page[:60], first)


def test_a_long_article_hints_a_window_that_the_next_page_uses() -> None:
    first = main_text(_long_article_page(1))
    assert first.tokens >= MIN_PROSE_TOKENS
    # The prose the simhash reads ends ~8 KB into the body, well before the 32 KiB window.
    assert 8_192 <= first.window_hint < 32_768
    again = main_text(_long_article_page(2), first_try=first.window_hint)
    assert again.window_hint == first.window_hint  # the first try held the prose
    assert (again.simhash, again.tokens) == main_text_fingerprint(_long_article_page(2))
    short = main_text(_long_article_page(2), first_try=2_048)  # too small: the full pass ran
    assert short.window_hint == first.window_hint


def test_short_or_thin_pages_hint_nothing() -> None:
    assert main_text(_news_page(0, 0, semantic=True)).window_hint == 0  # prose under 3,072
    assert main_text(b"<html><body><p>In stock.</p></body></html>").window_hint == 0
    assert main_text(b"") == (0, 0, 0)


def _reference_simhash(text: str) -> tuple[int, int]:
    """simhash_of_text as first written: majority bits counted digest by digest."""
    from collections import Counter
    from hashlib import blake2b

    words = text[:3072].lower().split()
    counts = Counter(words)
    if not counts:
        return 0, 0
    hashes = {
        t: int.from_bytes(blake2b(t.encode("utf-8", "surrogatepass"), digest_size=8).digest())
        for t in counts
    }
    if len(hashes) > 512:
        limit = (1 << 64) * 512 // len(hashes)
        counts = Counter({t: c for t, c in counts.items() if hashes[t] < limit})
    weighted = [(hashes[t], min(c, 8)) for t, c in counts.items()]
    n = sum(w for _, w in weighted)
    out = 0
    for bit in range(64):
        if sum(w for h, w in weighted if h >> bit & 1) > n // 2:
            out |= 1 << bit
    return out, len(words)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["a", "b", "river", "Harbour", "é", "x" * 40, "word", "\u4e2d\u6587"])
        | st.text(min_size=1, max_size=12),
        max_size=900,
    )
)
def test_simhash_of_text_counts_bits_like_the_plain_majority(words: list[str]) -> None:
    text = " ".join(words)
    assert simhash_of_text(text) == _reference_simhash(text)


def test_simhash_of_text_sampled_and_repeated_words_match_the_plain_majority() -> None:
    many = " ".join(f"w{i}" for i in range(900))  # > 512 distinct tokens: sampled
    repeated = "the the the the the the the the the the cat sat sat on the mat " * 20
    for text in (many, repeated, many[:2000] + " " + repeated):
        assert simhash_of_text(text) == _reference_simhash(text)


def _seconds_per_call(text: str, calls: int = 50) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            simhash_of_text(text)
        best = min(best, time.perf_counter() - start)
    return best / calls


def test_a_full_token_cache_costs_a_page_no_more_than_an_empty_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A real web's vocabulary fills a worker's token cache (50,000 tokens) within a few
    # thousand pages. Each page's lookups must cost what the page's own tokens cost: a set
    # difference against the cache's keys once walked all of them, ~20x this text's cost.
    text = " ".join(random.Random(5).choice(_VOCABULARY) for _ in range(500))
    monkeypatch.setattr(fingerprint, "_lanes_cache", {})
    answer = simhash_of_text(text)
    alone = _seconds_per_call(text)
    fingerprint._lanes_cache.update((f"other{i}", i) for i in range(49_000))
    assert simhash_of_text(text) == answer
    assert _seconds_per_call(text) < 3 * alone


def test_answers_do_not_depend_on_the_token_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [" ".join(random.Random(seed).choices(_VOCABULARY, k=400)) for seed in range(30)]
    monkeypatch.setattr(fingerprint, "_lanes_cache", {})
    cold = [simhash_of_text(text) for text in texts]
    assert [simhash_of_text(text) for text in texts] == cold  # every token cached
    monkeypatch.setattr(fingerprint, "_CACHE_LIMIT", 500)  # emptied again and again
    fingerprint._lanes_cache.clear()
    assert [simhash_of_text(text) for text in texts] == cold
    assert [_reference_simhash(text) for text in texts] == cold
