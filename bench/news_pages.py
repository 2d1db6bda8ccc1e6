"""Synthetic ~100 KB news pages: one article inside heavy, site-specific boilerplate.

Used by bench/extract_bench.py to judge main-content extractors for the near-duplicate
simhash. A *chrome* is one site's template (header, menus, cookie banner, sidebars,
related links, comments, footer, inline scripts and styles, SVG icons); an *article* is
headline, byline and paragraphs. `news_page(article, chrome)` puts one in the other, so
the same article in two chromes is a syndicated copy, and two articles in one chrome are
different pages of one site. Per-page parts of the chrome (most-read and related lists,
comments, inline "read more" links) are drawn from (chrome, article), as on real sites.

The prose mixes English function words (~45 % of tokens, which stopword-based extractors
such as jusText need) with Zipf-distributed made-up content words from a 20,000-word
vocabulary, so different articles share common words but not their content words.
Chromes differ in markup style: semantic tags with telling class names, div soup with
telling class names, and div soup with hashed class names (CSS modules), where an
extractor cannot lean on names.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from html import escape

_STOPWORD_TEXT = (
    "the of and to a in is that for it was on with as he she at by from this have "
    "but not they which had are be or an his her their were been has more when will "
    "would who its also after into than about over could other there so what all two"
)
_STOPWORDS = _STOPWORD_TEXT.split()
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]
_VOCABULARY_SIZE = 20_000
_TARGET_BYTES = 100_000
SEMANTIC, TELLING, HASHED = 0, 1, 2  # chrome styles, see Chrome.style


def _vocabulary() -> list[str]:
    rng = random.Random(42)
    words: dict[str, None] = {}
    while len(words) < _VOCABULARY_SIZE:
        n = rng.choice((2, 2, 3, 3, 3, 4))
        words["".join(rng.choice(_SYLLABLES) for _ in range(n))] = None
    return list(words)


_WORDS = _vocabulary()
# Zipf with a flattened head (rank + 20): the top function words are the stopwords above.
_CUM_WEIGHTS = list(itertools.accumulate(1.0 / (rank + 20) for rank in range(_VOCABULARY_SIZE)))


def _words(rng: random.Random, n: int) -> str:
    content = rng.choices(_WORDS, cum_weights=_CUM_WEIGHTS, k=n)
    out = [rng.choice(_STOPWORDS) if rng.random() < 0.45 else w for w in content]
    return " ".join(out)


def _sentence(rng: random.Random, n_min: int = 8, n_max: int = 22) -> str:
    return _words(rng, rng.randint(n_min, n_max)).capitalize() + "."


def _headline(rng: random.Random) -> str:
    return _words(rng, rng.randint(6, 11)).title()


@dataclass(frozen=True, slots=True)
class Article:
    headline: str
    standfirst: str
    author: str
    paragraphs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Chrome:
    index: int
    name: str
    style: int  # 0 semantic tags, 1 div soup with telling names, 2 div soup with hashed names
    sections: tuple[str, ...]
    menu: tuple[str, ...]
    headlines: tuple[str, ...]  # the site's other stories, for most-read and related lists
    cookie_text: str
    legal_text: str
    footer_links: tuple[str, ...]
    comments: bool


def make_article(seed: int) -> Article:
    rng = random.Random(f"article-{seed}")
    paragraphs = tuple(
        " ".join(_sentence(rng) for _ in range(rng.randint(3, 6)))
        for _ in range(rng.randint(8, 16))
    )
    author = f"{_words(rng, 1).title()} {_words(rng, 1).title()}"
    return Article(_headline(rng), _sentence(rng, 18, 30), author, paragraphs)


def make_chrome(index: int) -> Chrome:
    rng = random.Random(f"chrome-{index}")
    return Chrome(
        index=index,
        name=_words(rng, 2).title(),
        style=index % 3,
        sections=tuple(_words(rng, 1).title() for _ in range(12)),
        menu=tuple(_words(rng, rng.randint(1, 3)).title() for _ in range(70)),
        headlines=tuple(_headline(rng) for _ in range(80)),
        cookie_text=" ".join(_sentence(rng) for _ in range(6)),
        legal_text=" ".join(_sentence(rng) for _ in range(8)),
        footer_links=tuple(_words(rng, rng.randint(1, 3)).title() for _ in range(60)),
        comments=index % 2 == 1,
    )


class _Names:
    """Class names in the chrome's style: telling ("sidebar") or hashed ("sc-8f3a1c")."""

    def __init__(self, chrome: Chrome) -> None:
        self._hashed = chrome.style == HASHED
        self._seed = chrome.index

    def __call__(self, telling: str) -> str:
        if not self._hashed:
            return telling
        rng = random.Random(f"{self._seed}-{telling}")
        return f"sc-{rng.getrandbits(24):06x} css-{rng.getrandbits(20):05x}"


