"""Name resolution: operator mappings (--resolve, --hosts-file) and a caching resolver.

How this works:
- `HostMap` answers names the operator pinned. An exact name wins over a wildcard, and
  among wildcards the longest suffix wins. `*.example.com` matches every subdomain of
  example.com but *not* example.com itself (as in DNS wildcards, RFC 4592 §2.1.1, and TLS
  certificates); map the bare name with its own entry. --resolve entries win over the
  hosts file, as a flag overrides a file.
- `CachingResolver` answers mapped names from the map, IP literals as themselves, and the
  rest from one DNS server (--dns-server, via aiodns) or the system resolver. Answers are
  cached (failures for `negative_ttl_s`), and concurrent lookups of one name share a single
  query. It does not judge addresses: the SSRF guard runs on its answer (`FetcherBase.resolve`
  in fetch/http_common.py), which is why mapped names report `is_mapped`.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import aiodns
import pycares

from trawl.errors import ConfigError, FetchError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path


def normalise_host(host: str) -> str:
    return host.strip().rstrip(".").lower()


def _is_hostname(name: str) -> bool:
    labels = name.split(".")
    return all(
        0 < len(label) <= 63 and all(c.isalnum() or c in "-_" for c in label) and label.isascii()
        for label in labels
    )


def _parse_ip(text: str) -> str | None:
    """The canonical text of an IP address (IPv6 may be bracketed), or None."""
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    # An IPv4 address ends in a digit and an IPv6 one holds a colon: any other text, every
    # hostname the crawl resolves included, is no address without the ~5 us ValueError.
    if ":" not in text and not text[-1:].isdigit():
        return None
    return _canonical_ip(text)


@functools.lru_cache(maxsize=4096)
def _canonical_ip(text: str) -> str | None:
    # Cached: IP-literal URLs ask for the same few addresses page after page.
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def _parse_resolve_addresses(text: str) -> str | None:
    """The address part of a --resolve entry: one or more comma-separated IPs, IPv4 first."""
    ips = [_parse_ip(part.strip()) for part in text.split(",")]
    if not ips or any(ip is None for ip in ips):
        return None
    valid = [ip for ip in ips if ip is not None]
    return next((ip for ip in valid if ":" not in ip), valid[0])


def _parse_resolve_entry(entry: str) -> tuple[str, str]:
    """`HOST:IP` or curl's `HOST:PORT:IP` (port ignored); IPv6 must be bracketed."""
    host, sep, rest = entry.partition(":")
    if not sep:
        raise ConfigError(f"--resolve {entry!r}: expected HOST:IP or HOST:PORT:IP")
    if not rest.startswith("[") and ":" in rest:
        port, _, rest = rest.partition(":")
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(f"--resolve {entry!r}: {port!r} is not a port (IPv6 needs [ ])")
    ip = _parse_resolve_addresses(rest)
    if ip is None:
        raise ConfigError(f"--resolve {entry!r}: {rest!r} is not an IP address")
    name = normalise_host(host)
    bare = name.removeprefix("*.")
    if not _is_hostname(bare) or "*" in bare:
        raise ConfigError(f"--resolve {entry!r}: {host!r} is not a hostname or *.suffix")
    return name, ip


def _parse_hosts_line(line: str, where: str) -> list[tuple[str, str]]:
    text = line.split("#", 1)[0].strip()
    if not text:
        return []
    ip_text, *names = text.split()
    ip = _parse_ip(ip_text)
    if ip is None:
        raise ConfigError(f"{where}: {ip_text!r} is not an IP address")
    if not names:
        raise ConfigError(f"{where}: {ip_text} is followed by no hostname")
    pairs = []
    for raw in names:
        name = normalise_host(raw)
        if not _is_hostname(name):
            raise ConfigError(f"{where}: {raw!r} is not a hostname")
        pairs.append((name, ip))
    return pairs


