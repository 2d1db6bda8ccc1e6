"""Sites (registered domains), hosts and origins."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from trawl.errors import InvalidUrl
from trawl.urls.normalise import normalise_url
from trawl.urls.registered_domain import (
    _PLAIN_AUTHORITY,
    _split_any_authority,
    _split_authority,
    host_of,
    origin_of,
    registered_domain,
    site_of,
    site_of_normalised,
)


@pytest.mark.parametrize(
    ("host", "site"),
    [
        ("example.com", "example.com"),
        ("www.example.com", "example.com"),
        ("a.b.c.example.com", "example.com"),
        ("news.bbc.co.uk", "bbc.co.uk"),
        ("bbc.co.uk", "bbc.co.uk"),
        ("foo.blogspot.com", "foo.blogspot.com"),  # private section of the list
        ("x.foo.blogspot.com", "foo.blogspot.com"),
        ("site17.test", "site17.test"),  # TLD the list does not know
        ("www.site17.test", "site17.test"),
        ("co.uk", "co.uk"),  # a public suffix is its own site
        ("com", "com"),
        ("localhost", "localhost"),
        ("example.com.", "example.com"),
        ("xn--bcher-kva.de", "xn--bcher-kva.de"),
        ("127.0.0.1", "127.0.0.1"),
        ("127.0.3.4", "127.0.3.4"),
        ("::1", "::1"),
        ("[2001:db8::1]", "[2001:db8::1]"),
    ],
)
def test_registered_domain(host: str, site: str) -> None:
    assert registered_domain(host) == site


@pytest.mark.parametrize(
    ("url", "host", "origin", "site"),
    [
        ("http://www.example.com/a", "www.example.com", "http://www.example.com", "example.com"),
        ("https://news.bbc.co.uk/x?y", "news.bbc.co.uk", "https://news.bbc.co.uk", "bbc.co.uk"),
        ("http://example.com:8080/", "example.com", "http://example.com:8080", "example.com"),
        ("https://example.com:80/", "example.com", "https://example.com:80", "example.com"),
        ("HTTPS://Shop.Example:443/a?b", "shop.example", "https://shop.example", "shop.example"),
        ("http://127.0.0.9:1234/", "127.0.0.9", "http://127.0.0.9:1234", "127.0.0.9"),
        ("http://[::1]:8443/p", "::1", "http://[::1]:8443", "::1"),
        ("https://[2001:db8::1]/", "2001:db8::1", "https://[2001:db8::1]", "2001:db8::1"),
    ],
)
def test_host_origin_site_of_url(url: str, host: str, origin: str, site: str) -> None:
    assert host_of(url) == host
    assert origin_of(url) == origin
    assert site_of(url) == site


@pytest.mark.parametrize("url", ["mailto:a@example.com", "/relative", "http:///x", "http://a:x/"])
def test_bad_urls_raise_invalid_url(url: str) -> None:
    with pytest.raises(InvalidUrl):
        origin_of(url)


@given(
    st.sampled_from(
        [
            "http://www.Example.co.uk/a",
            "https://a.b.blogspot.com:8443/x?y",
            "http://[::1]:8080/",
            "http://127.0.0.9:1234/p",
            "https://xn--bcher-kva.example/",
            "http://site0007.test:80/",
        ]
    ),
    st.sampled_from(["", "x/y", "a?b=c", "../z"]),
)
def test_site_of_normalised_agrees_with_site_of(base: str, ref: str) -> None:
    url = normalise_url(ref, base)
    assert site_of_normalised(url) == site_of(url)


# URL-ish text around the fast path's edges: schemes in either case, hosts with and without
# the characters it takes, ports, userinfo, brackets, controls, then any rest.
_SCHEMES = st.sampled_from(["http://", "https://", "HTTP://", "Https://", "ftp://", "http:/", ""])
_HOSTS = st.text(alphabet="abcxyzAZ019.-_@:[]% \t\n\u00e9", min_size=0, max_size=12)
_RESTS = st.text(alphabet="/?#:@a1 \t\n\\.", max_size=8)


@given(_SCHEMES, _HOSTS, _RESTS)
@example("http://", "Shop.Example", "/a")  # urlsplit lowercases the host
@example("http://", "h", "\t/")  # and drops tabs and newlines anywhere
@example("https://", "h.example", ":8443/")
@settings(max_examples=500)
def test_the_plain_authority_fast_path_answers_as_urlsplit_does(
    scheme: str, host: str, rest: str
) -> None:
    url = scheme + host + rest
    try:
        expected = _split_any_authority(url)
    except InvalidUrl:
        with pytest.raises(InvalidUrl):
            _split_authority(url)
        return
    assert _split_authority(url) == expected


def test_the_fast_path_takes_the_normalisers_urls() -> None:
    # Not only a fallback that always runs: the crawl's URLs take the match.
    for url in ("http://www.s00017.bench/sec3/p2.html", "https://a-b.example/?q#f", "http://h"):
        assert _PLAIN_AUTHORITY.match(url) is not None
