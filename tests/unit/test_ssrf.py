"""The SSRF guard's address classification and its refusal rule."""

from __future__ import annotations

import pytest

from trawl.errors import BlockedAddress, FetchError
from trawl.fetch.ssrf import check_address, is_public_address

NOT_PUBLIC = [
    "127.0.0.1",
    "127.255.255.254",
    "10.0.0.1",
    "172.16.5.4",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",  # cloud metadata service
    "100.64.0.1",  # CGNAT shared space
    "100.127.255.254",
    "0.0.0.0",
    "0.1.2.3",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "192.0.2.10",  # documentation
    "198.51.100.7",
    "203.0.113.9",
    "198.18.0.1",  # benchmarking
    "192.0.0.8",
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "fd12:3456::1",
    "fec0::1",  # deprecated site-local
    "ff02::1",
    "ff0e::1",  # global-scope multicast is still not a web server
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:10.1.2.3",
    "::ffff:169.254.169.254",
    "2002:7f00:1::",  # 6to4 around 127.0.0.1
    "2002:c0a8:101::1",  # 6to4 around 192.168.1.1
    "64:ff9b::7f00:1",  # NAT64 around 127.0.0.1
    "64:ff9b::a00:1",  # NAT64 around 10.0.0.1
    "64:ff9b:1::1",  # local-use NAT64
    "2001:db8::1",  # documentation
    "2001::1",  # Teredo
    "not an address",
    "",
    "127.1",  # legacy short form is not accepted as an IP at all
]

PUBLIC = [
    "1.1.1.1",
    "8.8.8.8",
    "93.184.216.34",
    "100.63.255.255",  # just below CGNAT
    "100.128.0.1",  # just above CGNAT
    "172.15.255.255",
    "172.32.0.1",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",
    "2002:808:808::1",  # 6to4 around 8.8.8.8
    "64:ff9b::808:808",  # NAT64 around 8.8.8.8
]


@pytest.mark.parametrize("ip", NOT_PUBLIC)
def test_not_public(ip: str) -> None:
    assert not is_public_address(ip)


@pytest.mark.parametrize("ip", PUBLIC)
def test_public(ip: str) -> None:
    assert is_public_address(ip)


def test_check_refuses_private_with_a_clear_message() -> None:
    with pytest.raises(BlockedAddress) as info:
        check_address("evil.example", "127.0.0.1", mapped=False, allow_private=False)
    assert info.value.kind == "blocked_address"
    assert isinstance(info.value, FetchError)
    assert "evil.example resolved to 127.0.0.1" in str(info.value)


def test_check_allows_public_mapped_and_allowed() -> None:
    check_address("example.com", "93.184.216.34", mapped=False, allow_private=False)
    check_address("site.test", "127.0.0.1", mapped=True, allow_private=False)
    check_address("localhost", "127.0.0.1", mapped=False, allow_private=True)
    check_address("meta", "169.254.169.254", mapped=False, allow_private=True)
