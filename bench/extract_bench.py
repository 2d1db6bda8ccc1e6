"""Main-content extractors for the near-duplicate simhash: speed and what they do to it.

Run: `python -m bench.extract_bench [--quick]` (no network; ~2 minutes, --quick ~15 s).
Each candidate turns page bytes into plain text; the text goes through the same
`simhash_of_text` the crawler uses, so only the extractor differs. Two page sets:

- news: bench/news_pages.py, ~100 KB pages, 10 articles x 6 site templates (cookie
  banner, mega menu, most-read and related lists, inline ads and "Read more" links,
  comments, footer). Two templates use semantic tags, two div soup with telling class
  names, two div soup with hashed class names. Copies: one article in two templates,
  split into pairs of telling templates (60) and pairs with a hashed one (90).
  Different: two articles in one template (270 pairs).
- testweb: pages of trawl's own test web (`build_web`), ~4 KB. Copies: a page's title,
  text and body links in another site's template (its nav, aside, header and footer);
  different: two pages of one site.

Speed: microseconds per page including the candidate's own decode and parse; candidates
take turns and the median of repeats is printed (the machine is shared). The crawler
already parses each page with selectolax for its links: "today" is that parse plus
`fingerprint_tree`, so today's fingerprint costs "today" minus the parse row, and the
shipped `main_text_fingerprint` (own resiliparse parse, main content, prose filter,
simhash) costs its row in full. Quality: Hamming distance between copies (want <= 3,
`near_max_distance`) and between different pages (want >= 10); "tokens" is the median
number of tokens hashed. A last table backs `MIN_PROSE_TOKENS`: how short texts behave.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import statistics
import sys
import time
import warnings
from itertools import combinations
from typing import TYPE_CHECKING, NamedTuple

import justext  # type: ignore[import-untyped]  # no stubs published
import lxml.html  # type: ignore[import-untyped]  # no stubs installed
import trafilatura
from boilerpy3 import extractors  # type: ignore[import-untyped]  # no stubs published
from readability import Document  # type: ignore[import-untyped]  # no stubs published
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from bench.news_pages import HASHED, make_article, make_chrome, news_page
from bench.runinfo import describe_run
from trawl.parse.fingerprint import (
    _visible_text,
    fingerprint_tree,
    hamming,
    main_text_fingerprint,
    simhash_of_text,
)
from trawl.parse.links import _decode, parse_html
from trawl.testweb import text as testweb_text
from trawl.testweb.layout import PageKind, Place
from trawl.testweb.render import render_html
from trawl.testweb.sites import build_web

if TYPE_CHECKING:
    from collections.abc import Callable

    from trawl.testweb.layout import Page, Site

_PORT = 8080
_STOPLIST = justext.get_stoplist("English")


def _text(html: bytes) -> str:
    decoded = _decode(html)
    return decoded.decode("utf-8") if isinstance(decoded, bytes) else decoded


def selectolax_visible(html: bytes) -> str:
    return _visible_text(parse_html(html))


def selectolax_parse_only(html: bytes) -> str:
    parse_html(html)
    return ""


def _resiliparse_tree(html: bytes) -> HTMLTree:
    decoded = _decode(html)
    if isinstance(decoded, bytes):
        return HTMLTree.parse_from_bytes(decoded, "utf-8")
    return HTMLTree.parse(decoded)


def resiliparse_main(html: bytes) -> str:
    return extract_plain_text(
        _resiliparse_tree(html), main_content=True, comments=False, alt_texts=False,
        list_bullets=False,
    )  # fmt: skip


def resiliparse_main_defaults(html: bytes) -> str:
    return extract_plain_text(_resiliparse_tree(html), main_content=True)


def resiliparse_all(html: bytes) -> str:
    return extract_plain_text(_resiliparse_tree(html), alt_texts=False, list_bullets=False)


def shipped_main_text(html: bytes) -> tuple[int, int]:
    return main_text_fingerprint(html)


def todays_fingerprint(html: bytes) -> tuple[int, int]:
    return fingerprint_tree(parse_html(html)), -1


def trafilatura_fast(html: bytes) -> str:
    return trafilatura.extract(_text(html), fast=True, include_comments=False) or ""


def trafilatura_default(html: bytes) -> str:
    return trafilatura.extract(_text(html), include_comments=False) or ""


def justext_good(html: bytes) -> str:
    paragraphs = justext.justext(html, _STOPLIST)
    return " ".join(p.text for p in paragraphs if not p.is_boilerplate)


def readability_summary(html: bytes) -> str:
    summary = Document(_text(html)).summary(html_partial=True)
    return " ".join(lxml.html.fromstring(summary).itertext())


def boilerpy3_article(html: bytes) -> str:
    try:
        return str(extractors.ArticleExtractor().get_content(_text(html)))
    except Exception:  # it raises on some markup; an empty text is its answer then
        return ""


CANDIDATES: dict[str, Callable[[bytes], object]] = {
    "selectolax parse (links' tree)": selectolax_parse_only,
    "today: parse + fingerprint_tree": todays_fingerprint,
    "shipped: main_text_fingerprint": shipped_main_text,
    "selectolax visible text": selectolax_visible,
    "resiliparse all text": resiliparse_all,
    "resiliparse main, defaults": resiliparse_main_defaults,
    "resiliparse main, no comments": resiliparse_main,
    "trafilatura fast": trafilatura_fast,
    "trafilatura default": trafilatura_default,
    "jusText": justext_good,
    "readability-lxml": readability_summary,
    "boilerpy3 ArticleExtractor": boilerpy3_article,
}


class PageSet(NamedTuple):
    name: str
    pages: list[bytes]  # all distinct pages, for timing
    copies: list[tuple[bytes, bytes]]  # same article, chromes with telling names or tags
    hashed_copies: list[tuple[bytes, bytes]]  # same article, one chrome has hashed names
    different: list[tuple[bytes, bytes]]  # different articles, same chrome


def _pairs(grid: list[list[bytes]], telling: list[bool]) -> PageSet:
    """Pairs from a grid of pages, a row per article and a column per chrome."""
    copies: list[tuple[bytes, bytes]] = []
    hashed: list[tuple[bytes, bytes]] = []
    for row in grid:
        for i, j in combinations(range(len(row)), 2):
            (copies if telling[i] and telling[j] else hashed).append((row[i], row[j]))
    columns = list(zip(*grid, strict=True))
    different = [pair for column in columns for pair in combinations(column, 2)]
    return PageSet("", [p for row in grid for p in row], copies, hashed, different)


def news_set(n_articles: int, n_chromes: int) -> PageSet:
    chromes = [make_chrome(c) for c in range(n_chromes)]
    grid = [[news_page(make_article(a), c) for c in chromes] for a in range(n_articles)]
    return _pairs(grid, [c.style != HASHED for c in chromes])._replace(name="news")


def _article_pages(site: Site) -> list[Page]:
    pages = [p for p in site.pages.values() if p.kind is PageKind.HTML and p.paragraphs > 0]
    return sorted(pages, key=lambda p: (p.host, p.path))


def testweb_set(n_articles: int, n_chromes: int) -> PageSet:
    """A source page's title, text and body links in other sites' templates (nav, aside)."""
    web = build_web(n_sites=max(12, n_chromes), pages_per_site=20, seed=1)
    sites = [s for s in web.sites if len(_article_pages(s)) >= n_articles][:n_chromes]
    grid: list[list[bytes]] = []
    for a in range(n_articles):
        source = _article_pages(sites[0])[a]
        body_links = tuple(link for link in source.links if link.place is Place.BODY)
        row = []
        for site in sites:
            template = _article_pages(site)[a]
            chrome_links = tuple(link for link in template.links if link.place is not Place.BODY)
            copy = dataclasses.replace(
                source, host=template.host, path=template.path, links=body_links + chrome_links
            )
            row.append(render_html(site, copy, _PORT))
        grid.append(row)
    return _pairs(grid, [True] * len(sites))._replace(name="testweb")


def time_all(pages: list[bytes], repeats: int) -> dict[str, float]:
    """Median us per page of each candidate; candidates take turns, so load hits all alike."""
    runs: dict[str, list[float]] = {name: [] for name in CANDIDATES}
    for _ in range(repeats):
        for name, fn in CANDIDATES.items():
            start = time.perf_counter()
            for page in pages:
                fn(page)
            runs[name].append((time.perf_counter() - start) / len(pages) * 1e6)
    return {name: statistics.median(values) for name, values in runs.items()}


def _simhash(fn: Callable[[bytes], object], page: bytes) -> tuple[int, int]:
    out = fn(page)
    if isinstance(out, tuple):
        return out  # already (simhash, tokens)
    assert isinstance(out, str)
    return simhash_of_text(out)


def _share(values: list[int], ok: Callable[[int], bool]) -> str:
    return f"{sum(map(ok, values)) / len(values):.0%}" if values else "-"


def quality(fn: Callable[[bytes], object], pages: PageSet) -> str:
    prints = {page: _simhash(fn, page) for page in pages.pages}

    def distances(pairs: list[tuple[bytes, bytes]]) -> list[int]:
        return [hamming(prints[a][0], prints[b][0]) for a, b in pairs]

    copy, hashed, diff = map(distances, (pages.copies, pages.hashed_copies, pages.different))
    tokens = f"{statistics.median(t for _, t in prints.values()):6.0f}"
    if fn is todays_fingerprint:
        tokens = f"{'-':>6}"  # fingerprint_tree does not count them
    hashed_median = f"{statistics.median(hashed):4.1f}" if hashed else "   -"
    near, far = (lambda d: d <= 3), (lambda d: d >= 10)
    return (
        f"{tokens} | {statistics.median(copy):4.1f} {max(copy):4d} {_share(copy, near):>4} "
        f"| {hashed_median} {_share(hashed, near):>4} "
        f"| {min(diff):4d} {statistics.median(diff):4.0f} {_share(diff, far):>4}"
    )


def short_texts() -> None:
    """Distances of short texts in the test web's small vocabulary (the worst case)."""
    print("\nshort texts (test-web prose): unrelated pairs within 3 bits; one word replaced")
    for n in (20, 30, 50, 80, 150):
        rng = random.Random(n)
        texts = [_testweb_words(rng, n) for _ in range(150)]
        prints = [simhash_of_text(t)[0] for t in texts]
        unrelated = [hamming(a, b) for a, b in combinations(prints, 2)]
        edited = []
        for sample, before in zip(texts, prints, strict=True):
            words = sample.split()
            words[rng.randrange(n)] = "replaced"
            edited.append(hamming(before, simhash_of_text(" ".join(words))[0]))
        edited.sort()
        print(
            f"  {n:3d} tokens: unrelated <=3 {_share(unrelated, lambda d: d <= 3):>5}; "
            f"one word replaced: median {statistics.median(edited):.0f}, "
            f"p90 {edited[len(edited) * 9 // 10]} bits"
        )


