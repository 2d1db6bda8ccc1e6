"""Microseconds per page for link extraction: selectolax (lexbor) vs lxml.html.

Run: `python bench/parse_bench.py`. Pages are generated: ~100 KB of news-like markup
(head with meta, scripts and styles, nav, article text, footer) with ~50 links, some of
it deliberately sloppy (unclosed <p> and <li>, unquoted attributes). Both candidates do
the same work as `trawl.parse.links.extract_links`: decode, parse, walk the link tags.
The selectolax candidate is the shipped function; the lxml one is written here.
The modest backend (selectolax.parser) is gone from selectolax 1.0, so it is not measured.
"""

from __future__ import annotations

import platform
import random
import subprocess
import sys
import timeit
from typing import TYPE_CHECKING

import lxml.html  # type: ignore[import-untyped]  # no stubs installed
from selectolax.lexbor import LexborHTMLParser

from trawl.parse.links import _decode, extract_links

if TYPE_CHECKING:
    from collections.abc import Callable

WORDS = ("the", "crawler", "fetched", "a", "page", "and", "found", "many", "links", "to",
         "other", "pages", "on", "the", "site")  # fmt: skip
LINK_TAGS = ("a", "area", "frame", "iframe", "link", "meta", "base")


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def make_page(rng: random.Random, target_bytes: int = 100_000, links: int = 50) -> bytes:
    head = [
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
        "<title>" + _text(rng, 8) + "</title>",
        '<meta name="robots" content="index,follow">',
        '<link rel="stylesheet" href="/static/site.css"><link rel=alternate href="/feed.xml">',
        "<script>" + "var x = {a: 1, b: [1,2,3]};" * 200 + "</script>",
        "<style>" + ".c{color:red;margin:0 auto}" * 150 + "</style></head><body>",
    ]
    nav = ["<nav><ul>"] + [
        f"<li><a href=/section/{i} class=nav>{rng.choice(WORDS)}</a>" for i in range(links // 2)
    ]
    body: list[str] = ["</ul></nav><main><article>"]
    remaining = links - links // 2
    size = sum(map(len, head + nav))
    while size < target_bytes:
        if remaining and rng.random() < 0.05:
            remaining -= 1
            chunk = f'<p>{_text(rng, 20)} <a href="/story/{rng.randrange(10**6)}?ref=home">x</a>'
        else:
            chunk = f'<p class="body-text">{_text(rng, 40)}<span>{_text(rng, 5)}</span>'
        body.append(chunk)
        size += len(chunk)
    body += [f'<a href="https://other.example/{i}">o</a>' for i in range(remaining)]
    body.append("</article></main><footer>" + _text(rng, 30) + "</footer></body></html>")
    return "".join(head + nav + body).encode("utf-8")


def lexbor_parse_only(html: bytes) -> int:
    return len(LexborHTMLParser(_decode(html)).css("a[href]"))


def lxml_extract(html: bytes) -> tuple[str, ...]:
    root = lxml.html.document_fromstring(_decode(html))
    hrefs: dict[str, None] = {}
    for el in root.iter(*LINK_TAGS):
        tag = el.tag
        if tag in ("a", "area", "link"):
            value = el.get("href")
        elif tag in ("frame", "iframe"):
            value = el.get("src")
        else:
            continue
        if value and not value.startswith("#"):
            hrefs[value.strip()] = None
    return tuple(hrefs)


def _us_per_page(fn: Callable[[bytes], object], pages: list[bytes]) -> float:
    def run() -> None:
        for page in pages:
            fn(page)

    best = min(timeit.repeat(run, number=1, repeat=5))
    return best / len(pages) * 1e6


def _extract(html: bytes) -> object:
    return extract_links(html, "https://news.example.com/")


def main() -> None:
    rng = random.Random(3)
    pages = [make_page(rng) for _ in range(40)]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(f"command: {' '.join(sys.argv)}  commit: {commit or '?'}  machine: {platform.machine()}")
    print(
        f"pages: {len(pages)}, mean {sum(map(len, pages)) / len(pages) / 1000:.0f} KB, "
        f"{len(extract_links(pages[0], 'https://news.example.com/').hrefs)} distinct links"
    )
    lexbor_us = _us_per_page(_extract, pages)
    parse_us = _us_per_page(lexbor_parse_only, pages)
    lxml_us = _us_per_page(lxml_extract, pages)
    print(f"selectolax lexbor, extract_links : {lexbor_us:8.0f} us/page")
    print(f"selectolax lexbor, parse + a[href]: {parse_us:8.0f} us/page")
    print(
        f"lxml.html, same extraction        : {lxml_us:8.0f} us/page "
        f"({lxml_us / lexbor_us:.2f}x lexbor)"
    )


if __name__ == "__main__":
    main()