def _tag(chrome: Chrome, semantic: str) -> str:
    return semantic if chrome.style == SEMANTIC else "div"


def _link_list(names: _Names, cls: str, items: list[str], path: str) -> str:
    lis = "".join(
        f'<li class="{names(cls + "-item")}"><a href="/{path}/{n}" '
        f'data-track="{cls}-{n}">{escape(t)}</a></li>'
        for n, t in enumerate(items)
    )
    return f'<ul class="{names(cls)}">{lis}</ul>'


_ICON = (
    '<svg viewBox="0 0 24 24" width="24" height="24" aria-hidden="true"><path d="'
    + " ".join(f"M{i % 24} {(i * 7) % 24}l{i % 5} {(i * 3) % 7}" for i in range(40))
    + '"/></svg>'
)


def _head(article: Article, chrome: Chrome, rng: random.Random) -> str:
    script = "".join(
        f'window.__cfg_{n}={{"id":{rng.randrange(10**9)},"slot":"ad-{n}","sizes":[[300,250],'
        f'[728,90]],"targeting":{{"section":"{chrome.sections[n % 12]}"}}}};'
        for n in range(120)
    )
    style = "".join(
        f".{chrome.name.split()[0].lower()}-c{n}{{margin:{n % 9}px auto;color:#{n:06x}}}"
        for n in range(250)
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(article.headline)} | {escape(chrome.name)}</title>"
        f'<meta name="description" content="{escape(article.standfirst)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<script type="application/ld+json">{{"@type":"NewsArticle","headline":'
        f'"{escape(article.headline)}"}}</script>'
        f"<style>{style}</style><script>{script}</script></head>"
    )


def _cookie_banner(chrome: Chrome, names: _Names) -> str:
    return (
        f'<div id="{names("cookie-consent")}" class="{names("cookie-banner")}">'
        f"<p>{escape(chrome.cookie_text)}</p><button>Accept all</button>"
        "<button>Manage preferences</button></div>"
    )


def _header(chrome: Chrome, names: _Names) -> str:
    nav = _tag(chrome, "nav")
    return (
        f'<{_tag(chrome, "header")} class="{names("site-header")}">'
        f'<a class="{names("logo")}" href="/">{_ICON}<span>{escape(chrome.name)}</span></a>'
        f'<{nav} class="{names("main-nav")}">'
        f"{_link_list(names, 'nav', list(chrome.sections), 'section')}</{nav}>"
        f'<div class="{names("mega-menu")}">{_link_list(names, "menu", list(chrome.menu), "t")}'
        f'</div><form class="{names("search")}"><input name="q" placeholder="Search">'
        f"<button>Search</button></form></{_tag(chrome, 'header')}>"
    )


def _body_paragraphs(article: Article, chrome: Chrome, names: _Names, rng: random.Random) -> str:
    parts = []
    for n, paragraph in enumerate(article.paragraphs):
        parts.append(f"<p>{escape(paragraph)}</p>")
        if n % 4 == 2:
            parts.append(
                f'<div class="{names("ad-slot")}"><span>Advertisement</span>'
                f'<div id="ad-{n}" data-slot="{n}"></div></div>'
            )
        if n % 5 == 3:
            other = rng.choice(chrome.headlines)
            parts.append(
                f'<p class="{names("read-more")}"><strong>Read more:</strong> '
                f'<a href="/story/{rng.randrange(10**5)}">{escape(other)}</a></p>'
            )
    return "".join(parts)


