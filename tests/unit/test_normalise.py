"""The URL normaliser: examples for each rule, and hypothesis properties."""

from __future__ import annotations

import hashlib
import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trawl.errors import InvalidUrl
from trawl.urls.normalise import DEFAULT_RULES, NormaliseRules, normalise_url, url_hash


def test_five_spellings_of_one_page_fold_into_one() -> None:
    spellings = [
        "http://example.com/news/story?b=2&a=1",
        "HTTP://EXAMPLE.COM:80/news/story?a=1&b=2",
        "http://example.com/news/./extra/../story?a=1&b=2#comments",
        "http://example.com/news/story?utm_source=feed&a=1&b=2&gclid=abc",
        "  http://Example.com./%6Eews/story?a=1&b=2&utm_medium=email  ",
    ]
    assert {normalise_url(s) for s in spellings} == {"http://example.com/news/story?a=1&b=2"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # scheme and host case, trailing dot, empty path
        ("HTTPS://WWW.Example.COM", "https://www.example.com/"),
        ("http://example.com.", "http://example.com/"),
        # default ports dropped, others kept, empty port ignored
        ("http://example.com:80/", "http://example.com/"),
        ("https://example.com:443/", "https://example.com/"),
        ("http://example.com:443/", "http://example.com:443/"),
        ("https://example.com:80/", "https://example.com:80/"),
        ("http://example.com:8080/x", "http://example.com:8080/x"),
        ("http://example.com:/x", "http://example.com/x"),
        # userinfo and fragment dropped
        ("http://user:secret@example.com/a#frag", "http://example.com/a"),
        # dot segments (RFC 3986 §5.2.4)
        ("http://example.com/a/b/c/./../../g", "http://example.com/a/g"),
        ("http://example.com/../../x", "http://example.com/x"),
        ("http://example.com/a/b/..", "http://example.com/a/"),
        ("http://example.com/a/.", "http://example.com/a/"),
        ("http://example.com/a/%2E%2e/b", "http://example.com/b"),
        ("http://example.com/a//b", "http://example.com/a//b"),
        # percent-encoding: uppercase hex, decode unreserved, keep reserved escaped
        ("http://example.com/%7euser/%2fx%3a", "http://example.com/~user/%2Fx%3A"),
        ("http://example.com/%41%42c", "http://example.com/ABc"),
        ("http://example.com/a b", "http://example.com/a%20b"),
        ("http://example.com/caf\u00e9?q=\u00e9", "http://example.com/caf%C3%A9?q=%C3%A9"),
        ("http://example.com/100%", "http://example.com/100%25"),
        ("http://example.com/%zz", "http://example.com/%25zz"),
        ('http://example.com/"<>`{}|^', "http://example.com/%22%3C%3E%60%7B%7D%7C%5E"),
        ("http://example.com/a+b;c=d,e", "http://example.com/a+b;c=d,e"),
        # query: tracking and session params out, rest sorted, empty query dropped
        ("http://example.com/?utm_source=x&utm_CAMPAIGN=y", "http://example.com/"),
        ("http://example.com/?UTM_Source=x&q=1", "http://example.com/?q=1"),
        ("http://example.com/?gclid=1&fbclid=2&msclkid=3&q=1", "http://example.com/?q=1"),
        ("http://example.com/?PHPSESSID=abc&sid=1&q=1", "http://example.com/?q=1"),
        ("http://example.com/?", "http://example.com/"),
        ("http://example.com/?&&", "http://example.com/"),
        ("http://example.com/?b=1&a=2&a=1", "http://example.com/?a=1&a=2&b=1"),
        ("http://example.com/?a=&a&b", "http://example.com/?a&a=&b"),
        ("http://example.com/?a-b=1&a=2", "http://example.com/?a=2&a-b=1"),
        ("http://example.com/?q=a%2bb&x=%2F", "http://example.com/?q=a%2Bb&x=%2F"),
        ("http://example.com/?utm%5Fsource=x&k=v", "http://example.com/?k=v"),
        ("http://example.com/?q=a b", "http://example.com/?q=a%20b"),
        ("http://example.com/p?x=1?y", "http://example.com/p?x=1?y"),
        # session ids as path parameters
        ("http://example.com/cart;jsessionid=ABC123", "http://example.com/cart"),
        ("http://example.com/a;JSESSIONID=1;v=2/b", "http://example.com/a;v=2/b"),
        ("http://example.com/a;v=2", "http://example.com/a;v=2"),
        # whitespace inside and around, as browsers do
        ("\t http://exa\nmple.com/a\r\nb \n", "http://example.com/ab"),
        ("http://example.com/a\\b", "http://example.com/a/b"),
        # IDNA: UTS #46 mapping, punycode lowercase
        ("http://B\u00fccher.de/", "http://xn--bcher-kva.de/"),
        ("http://xn--BCHER-KVA.de/", "http://xn--bcher-kva.de/"),
        ("http://\u4f8b\u3048.\u30c6\u30b9\u30c8/", "http://xn--r8jz45g.xn--zckzah/"),
        ("http://ex%41mple.com/", "http://example.com/"),
        # IP literals
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/"),
        ("http://[::1]/", "http://[::1]/"),
        ("http://[2001:DB8:0:0:0:0:0:1]:8443/", "http://[2001:db8::1]:8443/"),
        ("http://under_score.example.com/", "http://under_score.example.com/"),
    ],
)
def test_absolute_examples(raw: str, expected: str) -> None:
    assert normalise_url(raw) == expected
    assert normalise_url(expected) == expected


