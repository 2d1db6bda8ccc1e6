"""64-bit simhashes of a page's text, for spotting near-identical pages (pure).

Two texts, one hash. `main_text_fingerprint` hashes the page's main content without
its boilerplate (`parse.main_text`): the same article under two sites' templates comes
out the same. The crawl uses it for near-duplicate detection and for the spider-trap
alarm (`frontier.traps`), whose hostile-site tests it passes as well. `text_fingerprint`
hashes all visible text, template included; the crawl no longer calls it, and the test
web's tests use it to check its pages differ in their visible text too.

How the text is hashed (`simhash_of_text`). The text is split on whitespace into
lowercase tokens; punctuation stays on its word, which costs nothing in similarity and is
~5x faster than a `\\w+` regex. The features are the distinct tokens. Each gets a 64-bit
blake2b hash (stable across processes and machines, unlike `hash()`, because
fingerprints are stored and compared later). Standard simhash: bit i of the fingerprint
is set when more than half of the (weighted) feature hashes have bit i set. Two pages
whose token sets mostly overlap land a few bits apart; unrelated pages land ~20-32 apart.

Cost bounds, so one ~100 KB page stays under a millisecond:
- only the first `_MAX_TEXT_CHARS` characters of the text count (a typical article is
  shorter; on a text-heavy page, tokenising the rest cost ~1 ms more). Pages that differ
  only beyond that point come out identical, which errs towards "similar";
- token hashes are cached per process (blake2b is ~300 ns a call; web vocabulary is
  Zipfian, so most tokens hit), each already spread into 64 16-bit counters (`_token_lanes`),
  so a page's bit counts are one big-integer sum of its tokens' entries. The cache is
  cleared when full, which changes nothing but speed;
- a page with more than `_MAX_FEATURES` distinct tokens is sampled: only features whose
  hash is below a threshold scaled to keep ~`_MAX_FEATURES` of them count. The sample is
  chosen by content, so near-identical pages sample near-identical sets.
"""

from __future__ import annotations

import re
from collections import Counter
from hashlib import blake2b
from itertools import compress
from typing import TYPE_CHECKING, NamedTuple

