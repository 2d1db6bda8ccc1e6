"""A 64-bit simhash of a page's visible text, for spotting near-identical pages (pure).

How this works. The page is parsed with selectolax's lexbor backend (as in `parse.links`),
script, style, nav, footer and similar chrome are dropped, and the body text is split on
whitespace into lowercase tokens; punctuation stays on its word, which costs nothing in
similarity and is ~5x faster than a `\\w+` regex. The features are the distinct tokens.

Each feature gets a 64-bit blake2b hash (stable across processes and machines, unlike
`hash()`, because fingerprints are stored and compared later). Standard simhash: bit i of
the fingerprint is set when more than half of the feature hashes have bit i set. Two pages
whose token sets mostly overlap land a few bits apart; unrelated pages land ~20-32 apart.

Cost bounds, so one ~100 KB page stays under a millisecond:
- only the first `_MAX_TEXT_CHARS` characters of visible text count (a typical article is
  shorter; on a text-heavy page, tokenising the rest cost ~1 ms more). Pages that differ
  only beyond that point come out identical, which errs towards "similar";
- token hashes are cached per process (blake2b is ~300 ns a call; web vocabulary is
  Zipfian, so most tokens hit). The cache is cleared when full, which changes nothing
  but speed;
- a page with more than `_MAX_FEATURES` distinct tokens is sampled: only features whose
  hash is below a threshold scaled to keep ~`_MAX_FEATURES` of them count. The sample is
  chosen by content, so near-identical pages sample near-identical sets.
"""

from __future__ import annotations

from collections import Counter
from hashlib import blake2b
from typing import TYPE_CHECKING

from trawl.parse.links import parse_html

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser

__all__ = ["format_simhash", "hamming", "text_fingerprint"]

_CHROME_TAGS = ["script", "style", "noscript", "template", "nav", "footer", "svg"]
_MAX_TEXT_CHARS = 3_072  # ~500 words: enough to tell near-copies; cost grows with it
_MAX_FEATURES = 512
_MAX_WEIGHT = 8
_CACHE_LIMIT = 50_000  # ~6 MB per process at worst
_hash_cache: dict[str, bytes] = {}
_SPACE = 1 << 64


def _visible_text(tree: LexborHTMLParser) -> str:
    tree.strip_tags(_CHROME_TAGS)
    body = tree.body
    if body is None:
        return ""
    return body.text(separator=" ")


def _feature_hashes(tokens: list[str]) -> list[bytes]:
    cache = _hash_cache
    missing = set(tokens).difference(cache.keys())  # one C-level pass; usually few are new
    if len(cache) + len(missing) > _CACHE_LIMIT:
        cache.clear()
        missing = set(tokens)
    for token in missing:
        cache[token] = blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return list(map(cache.__getitem__, tokens))


def _majority_bits(digests: bytes, n: int) -> int:
    """Bit 8*(7-p)+b of the result is set when most digests have bit b set in byte p.

    Each byte column becomes one big int, so the 64 counts are 64 C-level popcounts of
    masked shifts (4x faster than bytes.translate-and-count).
    """
    out = 0
    half = n // 2
    lanes = int.from_bytes(b"\x01" * n, "little")  # bit 0 of every byte
    for p in range(8):
        column = int.from_bytes(digests[p::8], "little")
        shift = 8 * (7 - p)  # the digests are big-endian
        for b in range(8):
            if ((column >> b) & lanes).bit_count() > half:
                out |= 1 << (shift + b)
    return out


def text_fingerprint(html: bytes) -> int:
    """The simhash of the page's visible text; 0 for a page without any text.

    Never raises on bad input (broken markup, binary junk): lexbor recovers like a browser.
    """
    if not html:
        return 0
    return fingerprint_tree(parse_html(html))


def fingerprint_tree(tree: LexborHTMLParser) -> int:
    """`text_fingerprint` of a tree from `parse_html`; it strips page chrome from the tree."""
    counts = Counter(_visible_text(tree)[:_MAX_TEXT_CHARS].lower().split())
    if not counts:
        return 0
    tokens = list(counts)
    digests = _feature_hashes(tokens)
    if len(digests) > _MAX_FEATURES:
        limit = (_SPACE * _MAX_FEATURES // len(digests)).to_bytes(8, "big")
        kept = [(d, t) for d, t in zip(digests, tokens, strict=True) if d < limit]
        digests, tokens = [d for d, _ in kept], [t for _, t in kept]
    if not digests:  # pragma: no cover - only if every hash is above the threshold
        return 0
    # Weight each word by how often it occurs (capped), as simhash does: repeated
    # boilerplate then outweighs the few words that differ between near-copies. Unweighted,
    # a short templated page whose links differ by two item numbers came out 5-11 bits
    # from its siblings, past the alarm's threshold.
    weighted = [d * min(counts[t], _MAX_WEIGHT) for d, t in zip(digests, tokens, strict=True)]
    return _majority_bits(b"".join(weighted), sum(len(w) for w in weighted) // 8)


def hamming(a: int, b: int) -> int:
    """How many of the 64 bits differ between two fingerprints."""
    return (a ^ b).bit_count()


def format_simhash(value: int) -> str:
    """The record form of a fingerprint: 16 lowercase hex digits."""
    return f"{value:016x}"