BASE = "http://a.example/b/c/d;p?q"


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        # RFC 3986 §5.4.1 normal examples (params in the base path survive: not session ids)
        ("g", "http://a.example/b/c/g"),
        ("./g", "http://a.example/b/c/g"),
        ("g/", "http://a.example/b/c/g/"),
        ("/g", "http://a.example/g"),
        ("//g", "http://g/"),
        ("?y", "http://a.example/b/c/d;p?y"),
        ("g?y", "http://a.example/b/c/g?y"),
        ("#s", "http://a.example/b/c/d;p?q"),
        ("g#s", "http://a.example/b/c/g"),
        (";x", "http://a.example/b/c/;x"),
        ("", "http://a.example/b/c/d;p?q"),
        (".", "http://a.example/b/c/"),
        ("..", "http://a.example/b/"),
        ("../g", "http://a.example/b/g"),
        ("../..", "http://a.example/"),
        ("../../../g", "http://a.example/g"),
        # §5.4.2 abnormal examples
        ("/./g", "http://a.example/g"),
        ("g.", "http://a.example/b/c/g."),
        ("..g", "http://a.example/b/c/..g"),
        ("./../g", "http://a.example/b/g"),
        ("g/../h", "http://a.example/b/c/h"),
        # "?" alone replaces the base query with an empty one, which is then dropped
        ("?", "http://a.example/b/c/d;p"),
        # same-scheme "http:g" is relative, as browsers read it
        ("http:g", "http://a.example/b/c/g"),
        ("https://other.example/x", "https://other.example/x"),
        ("HTTP://OTHER.example", "http://other.example/"),
        ("  ../g  ", "http://a.example/b/g"),
        ("\\\\other.example\\x", "http://other.example/x"),
    ],
)
def test_relative_examples(ref: str, expected: str) -> None:
    assert normalise_url(ref, BASE) == expected


def test_base_without_path_and_relative_ref() -> None:
    assert normalise_url("x", "http://example.com") == "http://example.com/x"
    assert normalise_url("?a=1", "https://example.com") == "https://example.com/?a=1"


@pytest.mark.parametrize(
    "raw",
    [
        "mailto:someone@example.com",
        "javascript:void(0)",
        "data:text/html,hi",
        "ftp://example.com/file",
        "file:///etc/passwd",
        "tel:+123",
        "example.com/no-scheme",
        "",
        "   ",
        "http://",
        "http:///path",
        "http://:80/",
        "http://example.com:99999/",
        "http://example.com:8o/",
        "http://example.com:-1/",
        "http://exa mple.com/",
        "http://exa<mple.com/",
        "http://a..b/",
        "http://" + "a" * 64 + ".com/",
        "http://999.1.1.1/",
        "http://1.2.3/",
        "http://[::1/",
        "http://[zz::1]/",
        "http://::1/",
        "http://a\u200b\u0000.com/",
        "http://example.com/" + "a" * 2100,
    ],
)
def test_invalid_urls_raise_invalid_url_naming_the_value(raw: str) -> None:
    with pytest.raises(InvalidUrl) as info:
        normalise_url(raw)
    assert repr(raw.strip()[:20])[1:-1] in str(info.value) or "characters" in str(info.value)