@dataclass(frozen=True, slots=True)
class HostMap:
    """Names pinned to addresses by the operator; lookups are case-insensitive."""

    exact: Mapping[str, str] = field(default_factory=dict)
    wildcards: tuple[tuple[str, str], ...] = ()  # (".suffix", ip), longest suffix first

    @classmethod
    def from_options(cls, resolve: Sequence[str], hosts_file: Path | None) -> HostMap:
        """Build from --resolve values and a hosts file; raises ConfigError naming the entry."""
        exact: dict[str, str] = {}
        if hosts_file is not None:
            try:
                lines = hosts_file.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"--hosts-file {hosts_file}: cannot read: {exc}") from exc
            for number, line in enumerate(lines, start=1):
                for name, ip in _parse_hosts_line(line, f"{hosts_file}:{number}"):
                    exact.setdefault(name, ip)  # first line wins, as in /etc/hosts
        wildcards: dict[str, str] = {}
        for entry in resolve:
            name, ip = _parse_resolve_entry(entry)
            if name.startswith("*."):
                wildcards[name[1:]] = ip
            else:
                exact[name] = ip
        ordered = sorted(wildcards.items(), key=lambda item: -len(item[0]))
        return cls(exact=exact, wildcards=tuple(ordered))

    def lookup(self, host: str) -> str | None:
        """The mapped IP for `host`, or None."""
        name = normalise_host(host)
        ip = self.exact.get(name)
        if ip is not None:
            return ip
        for suffix, wildcard_ip in self.wildcards:
            if name.endswith(suffix):
                return wildcard_ip
        return None

    def is_mapped(self, host: str) -> bool:
        return self.lookup(host) is not None

    def __len__(self) -> int:
        return len(self.exact) + len(self.wildcards)


@dataclass(frozen=True, slots=True)
class _Answer:
    ip: str | None  # None: the lookup failed with `error`
    error: str
    expires_at: float


@dataclass(frozen=True, slots=True)
class ResolverStats:
    cached: int
    in_flight: int
    queries: int
    cache_hits: int
    mapped_hits: int


def _split_server(server: str) -> str:
    """Validate --dns-server `IP` or `IP:PORT` ([IPv6]:PORT); return it in c-ares syntax."""
    if server.startswith("["):
        addr, _, port = server[1:].partition("]")
        port = port.removeprefix(":")
    elif server.count(":") == 1:
        addr, _, port = server.partition(":")
    else:
        addr, port = server, ""
    ip = _parse_ip(addr)
    if ip is None or (port and (not port.isdigit() or not 0 < int(port) < 65536)):
        raise ConfigError(f"--dns-server {server!r}: expected IP or IP:PORT")
    if not port:
        return ip
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


class _LookupFailed(Exception):
    """Internal: a lookup ended without an address (turned into a cached negative answer)."""


def _prefer_ipv4(ips: Sequence[str]) -> str:
    return next((ip for ip in ips if ":" not in ip), ips[0])


