"""Registered domain ("site") and origin of a host or normalised URL.

A site is the registered domain: the public suffix plus one label (`news.bbc.co.uk` ->
`bbc.co.uk`), so a site with thousands of subdomains is one site for politeness. The public
suffix list is the copy bundled with `publicsuffixlist` (private section included, so
`foo.blogspot.com` is its own site); it is never downloaded at run time. A TLD the list does
not know counts as a suffix (`site17.test` -> `site17.test`), as the list's `*` rule says.

An origin is "scheme://host[:port]", a port other than the scheme's default written out:
robots.txt applies per origin (RFC 9309 §2.3), and http://example.com and
http://example.com:8080 are different ones.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList

from trawl.errors import InvalidUrl

__all__ = ["host_of", "origin_of", "registered_domain", "site_of", "site_of_normalised"]

# Built once at import from the bundled list (~50 ms); PublicSuffixList() never downloads.
_PSL = PublicSuffixList()
_DEFAULT_PORTS = {"http": 80, "https": 443}
# The authority as the normaliser writes it, and as nearly every URL the crawl loop handles
# is: a lowercase scheme, a host of lowercase letters, digits, dots and hyphens, no port or
# userinfo, then the path, query, fragment or the end. urlsplit gives such a URL's scheme
# and host as they stand and no port; the match costs ~0.5 us against ~2.5 for urlsplit
# with its `port` and `hostname` (a handful of calls a page on the crawl loop, issue 17).
_PLAIN_AUTHORITY = re.compile(r"(https?)://([a-z0-9.\-]+)(?=[/?#]|\Z)")


def _is_ip_literal(host: str) -> bool:
    if host.startswith("[") or ":" in host:
        return True
    if not host.rpartition(".")[2].isdigit():
        return False
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True


@lru_cache(maxsize=65536)
def registered_domain(host: str) -> str:
    """The registered domain of a lowercase `host`.

    An IP literal is its own site; a host that is itself a public suffix (`co.uk`) too.
    """
    host = host.rstrip(".")
    if _is_ip_literal(host):
        return host
    private: str | None = _PSL.privatesuffix(host)
    return host if private is None else private


def _split_authority(url: str) -> tuple[str, str, int]:
    plain = _PLAIN_AUTHORITY.match(url)
    if plain is not None:
        scheme, host = plain.groups()
        return scheme, host, _DEFAULT_PORTS[scheme]
    return _split_any_authority(url)


def _split_any_authority(url: str) -> tuple[str, str, int]:
    """`_split_authority` of any URL, by urlsplit (also the fast path's reference)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidUrl(f"{url!r} is not a valid URL: {exc}") from None
    host = parts.hostname
    if parts.scheme not in _DEFAULT_PORTS or not host:
        raise InvalidUrl(f"{url!r} is not an absolute http(s) URL")
    return parts.scheme, host, _DEFAULT_PORTS[parts.scheme] if port is None else port


def host_of(url: str) -> str:
    """The lowercase host of an http(s) URL, without brackets for IPv6 ("::1").

    Raises InvalidUrl if the URL has no http(s) scheme or host.
    """
    return _split_authority(url)[1]


def origin_of(url: str) -> str:
    """The origin "scheme://host[:port]", default ports left out ("http://example.com").

    robots.txt applies per origin (RFC 9309 2.3); this is the key of its cache.
    """
    scheme, host, port = _split_authority(url)
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}" if port == _DEFAULT_PORTS[scheme] else f"{scheme}://{host}:{port}"


def site_of(url: str) -> str:
    """The site (registered domain) a URL belongs to: `registered_domain(host_of(url))`."""
    return registered_domain(host_of(url))


def site_of_normalised(url: str) -> str:
    """`site_of` for a URL that came out of `normalise_url`, without parsing it again.

    Normalised URLs have no userinfo, a lowercase host and a path, so the authority is the
    text between "//" and the next "/". On the hot path (50 links a page) this halves the
    cost of finding each link's site.
    """
    start = url.index("//") + 2
    end = url.find("/", start)
    return _site_of_authority(url[start:end] if end >= 0 else url[start:])


@lru_cache(maxsize=65536)
def _site_of_authority(authority: str) -> str:
    if authority.startswith("["):
        return registered_domain(authority[1 : authority.index("]")])
    return registered_domain(authority.rsplit(":", 1)[0] if ":" in authority else authority)