from trawl.parse.links import decode_html, parse_html
from trawl.parse.main_text import (
    body_start,
    prose,
    prose_blocks,
    window_at,
    window_blocks,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, KeysView

    from selectolax.lexbor import LexborHTMLParser

__all__ = [
    "MIN_PROSE_TOKENS",
    "MainText",
    "fingerprint_tree",
    "format_simhash",
    "hamming",
    "main_text",
    "main_text_fingerprint",
    "shape_of_tree",
    "simhash_of_text",
    "text_fingerprint",
]

_CHROME_TAGS = ["script", "style", "noscript", "template", "nav", "footer", "svg"]
# The main text is looked for in a 32 KiB window from the page's <body> (heads can be all
# inline script): the simhash reads only the first 3,072 characters of prose, and the
# main-content pass costs in proportion to its input. On bench/news_pages.py (~100 KB
# pages, 23 KB heads) windows of 16 KiB or more give the same fingerprints and 12 KiB does
# not, so 32 KiB keeps a 2x margin; on the bench web it costs 0.64 ms a page against
# 1.03 ms for 64 KiB and 1.79 ms for whole pages. `main_text` tries a smaller window first
# where the site's last page showed one suffices (issue 17): same answers, and the
# main-text step fell from 1.87 to 1.33 ms a page on news_pages' pages (20 KiB windows)
# and process_page from 2.92 to 2.30 ms on the quick bench web's (bench/page_work_bench.py).
_MAX_MAIN_HTML_BYTES = 32 * 1024
_MAX_TEXT_CHARS = 3_072  # ~500 words: enough to tell near-copies; cost grows with it
_MAX_FEATURES = 512
_MAX_WEIGHT = 8
_CACHE_LIMIT = 50_000  # ~12 MB per process at worst
# token -> `_token_lanes(token)`, a 1024-bit int (~170 bytes).
_lanes_cache: dict[str, int] = {}
# A byte's 8 bits spread into 8 16-bit counters (bit j in counter j), for each byte value.
_SPREAD_BYTE = [
    b"".join((byte >> j & 1).to_bytes(2, "little") for j in range(8)) for byte in range(256)
]
_TOP_BITS = int.from_bytes(b"\x00\x80" * 64, "little")
_TOP_BIT_TO_DIGIT = bytes.maketrans(b"\x00\x80", b"01")
_SPACE = 1 << 64
_LETTER_WORDS = re.compile(r"[^\W\d_]{2,}")  # words of 2+ letters: ids' stray letters drop out
# Below this many prose tokens a near-duplicate match means little: on 50-token texts a
# one-word edit already moves ~2 bits (p90: 4), and short texts of a small vocabulary
# collide (bench/extract_bench.py prints the figures).
MIN_PROSE_TOKENS = 50


def _visible_text(tree: LexborHTMLParser) -> str:
    tree.strip_tags(_CHROME_TAGS)
    body = tree.body
    if body is None:
        return ""
    return body.text(separator=" ")


def _token_digest(token: str) -> bytes:
    return blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def _token_hash(token: str) -> int:
    return int.from_bytes(_token_digest(token), "big")


def _token_lanes(token: str) -> int:
    """The token's 64-bit hash spread into 64 counters of 16 bits (bit k in counter k):
    adding these sums each bit over many hashes in one big-integer addition. Read a byte at
    a time from the digest, least significant first (1.2 against 1.7 us a token by bits)."""
    return int.from_bytes(
        b"".join(map(_SPREAD_BYTE.__getitem__, _token_digest(token)[::-1])), "little"
    )


def _feature_lanes(tokens: KeysView[str]) -> list[int]:
    cache = _lanes_cache
    # Not `tokens - cache.keys()`: a set difference with a view walks the whole view, so
    # every page paid for the cache's size (0.66 ms a page at 50,000 tokens, a cache a
    # real web's vocabulary fills in a few thousand pages; the bench web's ~700 words never
    # showed it). This asks the cache about the page's own tokens only.
    missing = [token for token in tokens if token not in cache]
    if len(cache) + len(missing) > _CACHE_LIMIT:
        cache.clear()
        missing = list(tokens)
    for token in missing:
        cache[token] = _token_lanes(token)
    return list(map(cache.__getitem__, tokens))


def _majority_bits(total: int, n: int) -> int:
    """Bit k of the result is set when counter k of `total` (a sum of `n` `_token_lanes`) is
    over half of `n`.

    Adding 0x7FFF - n//2 to every counter carries it into its top bit exactly when it
    exceeds n//2 (n < 0x8000: at most `_MAX_TEXT_CHARS` tokens count); the 64 top bits are
    then read off as text, all in C.
    """
    bias = int.from_bytes((0x7FFF - n // 2).to_bytes(2, "little") * 64, "little")
    flags = ((total + bias) & _TOP_BITS).to_bytes(128, "little")[1::2]
    return int(flags.translate(_TOP_BIT_TO_DIGIT)[::-1], 2)


def shape_of_tree(tree: LexborHTMLParser) -> int:
    """The simhash of the set of letter words (2+ letters) in the page's visible text.

    Digits, punctuation, ids and how often a word occurs drop out, so a calendar's months,
    a shop's facet pages (their link lists name the same facets) and one page re-served
    under many paths share one shape, while a page with text of its own does not. The
    trap alarm compares shapes (frontier.traps). Only the first `2 * _MAX_TEXT_CHARS`
    characters count. 0 when there are no such words. Strips page chrome from the tree.
    """
    text = _visible_text(tree)[: 2 * _MAX_TEXT_CHARS].lower()
    return simhash_of_text(" ".join(set(_LETTER_WORDS.findall(text))))[0]


def text_fingerprint(html: bytes) -> int:
    """The simhash of the page's visible text; 0 for a page without any text.

    Never raises on bad input (broken markup, binary junk): lexbor recovers like a browser.
    """
    if not html:
        return 0
    return fingerprint_tree(parse_html(html))


def fingerprint_tree(tree: LexborHTMLParser) -> int:
    """`text_fingerprint` of a tree from `parse_html`; it strips page chrome from the tree."""
    return simhash_of_text(_visible_text(tree))[0]


def main_text_fingerprint(body: bytes, decoded: str | bytes | None = None) -> tuple[int, int]:
    """(simhash, prose tokens) of the page's main text, for near-duplicate detection.

    The simhash is taken over the main content's prose (`parse.main_text`). Prose tokens
    are at most ~500 (see `simhash_of_text`); below `MIN_PROSE_TOKENS` a match means
    little, and the simhash is taken over all of the main text's blocks instead, so that
    thin pages (a product, a calendar month) still differ by what text they have. A page
    without any text gives (0, 0). Never raises on bad input. `decoded` is
    `parse.links.decode_html(body)` when the caller has it already.
    """
    simhash, tokens, _ = main_text(body, decoded)
    return simhash, tokens


class MainText(NamedTuple):
    simhash: int
    tokens: int
    # A window that held this page's prose with a block to spare, in bytes from <body>
    # (0 when unknown): the first try for the next page of the same template.
    window_hint: int


def main_text(body: bytes, decoded: str | bytes | None = None, *, first_try: int = 0) -> MainText:
    """`main_text_fingerprint`, trying a `first_try` window before the full one.

    The main-content pass costs in proportion to its input, and most of the 32 KiB window
    is past the prose the simhash reads on many templates. When the complete blocks of the
    smaller window (all but its last, which the window may have cut) already hold the
    `_MAX_TEXT_CHARS` the simhash reads, the answer is the full window's, and the full pass
    is skipped; otherwise it runs as before, so the answer never depends on `first_try`.
    """
    if not body:
        return MainText(0, 0, 0)
    if decoded is None:
        decoded = decode_html(body)
    start = body_start(decoded)
    if 0 < first_try < min(_MAX_MAIN_HTML_BYTES, len(decoded) - start):
        blocks = window_blocks(window_at(decoded, start, first_try))[:-1]
        text = prose(blocks, _MAX_TEXT_CHARS)
        if len(text) >= _MAX_TEXT_CHARS:
            simhash, tokens = simhash_of_text(text)
            if tokens >= MIN_PROSE_TOKENS:
                return MainText(simhash, tokens, first_try)
    window = window_at(decoded, start, _MAX_MAIN_HTML_BYTES)
    blocks = window_blocks(window)
    kept = prose_blocks(blocks, _MAX_TEXT_CHARS)
    simhash, tokens = simhash_of_text("\n".join(kept))
    if tokens < MIN_PROSE_TOKENS:
        return MainText(simhash_of_text("\n".join(blocks))[0], tokens, 0)
    return MainText(simhash, tokens, _window_hint(window, kept))


# 1 KiB steps, not 4: the main-content pass costs in proportion to its window. The same
# hints at 4 KiB steps cost 0.53 ms a page on the quick bench web's pages and 1.57-2.16 ms
# on news_pages' (a site's pages in order, bench numbers in bench/RESULTS.md), at 1 KiB
# 0.46 and 1.23-1.67 ms, with 8 first tries of 2,400 and 228 falling short (3 and 6 before).
_HINT_STEP = 1024


def _window_hint(window: str | bytes, kept: list[str]) -> int:
    """A window holding the prose's last block and some of the next: where a few words of
    that block appear in the markup, plus twice its length for inline tags and entities,
    in whole `_HINT_STEP`s; 0 when its words are not found as written (or the prose is
    short: then every window must be tried in full anyway)."""
    if sum(len(block) + 1 for block in kept) <= _MAX_TEXT_CHARS:
        return 0
    last = kept[-1]
    words = last.split()
    for i in range(0, min(len(words) - 2, 12), 3):
        snippet = " ".join(words[i : i + 3])
        at = window.find(snippet.encode()) if isinstance(window, bytes) else window.find(snippet)
        if at >= 0:
            end = at + 2 * len(last) + _HINT_STEP
            hint = -(-end // _HINT_STEP) * _HINT_STEP
            return hint if hint < _MAX_MAIN_HTML_BYTES else 0
    return 0


def simhash_of_text(text: str) -> tuple[int, int]:
    """(simhash, tokens) of plain text: the fingerprint and how many words it was taken over.

    Only the first `_MAX_TEXT_CHARS` characters count, so `tokens` is at most ~500. The
    simhash is 0 when there are no tokens.
    """
    words = text[:_MAX_TEXT_CHARS].lower().split()
    counts = Counter(words)
    if not counts:
        return 0, 0
    lanes = _feature_lanes(counts.keys())
    repeats: Iterable[int] = counts.values()
    if len(lanes) > _MAX_FEATURES:
        limit = _SPACE * _MAX_FEATURES // len(lanes)
        kept = [_token_hash(token) < limit for token in counts]
        lanes = list(compress(lanes, kept))
        repeats = list(compress(repeats, kept))
    if not lanes:  # pragma: no cover - only if every hash is above the threshold
        return 0, len(words)
    # Weight each word by how often it occurs (capped), as simhash does: repeated
    # boilerplate then outweighs the few words that differ between near-copies. Unweighted,
    # a short templated page whose links differ by two item numbers came out 5-11 bits
    # from its siblings, past the alarm's threshold. Most words occur once, so their lanes
    # are summed at once and only the repeats are added again.
    total = sum(lanes)
    n = len(lanes)
    for lane, count in zip(lanes, repeats, strict=True):
        if count > 1:
            extra = count - 1 if count <= _MAX_WEIGHT else _MAX_WEIGHT - 1
            total += lane * extra
            n += extra
    return _majority_bits(total, n), len(words)


def hamming(a: int, b: int) -> int:
    """How many of the 64 bits differ between two fingerprints."""
    return (a ^ b).bit_count()


def format_simhash(value: int) -> str:
    """The record form of a fingerprint: 16 lowercase hex digits."""
    return f"{value:016x}"
