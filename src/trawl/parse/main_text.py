"""The main text of a page: its article or post without menus, banners and lists (pure).

How this works. resiliparse parses the page with Lexbor and its main-content extractor
drops what is not content, in C: elements by tag and ARIA role (nav, header, footer,
aside, form), by telling class and id names (menu, sidebar, cookie, share, related,
comments, ...) and hidden ones. Its output keeps block structure: one line per
paragraph, heading or list item. Of those blocks, `prose` keeps the ones of at least
`_MIN_PROSE_WORDS` words: what the names did not give away in a menu, a headline list,
a byline, a button or an inline "Read more: <headline>" is short, while article text
comes in sentences (the shallow-text rule of boilerpipe and jusText, whose "short" is
under 70 characters).

Chosen by bench/extract_bench.py (~100 KB news pages): resiliparse takes ~0.9 ms a page,
its own parse included; trafilatura, jusText, readability-lxml and boilerpy3 take
8-12 ms, past the crawl's whole CPU budget per page, and where class names or tags are
telling their copies come out no closer. Where a template has hashed class names and
no semantic tags, resiliparse keeps its cookie banner, teasers and comments, and only
the density-scoring extractors (readability, boilerpy3) do better.

Rules:
- Bytes are decoded as for link extraction (`parse.links`), so links and text agree
  about the charset.
- The main-content pass costs about containers x their nesting depth (div and article
  only): 20,000 nested divs, 100 KB, took 16 s. A page with more than `_FEW_CONTAINERS`
  of them is first checked for a chain `_MAX_DEPTH` deep (a C-level selector, ~1 ms),
  and on such a page all visible text is taken instead, which is linear. Worst cases
  left: ~60 ms for 2,000 nested divs, ~100 ms for 300 chains 99 deep (330 KB).
"""

from __future__ import annotations

import re

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from trawl.parse.links import decode_html

__all__ = ["body_start", "main_blocks", "prose", "prose_blocks", "window_at", "window_blocks"]

_MIN_PROSE_WORDS = 15
_CONTAINERS = "div, article"  # the elements whose nesting the main-content pass pays for
_FEW_CONTAINERS = 2_000  # real pages have hundreds
_MAX_DEPTH = 100  # real templates nest tens deep
_DEEP_CHAIN = " ".join([":is(div, article)"] * _MAX_DEPTH)


_BODY = re.compile(rb"<body[\s>/]", re.IGNORECASE)
_BODY_TEXT = re.compile(r"<body[\s>/]", re.IGNORECASE)


def body_window(html: str | bytes, max_len: int) -> str | bytes:
    """`max_len` characters (bytes, for UTF-8 kept as bytes) from the start of `<body>`.

    The main text starts in the body: a page's head can hold a hundred KB of inline
    scripts and styles. Byte windows never split a UTF-8 character (a split one would make
    the window fail UTF-8 decoding).
    """
    return window_at(html, body_start(html), max_len)


def body_start(html: str | bytes) -> int:
    """Where `<body>` starts (0 when there is no body tag)."""
    found = _BODY.search(html) if isinstance(html, bytes) else _BODY_TEXT.search(html)
    return found.start() if found is not None else 0


def window_at(html: str | bytes, start: int, max_len: int) -> str | bytes:
    """`body_window` when `start` is `body_start(html)` already."""
    end = start + max_len
    if end >= len(html):
        return html[start:]
    if isinstance(html, bytes):
        while end > start and html[end] & 0xC0 == 0x80:
            end -= 1
    return html[start:end]


def main_blocks(
    html: bytes, max_len: int | None = None, *, decoded: str | bytes | None = None
) -> list[str]:
    """The text blocks (paragraphs, headings, list items) of the page's main content.

    When the heuristics find no main content (a bare list of links, say), or the page's
    containers nest too deep to run them, all visible blocks are returned instead. Never
    raises on bad input: Lexbor recovers from any markup, and undecodable bytes were
    already replaced. `decoded` is `decode_html(html)` when the caller has it already.
    """
    if not html:
        return []
    if decoded is None:
        decoded = decode_html(html)
    if max_len is not None:
        decoded = body_window(decoded, max_len)
    return window_blocks(decoded)


def window_blocks(decoded: str | bytes) -> list[str]:
    """`main_blocks` of text already decoded and windowed."""
    if isinstance(decoded, bytes):
        # Bytes here are valid UTF-8 (decode_html), so a decode and HTMLTree.parse
        # give the tree parse_from_bytes does, ~10 us a parse sooner (its codec path costs
        # more than CPython's decoder). parse_from_bytes drops a leading byte-order mark.
        text = decoded.decode("utf-8", "ignore")
        tree = HTMLTree.parse(text[1:] if text.startswith("\ufeff") else text)
        tags = decoded.count(b"<")
    else:
        tree = HTMLTree.parse(decoded)
        tags = decoded.count("<")
    # Each div or article element comes from a start tag, so a page with few "<" has few
    # containers, and counting them in the tree (~20 us) can be skipped.
    shallow = tags <= _FEW_CONTAINERS or _is_shallow(tree)
    text = _blocks_text(tree, main_content=True) if shallow else ""
    if not text:
        text = _blocks_text(tree, main_content=False)
    return [block for block in text.splitlines() if block and not block.isspace()]


def prose(blocks: list[str], max_chars: int | None = None) -> str:
    """The blocks of at least `_MIN_PROSE_WORDS` words, one per line; with `max_chars`,
    only as many as reach that length (the simhash reads no further, and counting the
    words of every block of a long page cost as much as extracting them)."""
    return "\n".join(prose_blocks(blocks, max_chars))


def prose_blocks(blocks: list[str], max_chars: int | None = None) -> list[str]:
    """`prose` before the blocks are joined."""
    kept: list[str] = []
    total = 0
    for block in blocks:
        if len(block.split(maxsplit=_MIN_PROSE_WORDS)) >= _MIN_PROSE_WORDS:
            kept.append(block)
            total += len(block) + 1
            if max_chars is not None and total >= max_chars:
                break
    return kept


def _is_shallow(tree: HTMLTree) -> bool:
    body = tree.body
    if body is None:
        return True
    if len(body.query_selector_all(_CONTAINERS)) <= _FEW_CONTAINERS:
        return True
    return body.query_selector(_DEEP_CHAIN) is None


def _blocks_text(tree: HTMLTree, *, main_content: bool) -> str:
    # Comments are a page's own, not the article's: syndicated copies have different ones.
    return extract_plain_text(
        tree,
        preserve_formatting=True,
        main_content=main_content,
        comments=False,
        alt_texts=False,
        list_bullets=False,
    )
