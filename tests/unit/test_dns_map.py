"""HostMap parsing (--resolve, --hosts-file) and lookups."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from trawl.errors import ConfigError
from trawl.fetch.dns import HostMap

if TYPE_CHECKING:
    from pathlib import Path


def test_resolve_forms() -> None:
    host_map = HostMap.from_options(
        [
            "a.test:127.0.0.2",
            "B.Test:443:127.0.0.3",
            "v6.test:[::1]",
            "v6port.test:8080:[fe80::1]",
            "multi.test:[::2],127.0.0.4",
            "trailing.test.:127.0.0.5",
        ],
        None,
    )
    assert host_map.lookup("a.test") == "127.0.0.2"
    assert host_map.lookup("b.test") == "127.0.0.3"
    assert host_map.lookup("B.TEST") == "127.0.0.3"
    assert host_map.lookup("v6.test") == "::1"
    assert host_map.lookup("v6port.test") == "fe80::1"
    assert host_map.lookup("multi.test") == "127.0.0.4"  # IPv4 preferred
    assert host_map.lookup("trailing.test") == "127.0.0.5"
    assert host_map.lookup("trailing.test.") == "127.0.0.5"
    assert host_map.lookup("other.test") is None
    assert host_map.is_mapped("A.test")
    assert not host_map.is_mapped("c.test")


def test_wildcards_match_subdomains_not_the_suffix_itself() -> None:
    host_map = HostMap.from_options(
        ["*.web.test:127.0.0.10", "*.deep.web.test:127.0.0.11", "exact.web.test:127.0.0.12"],
        None,
    )
    assert host_map.lookup("a.web.test") == "127.0.0.10"
    assert host_map.lookup("x.y.web.test") == "127.0.0.10"
    assert host_map.lookup("a.deep.web.test") == "127.0.0.11"  # longest suffix wins
    assert host_map.lookup("exact.web.test") == "127.0.0.12"  # exact beats wildcard
    assert host_map.lookup("web.test") is None
    assert host_map.lookup("notweb.test") is None
    assert host_map.lookup("aweb.test") is None


def test_hosts_file(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text(
        "# local test web\n"
        "\n"
        "127.0.0.1   site-a.test  www.site-a.test  # inline comment\n"
        "127.0.0.2\tSite-B.test\n"
        "::1 v6.test\n"
        "127.0.0.9 site-a.test\n",  # a later line does not override an earlier one
        encoding="utf-8",
    )
    host_map = HostMap.from_options(["site-b.test:127.0.0.3"], hosts)
    assert host_map.lookup("site-a.test") == "127.0.0.1"
    assert host_map.lookup("www.site-a.test") == "127.0.0.1"
    assert host_map.lookup("site-b.test") == "127.0.0.3"  # --resolve beats the file
    assert host_map.lookup("v6.test") == "::1"
    assert len(host_map) == 4


def test_empty_map() -> None:
    host_map = HostMap.from_options([], None)
    assert host_map.lookup("anything.test") is None
    assert len(host_map) == 0


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ("no-colon.test", "expected HOST:IP"),
        ("a.test:", "is not an IP address"),
        ("a.test:not-an-ip", "is not an IP address"),
        ("a.test:999.1.1.1", "is not an IP address"),
        ("a.test:::1", "is not a port"),  # unbracketed IPv6 is ambiguous with HOST:PORT:IP
        ("a.test:70000:127.0.0.1", "is not a port"),
        ("a.test:http:127.0.0.1", "is not a port"),
        ("a.test:80:[::1", "is not an IP address"),
        (":127.0.0.1", "is not a hostname"),
        ("bad host:127.0.0.1", "is not a hostname"),
        ("a..test:127.0.0.1", "is not a hostname"),
        ("*.*.test:127.0.0.1", "is not a hostname"),
        ("a*.test:127.0.0.1", "is not a hostname"),
    ],
)
def test_malformed_resolve_names_the_flag_value(entry: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        HostMap.from_options([entry], None)
    message = str(info.value)
    assert message.startswith(f"--resolve {entry!r}: ")
    assert fragment in message


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("300.1.1.1 a.test", "'300.1.1.1' is not an IP address"),
        ("a.test 127.0.0.1", "'a.test' is not an IP address"),
        ("127.0.0.1", "followed by no hostname"),
        ("127.0.0.1 good.test bad_host!", "'bad_host!' is not a hostname"),
    ],
)
def test_malformed_hosts_file_names_file_and_line(tmp_path: Path, line: str, fragment: str) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text(f"# header\n127.0.0.1 ok.test\n{line}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        HostMap.from_options([], hosts)
    assert str(info.value).startswith(f"{hosts}:3: ")
    assert fragment in str(info.value)


def test_missing_hosts_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        HostMap.from_options([], tmp_path / "nope")
