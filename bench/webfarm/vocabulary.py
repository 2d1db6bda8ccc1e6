"""Words drawn as a real web's are, for benchmarks: a Zipf law (s = 1) over two million
made-up words, so ~75 % of the words of a page are among the 50,000 most common and the
rest keep bringing words never seen before (names, numbers, typos, other languages).

The test web's own prose (trawl.testweb.text) draws from a few hundred words: right for
parsers, compressors and near-duplicate tests, but a cost that grows with a crawl's
vocabulary (the simhash's token cache, parse/fingerprint.py) never shows on it.
"""

from __future__ import annotations

import itertools
from functools import cache
from typing import TYPE_CHECKING

from trawl.testweb.text import _NUCLEI, _ONSETS  # the test web's made-up words' syllables

if TYPE_CHECKING:
    import random

VOCABULARY = 2_000_000


def word(rank: int) -> str:
    """A pronounceable made-up word, one per rank (shorter for the common ones)."""
    parts = []
    while True:
        rank, onset = divmod(rank, len(_ONSETS))
        rank, nucleus = divmod(rank, len(_NUCLEI))
        parts.append(_ONSETS[onset] + _NUCLEI[nucleus])
        if not rank:
            return "".join(parts)


@cache
def _cumulative() -> list[float]:
    return list(itertools.accumulate(1 / r for r in range(1, VOCABULARY + 1)))


def zipf_words(rng: random.Random, n: int) -> list[str]:
    """`n` words drawn from the Zipf law."""
    ranks = rng.choices(range(VOCABULARY), cum_weights=_cumulative(), k=n)
    return list(map(word, ranks))


def zipf_paragraph(rng: random.Random) -> str:
    """4-9 sentences of 6-18 Zipf words each."""
    sentences = []
    for _ in range(rng.randint(4, 9)):
        words = zipf_words(rng, rng.randint(6, 18))
        sentences.append(" ".join(words).capitalize() + ".")
    return " ".join(sentences)