def _article(article: Article, chrome: Chrome, names: _Names, rng: random.Random) -> str:
    art = _tag(chrome, "article")
    share = "".join(
        f'<a class="{names("share-" + s)}" href="#">{_ICON}Share on {s}</a>'
        for s in ("Facebook", "Twitter", "LinkedIn", "Email")
    )
    day = rng.randint(1, 28)
    tags = _link_list(names, "tags", [chrome.sections[i] for i in range(0, 12, 3)], "tag")
    return (
        f'<{art} class="{names("story")}"><h1 class="{names("headline")}">'
        f"{escape(article.headline)}</h1>"
        f'<p class="{names("standfirst")}">{escape(article.standfirst)}</p>'
        f'<div class="{names("byline")}">By {escape(article.author)} · 2026-03-{day:02d}</div>'
        f'<div class="{names("share-bar")}">{share}</div>'
        f'<div class="{names("story-body")}">{_body_paragraphs(article, chrome, names, rng)}'
        f'</div><div class="{names("tag-list")}">{tags}</div></{art}>'
    )


def _sidebar(chrome: Chrome, names: _Names, rng: random.Random) -> str:
    aside = _tag(chrome, "aside")
    most_read = rng.sample(chrome.headlines, 10)
    sponsored = "".join(
        f'<div class="{names("sponsored")}"><a href="https://ads.example/{n}">'
        f"{escape(_headline(rng))}</a><p>{escape(_sentence(rng))}</p></div>"
        for n in range(4)
    )
    return (
        f'<{aside} class="{names("sidebar")}"><h2>Most read</h2>'
        f"{_link_list(names, 'most-read', most_read, 'story')}"
        f"<h2>Sponsored</h2>{sponsored}"
        f'<div class="{names("newsletter")}"><h3>Get our newsletter</h3>'
        "<p>The day's top stories, every morning.</p>"
        '<input type="email" placeholder="Email"><button>Sign up</button></div>'
        f"</{aside}>"
    )


def _related(chrome: Chrome, names: _Names, rng: random.Random) -> str:
    items = "".join(
        f'<div class="{names("teaser")}"><a href="/story/{n}">{escape(h)}</a>'
        f"<p>{escape(_sentence(rng))}</p></div>"
        for n, h in enumerate(rng.sample(chrome.headlines, 12))
    )
    return (
        f'<{_tag(chrome, "section")} class="{names("related")}">'
        f"<h2>More from {escape(chrome.name)}</h2>{items}</{_tag(chrome, 'section')}>"
    )


def _comments(chrome: Chrome, names: _Names, rng: random.Random) -> str:
    if not chrome.comments:
        return ""
    items = "".join(
        f'<div class="{names("comment")}"><span class="{names("comment-author")}">'
        f"{escape(_words(rng, 1))}</span><p>{escape(_sentence(rng, 15, 40))}</p></div>"
        for _ in range(rng.randint(3, 8))
    )
    box = names("comments")
    return f'<div id="{box}" class="{box}"><h2>Comments</h2>{items}</div>'


def _footer(chrome: Chrome, names: _Names) -> str:
    foot = _tag(chrome, "footer")
    return (
        f'<{foot} class="{names("site-footer")}">'
        f"{_link_list(names, 'footer', list(chrome.footer_links), 'info')}"
        f"<p>{escape(chrome.legal_text)}</p><p>&copy; 2026 {escape(chrome.name)}</p></{foot}>"
    )


def news_page(article: Article, chrome: Chrome) -> bytes:
    """One ~100 KB page: `article` in `chrome`'s template (deterministic)."""
    rng = random.Random(f"{chrome.index}-{article.headline}")
    names = _Names(chrome)
    main = _tag(chrome, "main")
    body = (
        f"<body>{_cookie_banner(chrome, names)}{_header(chrome, names)}"
        f'<div class="{names("layout")}"><{main} class="{names("content")}">'
        f"{_article(article, chrome, names, rng)}{_related(chrome, names, rng)}"
        f"{_comments(chrome, names, rng)}</{main}>{_sidebar(chrome, names, rng)}</div>"
        f"{_footer(chrome, names)}"
    )
    page = _head(article, chrome, rng) + body
    # Pad with what real pages carry after the content: tracking pixels and icon sprites.
    filler = []
    size = len(page)
    n = 0
    while size < _TARGET_BYTES:
        chunk = f'<div hidden class="{names("sprite")}" data-n="{n}">{_ICON}</div>'
        filler.append(chunk)
        size += len(chunk)
        n += 1
    return (page + "".join(filler) + "</body></html>").encode()
