"""The fetcher's cheap text checks agree with their plain definitions (issue 17 made them
cheaper; these hold them to what the slower spelling meant)."""

from __future__ import annotations

import ipaddress

from hypothesis import given
from hypothesis import strategies as st

from trawl.fetch.dns import _parse_ip
from trawl.fetch.http_common import is_plain_ascii as _is_plain_ascii

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


def _parse_ip_as_it_was(text: str) -> str | None:
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


_ADDRESS_TEXT = st.one_of(
    st.ip_addresses().map(str),
    st.ip_addresses(v=6).map(lambda ip: f"[{ip}]"),
    st.text(alphabet="0123456789abcdefx.:[]%-"),
    st.from_regex(r"[a-z0-9-]{1,12}(\.[a-z0-9-]{1,12}){0,3}\.?", fullmatch=True),
)


@given(_ADDRESS_TEXT)
def test_parse_ip_skips_only_texts_that_are_no_address(text: str) -> None:
    assert _parse_ip(text) == _parse_ip_as_it_was(text)


def test_parse_ip_examples() -> None:
    assert _parse_ip("127.0.0.1") == "127.0.0.1"
    assert _parse_ip("[::1]") == "::1"
    assert _parse_ip("0:0::1") == "::1"
    assert _parse_ip("site-1.test") is None
    assert _parse_ip("1.2.3.4a") is None
    assert _parse_ip("") is None
