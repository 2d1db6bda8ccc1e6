"""A DNS server on loopback UDP for the fetcher tests: A records from a zone, NXDOMAIN else."""

from __future__ import annotations

import asyncio
from typing import cast

import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset


class DnsServer(asyncio.DatagramProtocol):
    """Answers A queries from `zone`; NXDOMAIN otherwise; `slow` names answer after 0.3 s."""

    def __init__(self, zone: dict[str, str], slow: frozenset[str] = frozenset()) -> None:
        self.zone = zone
        self.slow = slow
        self.queries: list[tuple[str, str]] = []
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # 3.11's selector datagram transport is not a registered DatagramTransport subclass.
        self.transport = cast("asyncio.DatagramTransport", transport)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        query = dns.message.from_wire(data)
        question = query.question[0]
        name = question.name.to_text().rstrip(".")
        self.queries.append((name, dns.rdatatype.to_text(question.rdtype)))
        response = dns.message.make_response(query)
        if name not in self.zone:
            response.set_rcode(dns.rcode.NXDOMAIN)
        elif question.rdtype == dns.rdatatype.A:
            response.answer.append(
                # TTL 0: c-ares keeps its own cache by record TTL; 0 keeps it out of the way
                dns.rrset.from_text(question.name, 0, "IN", "A", self.zone[name])
            )
        wire = response.to_wire()
        assert self.transport is not None
        delay = 0.3 if name in self.slow else 0.0
        asyncio.get_running_loop().call_later(delay, self.transport.sendto, wire, addr)
