"""Filler prose for test-web pages: plausible English-like text, deterministic from a seed.

Pages need real-looking paragraphs (a few KB to ~30 KB) so that parsers, compressors and
near-duplicate fingerprints see something like the web, not `lorem ipsum` repeated.
"""

from __future__ import annotations

import random


def _wordlist(words: str) -> tuple[str, ...]:
    return tuple(words.split())


_NOUNS = _wordlist(
    "river harbour market garden library station bridge valley council museum festival "
    "engine signal network village archive orchard kitchen workshop lighthouse ferry school "
    "theatre bakery forest meadow tunnel railway quarry canal mill chapel castle report "
    "survey study budget season journey recipe method pattern model system process record "
    "index catalogue letter chapter story history map journal weather harvest climate ocean "
    "island mountain desert city street square garden tower"
)
_VERBS = _wordlist(
    "describes explains follows records shows reveals measures compares suggests builds "
    "changes connects covers crosses joins keeps leaves opens reaches returns shapes "
    "supports tracks turns visits watches gathers carries repairs restores improves"
)
_ADJECTIVES = _wordlist(
    "old new quiet busy narrow wide early late small large northern southern eastern "
    "western local remote careful simple detailed brief annual rare common public private "
    "wooden stone bright dark steady sudden gentle modern ancient familiar"
)
_TOPICAL = frozenset(_NOUNS + _ADJECTIVES)  # words a page's topic words stand in for
_CONNECTIVES = _wordlist(
    "meanwhile however therefore later afterwards still indeed besides instead again"
)


# Syllables for topic words: millions of three-syllable pseudo-words, so two pages' topics
# almost never share a word.
_ONSETS = _wordlist("b br c ch d f g gl h j k l m n p pr qu r s st t tr v w z")
_NUCLEI = _wordlist("a e i o u ai ea ou")
_CODAS = ("",) * 4 + _wordlist("n r s l m th")


def topic_words(seed: int, n: int = 32) -> tuple[str, ...]:
    """`n` made-up words that only one page (and its copies) uses, from `seed`.

    The shared vocabulary above is small, so without them two unrelated pages use much the
    same words and their simhashes land a few bits apart, like near-copies.
    """
    rng = random.Random(seed)
    return tuple(
        "".join(rng.choice(_ONSETS) + rng.choice(_NUCLEI) for _ in range(3)) + rng.choice(_CODAS)
        for _ in range(n)
    )


def words(rng: random.Random, n: int) -> str:
    """`n` words of noun phrase, for titles and anchor text."""
    picked = [rng.choice(_ADJECTIVES if i % 2 == 0 else _NOUNS) for i in range(n)]
    return " ".join(picked)


def title(rng: random.Random) -> str:
    return words(rng, rng.randint(2, 4)).title()


def sentence(rng: random.Random, topic: tuple[str, ...] = ()) -> str:
    """One sentence; with `topic`, its nouns and adjectives are drawn from those words instead.

    Without `topic` it draws from `rng` exactly as it always did, so the default web's text
    stays byte for byte the same.
    """
    parts = [
        "The",
        rng.choice(_ADJECTIVES),
        rng.choice(_NOUNS),
        rng.choice(_VERBS),
        "the",
        rng.choice(_ADJECTIVES),
        rng.choice(_NOUNS),
    ]
    if rng.random() < 0.5:
        parts += ["near the", rng.choice(_NOUNS)]
    if rng.random() < 0.3:
        parts = [rng.choice(_CONNECTIVES).capitalize() + ",", "the", *parts[1:]]
    if topic:
        parts = [rng.choice(topic) if word in _TOPICAL else word for word in parts]
    return " ".join(parts) + "."


def paragraph(rng: random.Random, topic: tuple[str, ...] = ()) -> str:
    return " ".join(sentence(rng, topic) for _ in range(rng.randint(4, 9)))