def test_relative_without_base_raises() -> None:
    with pytest.raises(InvalidUrl, match="not an http"):
        normalise_url("/just/a/path")


def test_non_http_base_raises_for_relative_refs() -> None:
    with pytest.raises(InvalidUrl, match="base"):
        normalise_url("x", "ftp://example.com/")


def test_max_length_is_a_rule() -> None:
    rules = NormaliseRules(max_length=40)
    assert normalise_url("http://example.com/" + "a" * 21, rules=rules)
    with pytest.raises(InvalidUrl, match="over 40"):
        normalise_url("http://example.com/" + "a" * 22, rules=rules)


def test_rules_from_config_lists_compare_case_insensitively() -> None:
    rules = NormaliseRules.from_config(
        tracking_params=["Ref"], tracking_prefixes=["PK_"], session_params=["Token"]
    )
    url = "http://example.com/a;TOKEN=1?ref=x&pk_campaign=y&utm_source=z&gclid=1"
    assert normalise_url(url, rules=rules) == "http://example.com/a?gclid=1&utm_source=z"
    assert rules.is_dropped("REF")
    assert not rules.is_dropped("q")


def test_rules_from_config_keeps_defaults_for_missing_lists() -> None:
    assert NormaliseRules.from_config() == DEFAULT_RULES
    assert "gclid" in DEFAULT_RULES.tracking_params
    assert "jsessionid" in DEFAULT_RULES.session_params


def test_url_hash_is_32_hex_of_sha256() -> None:
    expected = hashlib.sha256(b"http://example.com/").hexdigest()[:32]
    assert url_hash("http://example.com/") == expected == "2a1b402420ef46577471cdc7409b0fa2"
    assert url_hash("http://example.com/") != url_hash("http://example.com/a")


# -- properties ---------------------------------------------------------------------------

_HOST_LABEL = st.text(string.ascii_letters + string.digits + "-_", min_size=1, max_size=12)
_UNICODE_LABEL = st.text(
    st.characters(min_codepoint=0x61, max_codepoint=0x4FFF, exclude_categories=("Cs",)),
    min_size=1,
    max_size=8,
)
_HOSTS = st.one_of(
    st.lists(_HOST_LABEL, min_size=1, max_size=4).map(".".join),
    st.lists(_UNICODE_LABEL, min_size=1, max_size=3).map(".".join),
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(lambda ip: f"[{ip}]"),
    st.text(max_size=20),
)
_PIECE = st.text(
    st.characters(exclude_categories=("Cs",)) | st.sampled_from(list("/.%?&=#;:@+ ")),
    max_size=30,
)
_URLS = st.builds(
    lambda scheme, user, host, port, path, query, frag: (
        f"{scheme}://{user}{host}{port}{path}{query}{frag}"
    ),
    st.sampled_from(["http", "https", "HTTP", "hTTps", "ftp"]),
    st.sampled_from(["", "user@", "u:p@"]),
    _HOSTS,
    st.one_of(st.just(""), st.integers(0, 70000).map(lambda p: f":{p}"), st.just(":x")),
    st.one_of(st.just(""), _PIECE.map(lambda p: "/" + p)),
    st.one_of(st.just(""), _PIECE.map(lambda q: "?" + q)),
    st.one_of(st.just(""), _PIECE.map(lambda f: "#" + f)),
)
_BASES = st.sampled_from(["http://example.com/a/b?c=d", "https://[::1]:8443/x/", "http://h"])
_OUTPUT = re.compile(r"https?://([^/?#]+)(/[^?#]*)(\?[^#]*)?\Z")


def _check_output(url: str) -> None:
    match = _OUTPUT.match(url)
    assert match is not None, url
    authority = match.group(1)
    assert authority == authority.lower()
    assert "#" not in url
    assert url.isascii()
    assert len(url) <= DEFAULT_RULES.max_length
    assert normalise_url(url) == url  # idempotent


@settings(max_examples=400, deadline=None)
@given(_URLS)
def test_built_urls_normalise_idempotently_or_raise_invalid_url(raw: str) -> None:
    try:
        url = normalise_url(raw)
    except InvalidUrl:
        return
    _check_output(url)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_PIECE, _URLS, st.text()), _BASES)