def _testweb_words(rng: random.Random, n: int) -> str:
    words: list[str] = []
    while len(words) < n:
        words += testweb_text.sentence(rng).split()
    return " ".join(words[:n])


def main() -> None:
    logging.disable(logging.CRITICAL)  # readability and trafilatura log per page
    warnings.simplefilter("ignore")
    quick = "--quick" in sys.argv
    repeats = 3 if quick else 7
    sets = [news_set(4, 3), testweb_set(4, 3)] if quick else [news_set(10, 6), testweb_set(10, 6)]
    for key, value in describe_run().items():
        print(f"{key}: {value}")
    for page_set in sets:
        sizes = [len(p) for p in page_set.pages]
        print(
            f"\n{page_set.name}: {len(page_set.pages)} pages, median "
            f"{statistics.median(sizes) / 1000:.0f} KB; copy pairs: {len(page_set.copies)} "
            f"telling, {len(page_set.hashed_copies)} hashed; {len(page_set.different)} different"
        )
        print(
            f"{'':33} {'':>7} {'':>6} | {'copies (telling)':16} | {'hashed':9} | {'different':14}"
        )
        print(
            f"{'candidate':33} {'us/page':>7} {'tokens':>6} | {'med':>4} {'max':>4} {'<=3':>4} "
            f"| {'med':>4} {'<=3':>4} | {'min':>4} {'med':>4} {'>=10':>4}"
        )
        us = time_all(page_set.pages, repeats)
        for name, fn in CANDIDATES.items():
            row = "" if fn is selectolax_parse_only else quality(fn, page_set)
            print(f"{name:33} {us[name]:7.0f} {row}")
    short_texts()


if __name__ == "__main__":
    main()