class CachingResolver:
    """Resolve hostnames to one IP (IPv4 preferred), caching answers and failures.

    `resolve` raises FetchError("dns", ...). `timeout_s` bounds one lookup; at most
    `max_entries` answers are kept (oldest dropped first). `clock` is monotonic seconds,
    injectable for tests. Shared state (`_cache`, `_in_flight`) is
    written only by the event loop thread that calls `resolve`.
    """

    def __init__(
        self,
        host_map: HostMap,
        *,
        dns_server: str | None = None,
        ttl_s: float = 300.0,
        negative_ttl_s: float = 60.0,
        timeout_s: float = 5.0,
        max_entries: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.host_map = host_map
        self.dns_server = None if dns_server is None else _split_server(dns_server)
        self.ttl_s = ttl_s
        self.negative_ttl_s = negative_ttl_s
        self.timeout_s = timeout_s
        self.max_entries = max_entries
        self._clock = clock
        self._cache: dict[str, _Answer] = {}
        self._in_flight: dict[str, asyncio.Task[_Answer]] = {}
        self._aiodns: aiodns.DNSResolver | None = None
        self._queries = 0
        self._cache_hits = 0
        self._mapped_hits = 0

    def __repr__(self) -> str:
        s = self.stats()
        server = self.dns_server or "system"
        return (
            f"<CachingResolver {server} mapped={len(self.host_map)} cached={s.cached} "
            f"in_flight={s.in_flight} queries={s.queries} hits={s.cache_hits}>"
        )

    def stats(self) -> ResolverStats:
        return ResolverStats(
            cached=len(self._cache),
            in_flight=len(self._in_flight),
            queries=self._queries,
            cache_hits=self._cache_hits,
            mapped_hits=self._mapped_hits,
        )

    def is_mapped(self, host: str) -> bool:
        return self.host_map.is_mapped(host)

    async def resolve(self, host: str) -> str:
        """One IP for `host`; raises FetchError("dns", ...) if it has none."""
        name = normalise_host(host)
        literal = _parse_ip(name)
        if literal is not None:
            return literal
        mapped = self.host_map.lookup(name)
        if mapped is not None:
            self._mapped_hits += 1
            return mapped
        answer = self._cache.get(name)
        if answer is not None and answer.expires_at > self._clock():
            self._cache_hits += 1
        else:
            answer = await self._shared_lookup(name)
        if answer.ip is None:
            raise FetchError("dns", f"{host}: {answer.error}")
        return answer.ip

    async def _shared_lookup(self, name: str) -> _Answer:
        task = self._in_flight.get(name)
        if task is None:
            task = asyncio.create_task(self._lookup_and_cache(name), name=f"dns {name}")
            self._in_flight[name] = task
            task.add_done_callback(lambda _: self._in_flight.pop(name, None))
        # shield: one caller's cancellation must not cancel the lookup the others await.
        return await asyncio.shield(task)

    async def _lookup_and_cache(self, name: str) -> _Answer:
        self._queries += 1
        error = ""
        try:
            async with asyncio.timeout(self.timeout_s):
                ips = await (
                    self._query_server(name) if self.dns_server else self._query_system(name)
                )
        except TimeoutError:
            ips, error = [], f"no answer within {self.timeout_s} s"
        except _LookupFailed as exc:
            ips, error = [], str(exc)
        if ips:
            answer = _Answer(_prefer_ipv4(ips), "", self._clock() + self.ttl_s)
        else:
            answer = _Answer(None, error or "no address", self._clock() + self.negative_ttl_s)
        # Re-insert so dict order is insertion age; the oldest entry goes first when full.
        self._cache.pop(name, None)
        self._cache[name] = answer
        if len(self._cache) > self.max_entries:
            del self._cache[next(iter(self._cache))]
        return answer

    async def _query_system(self, name: str) -> list[str]:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(name, None, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise _LookupFailed(str(exc)) from exc
        return [str(info[4][0]) for info in infos]

    async def _query_server(self, name: str) -> list[str]:
        if self._aiodns is None:
            assert self.dns_server is not None
            self._aiodns = aiodns.DNSResolver(
                nameservers=[self.dns_server], timeout=self.timeout_s, tries=1
            )
        errors = []
        for qtype in ("A", "AAAA"):
            try:
                result = await self._aiodns.query_dns(name, qtype)
            except aiodns.error.DNSError as exc:
                errors.append(f"{qtype}: {exc.args[-1] if exc.args else exc}")
                if exc.args and exc.args[0] == aiodns.error.ARES_ENOTFOUND:
                    break  # NXDOMAIN: the name has no records of any type
                continue
            ips = [
                rec.data.addr
                for rec in result.answer
                if isinstance(rec.data, pycares.ARecordData | pycares.AAAARecordData)
            ]
            if ips:
                return ips
            errors.append(f"{qtype}: no address records")
        raise _LookupFailed("; ".join(errors))

    async def close(self) -> None:
        tasks = list(self._in_flight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._aiodns is not None:
            await self._aiodns.close()
            self._aiodns = None
