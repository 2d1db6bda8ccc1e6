"""The fetcher's cheap text checks agree with their plain definitions (issue 17 made them
cheaper; these hold them to what the slower spelling meant)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from trawl.fetch.fetcher import _is_plain_ascii

# Mostly ASCII, with the edges that matter: controls, space, DEL, Latin-1 and beyond.
_URL_TEXT = st.text(
    st.one_of(
        st.characters(min_codepoint=0, max_codepoint=0x7F),
        st.sampled_from(["\x00", "\x1f", " ", "\x7f", "\x80", "\xa0", "é", "\u2028", "😀"]),
    )
)


@given(_URL_TEXT)
def test_plain_ascii_means_every_character_between_33_and_126(text: str) -> None:
    assert _is_plain_ascii(text) == all(33 <= ord(c) < 127 for c in text)


def test_plain_ascii_examples() -> None:
    assert _is_plain_ascii("http://a.test/p?q=1&r=%C3%A9")
    assert not _is_plain_ascii("http://a.test/a b")
    assert not _is_plain_ascii("http://a.test/\x7f")
    assert not _is_plain_ascii("http://a.test/é")
