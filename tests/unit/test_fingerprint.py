from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trawl.parse.fingerprint import format_simhash, hamming, text_fingerprint

_VOCABULARY = [f"word{i}" for i in range(5000)]
EXPECTED_FOX = "1ad0837090563a37"  # pinned: a change breaks stored simhashes


def _page(seed: int, body_words: int = 400, extra: str = "") -> bytes:
    """A templated page: the same chrome around `body_words` words drawn from `seed`."""
    rng = random.Random(seed)
    text = " ".join(rng.choice(_VOCABULARY) for _ in range(body_words))
    return (
        "<!DOCTYPE html><html><head><title>Site</title><style>p{color:red}</style></head>"
        "<body><nav><a href=/>Home</a> <a href=/about>About us</a></nav>"
        "<script>var tracking = 'script text is not page text';</script>"
        f"<main><h1>Calendar</h1><p>{text}</p><p>{extra}</p></main>"
        "<footer>Copyright footer text</footer></body></html>"
    ).encode()


def test_pages_differing_by_one_number_are_within_three_bits() -> None:
    a = text_fingerprint(_page(1, extra="Events on 2026-11-30: none"))
    b = text_fingerprint(_page(1, extra="Events on 2026-12-01: none"))
    assert hamming(a, b) <= 3


def test_calendar_pages_of_one_template_are_within_three_bits() -> None:
    def calendar(month: int) -> bytes:
        days = " ".join(f"<td>{d}</td>" for d in range(1, 31))
        chrome = " ".join(_VOCABULARY[:300])
        return (
            f"<html><body><div>{chrome}</div><h1>Month {month} of 2026</h1>"
            f"<table><tr>{days}</tr></table><a href=?m={month + 1}>next</a></body></html>"
        ).encode()

    base = text_fingerprint(calendar(1))
    assert all(hamming(base, text_fingerprint(calendar(m))) <= 3 for m in range(2, 40))


def test_unrelated_pages_are_far_apart() -> None:
    prints = [text_fingerprint(_page(seed)) for seed in range(20)]
    distances = [hamming(a, b) for i, a in enumerate(prints) for b in prints[i + 1 :]]
    assert min(distances) > 10
    assert sum(distances) / len(distances) > 24  # about half of 64 bits


def test_script_style_nav_and_footer_are_not_text() -> None:
    bare = b"<html><body><main><h1>Calendar</h1><p>hello world</p></main></body></html>"
    chrome = (
        b"<html><body><nav>menu items</nav><script>var x = 1;</script><style>p{}</style>"
        b"<main><h1>Calendar</h1><p>hello world</p></main><footer>legal</footer></body></html>"
    )
    assert text_fingerprint(bare) == text_fingerprint(chrome)


def test_large_text_heavy_page_is_sampled_but_stable_and_close_to_its_twin() -> None:
    big = _page(7, body_words=20_000)
    twin = big.replace(b"word17 ", b"word18 ", 1)
    assert len(big) > 100_000
    assert text_fingerprint(big) == text_fingerprint(big)
    assert hamming(text_fingerprint(big), text_fingerprint(twin)) <= 3


def test_values_are_stable_across_calls_and_processes() -> None:
    # A fixed expected value: blake2b is the same everywhere, unlike hash().
    page = b"<html><body><p>The quick brown fox jumps over the lazy dog</p></body></html>"
    assert text_fingerprint(page) == text_fingerprint(page)
    assert format_simhash(text_fingerprint(page)) == EXPECTED_FOX


@pytest.mark.parametrize(
    "html",
    [
        b"",
        b"<html>",
        b"<body></body>",
        b"\x00\xff\xfe binary \x80\x81",
        b"<p>unclosed <b>tags <i>everywhere",
        b"<html><head><title>only a title</title></head></html>",
        "<p>caf\u00e9 \u00fcber na\u00efve</p>".encode("latin-1"),
        b"<script>only script</script>",
    ],
)
def test_broken_or_empty_html_does_not_raise(html: bytes) -> None:
    value = text_fingerprint(html)
    assert 0 <= value < 1 << 64


def test_pages_without_text_are_zero() -> None:
    assert text_fingerprint(b"") == 0
    assert text_fingerprint(b"<html><body><script>x()</script></body></html>") == 0


@given(st.binary(max_size=2000))
def test_any_bytes_give_a_64_bit_value(html: bytes) -> None:
    value = text_fingerprint(html)
    assert 0 <= value < 1 << 64
    assert len(format_simhash(value)) == 16


def test_hamming_and_format() -> None:
    assert hamming(0, 0) == 0
    assert hamming(0, (1 << 64) - 1) == 64
    assert hamming(0b1010, 0b0110) == 2
    assert format_simhash(0) == "0000000000000000"
    assert format_simhash(0xABC) == "0000000000000abc"
    assert format_simhash((1 << 64) - 1) == "ffffffffffffffff"
