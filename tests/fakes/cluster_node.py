"""A cluster node's crawl context and `ClusterNode` without servers: for tests of what a
node does with its streams, checkpoints and hand-overs.

Real parts: the crawl's context as a node wires it (SQLite frontier, intake, sites, link
scores), the partitioned seen set, the partition table and `ClusterNode`. In memory: the
publisher (`Publisher`), the leases (all held), the scope record; the link streams and
blob store are the caller's (`tests.fakes.cluster.MemoryStreams`, a local blob store).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from tests.fakes.cluster import FreeIpSlots, never_cut

from trawl.cluster.link_router import LinkBuffers
from trawl.cluster.node import ClusterNode
from trawl.cluster.partition_table import PartitionTable
from trawl.cluster.placement import NodePlacement
from trawl.cluster.store_outages import StoreOutages
from trawl.config import Settings, with_overrides
from trawl.seen.partitioned import PartitionedSeen
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    from tests.fakes.cluster import MemoryStreams

    from trawl.loop.context import CrawlContext
    from trawl.store.blobs_local import LocalBlobStore

N = 16
T = TypeVar("T")


class Publisher:
    """The commit publisher in memory. What a page's outcome wrote (its urlHash, in
    `pending`) reaches the shared stores (`published`, what `fetched_since` answers) with
    the first cut after it; `during` runs while a publish completes its cut."""

    def __init__(self) -> None:
        self.pg = self
        self.pending: list[str] = []
        self.published: set[str] = set()
        self.during: Callable[[], Awaitable[None]] | None = None
        self.outages = StoreOutages()  # no store fails here

    def fetched_since(self, since: dict[int, float]) -> dict[int, list[str]]:
        return {partition: sorted(self.published) for partition in since}

    def waiting_renders(self, since: dict[int, float]) -> dict[int, list[object]]:
        return {}  # no page here is built by JavaScript

    async def publish(self) -> bool:
        await self.publish_with(lambda: None)
        return True

    async def publish_with(self, snapshot: Callable[[], T]) -> T:
        taken = snapshot()
        cut, self.pending = self.pending, []
        during, self.during = self.during, None
        if during is not None:
            await during()
        self.published.update(cut)
        return taken


class AllLeases:
    def may_fetch(self, partition: int) -> bool:
        return True

    def token(self, partition: int) -> int | None:
        return 1


class NoScopeRecord:
    async def sync_or_retry_later(self) -> None:
        return None

    def knows_seed(self, seed: int) -> bool:
        return True


def make_node(
    tmp_path: Path,
    name: str,
    streams: MemoryStreams,
    blobs: LocalBlobStore,
    settings: Settings | None = None,
) -> tuple[ClusterNode, CrawlContext]:
    if settings is None:
        settings = with_overrides(Settings(), crawl={"contact_url": "https://trawl.invalid/t"})
    table = PartitionTable(N, started_at=0.0)
    leases = AllLeases()
    publisher = Publisher()
    placement = NodePlacement(
        owner=name, table=table, leases=leases, router=LinkBuffers(N, sent_capacity=100),
        publisher=publisher, ip_slots=FreeIpSlots(), cuts=never_cut(N),
    )  # fmt: skip
    seen = PartitionedSeen(expected_urls=1000, fp_rate=0.001, partitions=N)
    work = tmp_path / name
    work.mkdir()
    ctx = build_context(settings, work, seen=seen, placement=placement)
    node = ClusterNode(
        ctx=ctx, table=table, leases=leases, publisher=publisher,  # type: ignore[arg-type]
        links=streams, blobs=blobs, seen=seen, scope=NoScopeRecord(),  # type: ignore[arg-type]
        checkpoint_interval_s=60.0,
    )  # fmt: skip
    return node, ctx
