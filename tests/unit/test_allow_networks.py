"""`network.allow_networks`: the destination allowlist on top of the SSRF guard."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from trawl.config import load_settings
from trawl.errors import BlockedAddress, ConfigError
from trawl.fetch.dns import CachingResolver, HostMap
from trawl.fetch.fetcher import AiohttpFetcher, AiohttpResolver
from trawl.fetch.ssrf import check_address, is_in_networks, parse_networks

if TYPE_CHECKING:
    from pathlib import Path

LOOPBACK = parse_networks(["127.0.0.0/8", "::1/128"], "test")


def test_parse_networks_accepts_cidrs_and_bare_addresses() -> None:
    nets = parse_networks(["127.0.0.0/8", " 10.1.0.0/16 ", "::1", "fd00::/8"], "x")
    assert [str(n) for n in nets] == ["127.0.0.0/8", "10.1.0.0/16", "::1/128", "fd00::/8"]


@pytest.mark.parametrize("text", ["127.0.0.1/8", "localhost", "", "300.0.0.0/8", "10.0.0.0/33"])
def test_parse_networks_names_the_bad_entry(text: str) -> None:
    with pytest.raises(ConfigError, match=rf"^where: {text!r} is not a CIDR network"):
        parse_networks(["127.0.0.0/8", text], "where")


@pytest.mark.parametrize(
    ("ip", "inside"),
    [
        ("127.0.0.1", True),
        ("127.45.6.7", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),  # a dual-stack socket reaches 127.0.0.1 itself
        ("1.2.3.4", False),
        ("128.0.0.1", False),
        ("::ffff:1.2.3.4", False),
        ("2002:7f00:1::", False),  # 6to4 goes to a relay, not to the embedded address
        ("64:ff9b::7f00:1", False),  # NAT64 goes to a gateway
        ("::2", False),
        ("not an address", False),
        ("", False),
    ],
)
def test_membership(ip: str, inside: bool) -> None:
    assert is_in_networks(ip, LOOPBACK) is inside


def test_outside_is_refused_even_when_mapped_or_private_is_allowed() -> None:
    for mapped, allow_private in [(True, False), (False, True), (True, True)]:
        with pytest.raises(BlockedAddress, match=r"1\.2\.3\.4, which is outside network\."):
            check_address(
                "a.test", "1.2.3.4", mapped=mapped, allow_private=allow_private,
                allow_networks=LOOPBACK,
            )  # fmt: skip


def test_inside_still_needs_the_ssrf_guard_to_agree() -> None:
    check_address("a.test", "127.0.0.2", mapped=True, allow_private=False, allow_networks=LOOPBACK)
    check_address("x", "127.0.0.2", mapped=False, allow_private=True, allow_networks=LOOPBACK)
    with pytest.raises(BlockedAddress, match="not a public address"):
        check_address(
            "a.test", "127.0.0.2", mapped=False, allow_private=False, allow_networks=LOOPBACK
        )


def test_empty_allowlist_is_no_restriction() -> None:
    check_address("example.com", "93.184.216.34", mapped=False, allow_private=False)
    check_address("example.com", "93.184.216.34", mapped=False, allow_private=False,
                  allow_networks=())  # fmt: skip


def test_config_key_is_read_and_validated(tmp_path: Path) -> None:
    path = tmp_path / "trawl.toml"
    path.write_text('[network]\nallow_networks = ["127.0.0.0/8", "::1"]\n')
    assert load_settings(path).network.allow_networks == ("127.0.0.0/8", "::1")
    assert load_settings(None).network.allow_networks == ()
    path.write_text('[network]\nallow_networks = ["127.0.0.0/8", "127.0.0.1/8"]\n')
    with pytest.raises(ConfigError, match=r"network.allow_networks: '127.0.0.1/8' is not a CIDR"):
        load_settings(path)
    path.write_text('[network]\nallow_networks = "127.0.0.0/8"\n')
    with pytest.raises(ConfigError, match="expected a list of strings"):
        load_settings(path)


def test_fetcher_refuses_ip_literals_and_mapped_names_before_connecting() -> None:
    # Nothing listens on these addresses from a test: a connection attempt would end in
    # "connect" or "timeout", so "blocked_address" proves the check came first.
    async def run() -> list[str | None]:
        host_map = HostMap.from_options(["mapped.test:10.9.8.7", "ok.test:127.0.0.1"], None)
        resolver = CachingResolver(host_map)
        async with AiohttpFetcher(
            user_agent="trawl/test (+http://a.test/)",
            resolver=resolver,
            allow_private=True,
            allow_networks=LOOPBACK,
        ) as fetcher:
            results = [
                await fetcher.fetch("http://1.2.3.4/"),
                await fetcher.fetch("http://[::ffff:10.0.0.1]/"),
                await fetcher.fetch("http://mapped.test/"),
                await fetcher.fetch("http://ok.test/", ip="192.0.2.1"),  # an earlier answer
            ]
            assert fetcher._session is None  # no connection pool was ever built
        await resolver.close()
        return [r.error_kind for r in results]

    assert asyncio.run(run()) == ["blocked_address"] * 4


def test_connector_resolver_refuses_outside_addresses() -> None:
    async def run() -> None:
        resolver = CachingResolver(HostMap.from_options(["mapped.test:10.9.8.7"], None))
        adapter = AiohttpResolver(resolver, allow_private=True, allow_networks=LOOPBACK)
        with pytest.raises(BlockedAddress):
            await adapter.resolve("mapped.test", 80)
        with pytest.raises(BlockedAddress):
            await adapter.resolve("1.2.3.4", 80)
        answer = await adapter.resolve("127.0.0.9", 80)
        assert answer[0]["host"] == "127.0.0.9"
        await resolver.close()

    asyncio.run(run())
