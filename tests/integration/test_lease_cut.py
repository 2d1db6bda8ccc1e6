"""A request still on the wire at its partition lease's local deadline is cut there, unless
a renewal moved the deadline (issue 19: leases shorter than the longest fetch).

Through the crawl's real context as a node wires it and the real HTTP fetcher, against a
server on a real socket that reads the request and never answers.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import pytest
from tests.fakes.cluster import FreeIpSlots
from tests.integration.test_cluster_override_gap import AllLeases, N, NoCoordinator

from trawl.clock import SystemClock
from trawl.cluster.lease_cuts import LeaseCuts
from trawl.cluster.link_router import LinkBuffers
from trawl.cluster.partition_table import PartitionTable
from trawl.cluster.placement import NodePlacement
from trawl.cluster.redis_links import START
from trawl.config import Settings, with_overrides
from trawl.loop.requests import LeaseCut, SiteRequests
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from pathlib import Path

SITE = "a.test"
IP = "127.0.0.1"


async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    try:
        await asyncio.sleep(30)  # far past every deadline here; cut by the client
    finally:
        writer.close()


def run_cut(tmp_path: Path, deadline_in_s: float, extend_to_s: float | None) -> float:
    """Seconds a request to the hanging server ran before it was cut."""
    cuts = LeaseCuts()
    table = PartitionTable(N, started_at=0.0)
    partition = table.partition_of(SITE)
    table.load(partition, START, now=0.0, wall_now=0.0)
    placement = NodePlacement(
        owner="n1", table=table, leases=AllLeases(), router=LinkBuffers(N, sent_capacity=10),
        publisher=NoCoordinator(), ip_slots=FreeIpSlots(), cuts=cuts,
    )  # fmt: skip

    async def body() -> float:
        server = await asyncio.start_server(hang, IP, 0)
        port = server.sockets[0].getsockname()[1]
        settings = with_overrides(
            Settings(),
            crawl={"contact_url": "https://trawl.invalid/t"},
            network={"resolve": (f"{SITE}:{IP}",), "allow_private": True},
        )
        ctx = build_context(settings, tmp_path, SystemClock(), placement=placement)
        nothing: Any = None  # sitemaps and stored content: a request never reaches them
        requests = SiteRequests(ctx, nothing, nothing)
        state = ctx.sites.state(SITE)
        started = time.monotonic()
        cuts.deadline(partition, started + deadline_in_s)
        request = asyncio.create_task(requests.request(state, f"http://{SITE}:{port}/"))
        if extend_to_s is not None:
            await asyncio.sleep(deadline_in_s / 2)
            cuts.deadline(partition, started + extend_to_s)  # a renewal answered
        with pytest.raises(LeaseCut):
            await request
        took = time.monotonic() - started
        assert cuts.cut_count == 1
        assert ctx.ip_gate.in_flight(IP) == 0, "the IP is free again"
        assert state.clock.next_allowed_at > ctx.clock.now(), "its gap runs as after any request"
        server.close()
        await ctx.durability.close()
        return took

    return asyncio.run(body())


def test_a_request_is_cut_at_a_deadline_no_renewal_moved(tmp_path: Path) -> None:
    took = run_cut(tmp_path, deadline_in_s=0.4, extend_to_s=None)
    assert 0.4 <= took < 1.5, took  # the fetch timeout (10 s) would have run far longer


def test_a_renewal_moves_the_cut_later(tmp_path: Path) -> None:
    took = run_cut(tmp_path, deadline_in_s=0.4, extend_to_s=1.2)
    assert 1.2 <= took < 2.5, took


def test_a_lost_lease_cuts_its_requests_at_once(tmp_path: Path) -> None:
    took = run_cut(tmp_path, deadline_in_s=0.4, extend_to_s=float("-inf"))
    assert 0.2 <= took < 0.4, took  # cut when the loss was told, before the old deadline
