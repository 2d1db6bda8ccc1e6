"""The SSRF guard: refuse to connect to addresses that are not on the public internet.

The check runs on the *resolved* address, after DNS, so a public-looking name that points at
127.0.0.1 or 10.0.0.5 is refused too (DNS rebinding of a crawled link into our own network).
Names the operator mapped with --resolve / --hosts-file are trusted: that is how the local
test web is crawled. Addresses that embed an IPv4 address (IPv4-mapped, 6to4, NAT64) are
judged by the embedded address, so ::ffff:127.0.0.1 is loopback.

`network.allow_networks`, when set, is a second and stricter gate: an address outside every
listed network is refused whatever else is true (mapped names and --allow-private included),
so a crawler under test can be held to loopback even when fed arbitrary URLs.
"""

from __future__ import annotations

import functools
import ipaddress
from typing import TYPE_CHECKING

from trawl.errors import BlockedAddress, ConfigError

if TYPE_CHECKING:
    from collections.abc import Sequence

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# RFC 6052 well-known NAT64 prefix: the last 32 bits are an IPv4 address.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")

# Refused whatever this Python's `is_global` says (its tables changed between 3.11 patch
# releases): IETF protocol assignments, benchmarking, CGNAT, local-use NAT64 (RFC 8215).
_ALWAYS_BLOCKED = (
    ipaddress.IPv4Network("192.0.0.0/24"),
    ipaddress.IPv4Network("198.18.0.0/15"),
    ipaddress.IPv4Network("100.64.0.0/10"),
    ipaddress.IPv6Network("64:ff9b:1::/48"),
)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _is_public(ip: IPAddress) -> bool:
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.teredo is not None:
            return False  # a tunnel endpoint, never a web server we should reach
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            return _is_public(embedded)
        if ip.is_site_local:
            return False
    if any(ip in net for net in _ALWAYS_BLOCKED if net.version == ip.version):
        return False
    # is_global alone is not enough: multicast (224/4, ff0e::/16) counts as global.
    return ip.is_global and not (
        ip.is_multicast
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_private
        or ip.is_reserved
        or ip.is_unspecified
    )


# Cached: a crawl asks about the same addresses page after page (twice a page: when the
# host is resolved and again when the fetch starts), and parsing one and walking the tables
# costs ~16 us. The answer depends on the text alone.
@functools.lru_cache(maxsize=4096)
def is_public_address(ip: str) -> bool:
    """True if `ip` is a unicast address on the public internet; False for non-IP text.

    False for loopback, private (RFC 1918, fc00::/7), shared CGNAT (100.64/10), link-local,
    multicast, unspecified, reserved and documentation ranges, and for IPv6 forms that embed
    one of those.
    """
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False
    return _is_public(address)


def parse_networks(texts: Sequence[str], where: str) -> tuple[IPNetwork, ...]:
    """CIDR texts ("127.0.0.0/8", "::1/128"; a bare IP is a /32 or /128) as networks.

    Raises ConfigError naming `where` and the text, also for host bits set below the prefix
    ("127.0.0.1/8"), which is more often a typo than a meant network.
    """
    networks = []
    for text in texts:
        try:
            networks.append(ipaddress.ip_network(text.strip(), strict=True))
        except ValueError as exc:
            raise ConfigError(f"{where}: {text!r} is not a CIDR network ({exc})") from None
    return tuple(networks)


def is_in_networks(ip: str, networks: Sequence[IPNetwork]) -> bool:
    """True if `ip` lies in one of `networks`; False for non-IP text.

    An IPv4-mapped IPv6 address is judged by its IPv4 address, since that is the host a
    dual-stack socket reaches. 6to4 and NAT64 forms are judged as they are: they reach a
    gateway, not the embedded address.
    """
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False
    candidates: list[IPAddress] = [address]
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        candidates.append(address.ipv4_mapped)
    return any(a in net for a in candidates for net in networks if net.version == a.version)


def check_address(
    host: str,
    ip: str,
    *,
    mapped: bool,
    allow_private: bool,
    allow_networks: Sequence[IPNetwork] = (),
) -> None:
    """Raise BlockedAddress unless `ip` is public, `host` was mapped, or private is allowed;
    and, when `allow_networks` is not empty, unless `ip` lies in one of them."""
    if allow_networks and not is_in_networks(ip, allow_networks):
        raise BlockedAddress(f"{host} resolved to {ip}, which is outside network.allow_networks")
    if mapped or allow_private or is_public_address(ip):
        return
    where = ip if host == ip else f"{host} resolved to {ip}, which"
    raise BlockedAddress(f"{where} is not a public address ({_kind(ip)})")


def _kind(ip: str) -> str:
    """What kind of non-public address `ip` is, for the refusal's message (issue 14)."""
    address = ipaddress.ip_address(ip)
    if isinstance(address, ipaddress.IPv6Address):
        address = _embedded_ipv4(address) or address
    for kind in ("loopback", "link_local", "multicast", "unspecified", "private", "reserved"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    return "not globally routable"
