"""A request cancelled while it waits for the cluster's slot on its IP gives back its slot
in this process's own per-IP gate, so the IP is not held for good.

Why: the local gate marks an admitted request unsent until its head goes out, and holds
the IP's other requests back meanwhile (politeness/ip_gate.py); a request that never gets
that far must take the mark with it, whether the cluster refused it or its task ended.
Through the crawl's real context as a node wires it, with a coordinator that never answers.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from tests.fakes.cluster import never_cut
from tests.integration.test_cluster_override_gap import AllLeases, N, NoCoordinator, StoppedClock

from trawl.cluster.link_router import LinkBuffers
from trawl.cluster.partition_table import PartitionTable
from trawl.cluster.placement import NodePlacement
from trawl.cluster.redis_links import START
from trawl.config import Settings, with_overrides
from trawl.loop.requests import SiteRequests
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from pathlib import Path

SITE = "a.test"
IP = "127.0.0.1"
NOW = 5000.0


class SilentCoordinator(NoCoordinator):
    """Its per-IP slot is asked for and never granted."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def try_acquire(self, ip: str) -> float | None:
        self.asked.set()
        await asyncio.Event().wait()
        raise AssertionError("never granted")


def test_a_request_cancelled_while_waiting_for_the_cluster_slot_frees_its_ip(
    tmp_path: Path,
) -> None:
    clock = StoppedClock(NOW)
    table = PartitionTable(N, started_at=0.0)
    table.load(table.partition_of(SITE), START, now=0.0, wall_now=0.0)
    coordinator = SilentCoordinator()
    placement = NodePlacement(
        owner="n1", table=table, leases=AllLeases(), router=LinkBuffers(N, sent_capacity=100),
        publisher=coordinator, ip_slots=coordinator, cuts=never_cut(N),
    )  # fmt: skip
    settings = with_overrides(
        Settings(),
        crawl={"contact_url": "https://trawl.invalid/t"},
        network={"resolve": (f"{SITE}:{IP}",), "allow_private": True},
    )
    ctx = build_context(settings, tmp_path, clock, placement=placement)
    nothing: Any = None  # sitemaps and stored content: a request never reaches them
    requests = SiteRequests(ctx, nothing, nothing)

    async def body() -> None:
        state = ctx.sites.state(SITE)
        waiting = asyncio.create_task(requests.request(state, f"http://{SITE}/"))
        await asyncio.wait_for(coordinator.asked.wait(), 5)
        assert ctx.ip_gate.in_flight(IP) == 1
        assert ctx.ip_gate.try_acquire(IP, NOW + 1.0) is not None, "held while unsent"
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        assert ctx.ip_gate.in_flight(IP) == 0
        assert ctx.ip_gate.try_acquire(IP, NOW + 1.0) is None, "the IP is free again"
        await ctx.durability.close()

    asyncio.run(body())