def test_relative_refs_normalise_idempotently_or_raise_invalid_url(ref: str, base: str) -> None:
    try:
        url = normalise_url(ref, base)
    except InvalidUrl:
        return
    _check_output(url)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_arbitrary_text_only_ever_raises_invalid_url(raw: str) -> None:
    try:
        url = normalise_url(raw)
    except InvalidUrl:
        return
    _check_output(url)


@given(st.text(max_size=200))
def test_url_hash_is_always_32_lowercase_hex(url: str) -> None:
    assert re.fullmatch(r"[0-9a-f]{32}", url_hash(url))


@given(st.text(st.characters(exclude_categories=("Cs",)), max_size=300))
def test_url_hash_is_hashlib_sha256_for_any_text(url: str) -> None:
    # url_hash takes CPython's own sha256, not hashlib's (OpenSSL): stored keys must not move.
    assert url_hash(url) == hashlib.sha256(url.encode("utf-8")).hexdigest()[:32]


_SPLIT_TEXT = st.one_of(
    st.text(),
    st.text(alphabet="hH:tps/?#@[]:.a1é+-\\%_~! ", max_size=20),
    st.tuples(st.sampled_from(["http://", "//", "a:", "HtTp:", "1a:", "/"]), st.text()).map(
        "".join
    ),
    # Scheme-like starts: which characters before the first ":" make a scheme.
    st.tuples(
        st.text(alphabet="aZé1+-._~!%/", min_size=1, max_size=4),
        st.sampled_from([":", "://", ":/"]),
        st.text(alphabet="h[]:@/?#é", max_size=6),
    ).map("".join),
)


@settings(max_examples=2000, deadline=None)
@given(_SPLIT_TEXT)
def test_split_is_urlsplit_on_cleaned_text(raw: str) -> None:
    """The normaliser's own split (one regex match) against the stdlib's, errors included."""
    from urllib.parse import urlsplit

    from trawl.urls.normalise import _clean, _split

    text = _clean(raw)
    try:
        expected: tuple[str, ...] | None = tuple(urlsplit(text))
    except ValueError:
        expected = None
    try:
        got: tuple[str, ...] | None = _split(text, raw)
    except InvalidUrl:
        got = None
    assert got == expected


# Texts near the fast path's edge: plain links, and the characters that must send one to
# the full path (case, escapes, spaces and controls, "//", ":", "@", "[", "\\", ";").
_NEAR_PLAIN = st.one_of(
    st.tuples(
        st.sampled_from(["http://", "https://", "HTTP://", "http:", "//", "/", "", "./", "../"]),
        st.text(alphabet="aZ09.-_~/?=&#:%@[]\\; \t\né", max_size=24),
    ).map("".join),
    _URLS,
    _PIECE,
)
_FAST_BASES = st.sampled_from(
    [
        "http://example.com/a/b?c=d",
        "https://[::1]:8443/x/",
        "http://h",
        "http://H.test:80/%7eu/a;jsessionid=1/p",
        "mailto:x@y",
        "",
    ]
)


def _outcome(fn, *args):  # type: ignore[no-untyped-def]
    try:
        return fn(*args)
    except InvalidUrl as exc:
        return ("InvalidUrl", str(exc))


@settings(max_examples=3000, deadline=None)
@given(_NEAR_PLAIN, st.one_of(st.none(), _FAST_BASES))
def test_issue_17_the_fast_path_answers_as_the_full_one(raw: str, base: str | None) -> None:
    """`normalise_url`'s one-match fast path against the full clean-split-resolve path:
    the same URL, or the same InvalidUrl message."""
    from trawl.urls.normalise import _normalise_any

    short = NormaliseRules(max_length=40)
    for rules in (DEFAULT_RULES, short):
        fast = _outcome(normalise_url, raw, base, rules)
        assert fast == _outcome(_normalise_any, raw, base, rules), (raw, base)


def test_issue_17_usual_links_take_the_fast_path() -> None:
    from trawl.urls.normalise import _PLAIN

    usual = [
        "../sec2/p7.html",
        "/sec3/p3.html",
        "p41.html?utm_source=x&utm_medium=y",
        "http://S01691.BENCH/sec3/p28.html#s2",
        "http://s01691.bench:80/sec3/p8.html",
    ]
    for href in usual:
        assert _PLAIN.match(href) is not None, href
