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

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from trawl.parse.links import _decode

__all__ = ["main_blocks", "prose"]

_MIN_PROSE_WORDS = 15
_CONTAINERS = "div, article"  # the elements whose nesting the main-content pass pays for
_FEW_CONTAINERS = 2_000  # real pages have hundreds
_MAX_DEPTH = 100  # real templates nest tens deep
_DEEP_CHAIN = " ".join([":is(div, article)"] * _MAX_DEPTH)


def main_blocks(html: bytes) -> list[str]:
    """The text blocks (paragraphs, headings, list items) of the page's main content.

    When the heuristics find no main content (a bare list of links, say), or the page's
    containers nest too deep to run them, all visible blocks are returned instead. Never
    raises on bad input: Lexbor recovers from any markup, and undecodable bytes were
    already replaced.
    """
    if not html:
        return []
    decoded = _decode(html)
    if isinstance(decoded, bytes):
        tree = HTMLTree.parse_from_bytes(decoded, "utf-8")
    else:
        tree = HTMLTree.parse(decoded)
    text = _blocks_text(tree, main_content=True) if _is_shallow(tree) else ""
    if not text:
        text = _blocks_text(tree, main_content=False)
    return [block for block in text.splitlines() if block and not block.isspace()]


def prose(blocks: list[str]) -> str:
    """The blocks of at least `_MIN_PROSE_WORDS` words, one per line."""
    return "\n".join(block for block in blocks if len(block.split()) >= _MIN_PROSE_WORDS)


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
