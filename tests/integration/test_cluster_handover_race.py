"""What a partition's owner checkpoints must be all the next owner needs: no URL lost.

CI's cluster tests lost a few pages now and then ("timed out waiting for every page"; the
missing pages queued nowhere, fetched by no one). A checkpoint listed the partition's
sites first, then awaited the publish of what was written so far, then read the rows of
the sites it had listed together with the seen slice. A URL of a site new to the
partition, read from its stream during that await, went into the seen slice but not into
the rows, while the checkpoint's stream position lay before it: the next owner replayed
the entry, found the URL seen, and dropped it. Likewise a page done during that await: its
row gone, its record and links waiting for the next publish, which a crash never sends.
Checkpoints are now taken at the publish's cut.

Real parts: the crawl's context as a node wires it (SQLite frontier, intake, sites), the
partitioned seen set, the partition table, ClusterNode's hand-over, take-over and stream
consumer, checkpoints in a local blob store. In memory: the link streams, the publisher
(its cut, and `during`, run while it completes) and the scope record."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from tests.fakes.cluster import FreeIpSlots, MemoryStreams, never_cut

from trawl.cluster import checkpoint_keys
from trawl.cluster.link_router import LinkBuffers
from trawl.cluster.node import CHECKPOINT_UPLOADS, ClusterNode
from trawl.cluster.partition_table import PartitionTable
from trawl.cluster.partitions import partition_of
from trawl.cluster.placement import NodePlacement
from trawl.cluster.redis_links import START, RoutedLink
from trawl.cluster.store_outages import StoreOutages
from trawl.config import Settings, with_overrides
from trawl.seen.partitioned import PartitionedSeen
from trawl.store.blobs_local import LocalBlobStore
from trawl.urls.normalise import url_hash
from trawl.wiring.embedded import build_context

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterator
    from pathlib import Path

    from trawl.loop.context import CrawlContext

N = 16
OLD_SITE = "a.test"
NEW_SITE = next(
    f"b{i}.test" for i in range(1000) if partition_of(f"b{i}.test", N) == partition_of(OLD_SITE, N)
)
PARTITION = partition_of(OLD_SITE, N)
T = TypeVar("T")


def link(site: str, path: str) -> RoutedLink:
    url = f"http://{site}{path}"
    return RoutedLink(url, url_hash(url), site, depth=1, score=1.0, referrer="c.test")


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
    tmp_path: Path, name: str, streams: MemoryStreams, blobs: LocalBlobStore
) -> tuple[ClusterNode, CrawlContext]:
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


class Owners(NamedTuple):
    """The partition's owner and the next one, on one set of streams and one blob store."""

    streams: MemoryStreams
    old: ClusterNode
    old_ctx: CrawlContext
    new: ClusterNode
    new_ctx: CrawlContext


@contextlib.contextmanager
def two_owners(tmp_path: Path, blobs: LocalBlobStore) -> Iterator[Owners]:
    streams = MemoryStreams()
    old, old_ctx = make_node(tmp_path, "n1", streams, blobs)
    try:
        new, new_ctx = make_node(tmp_path, "n2", streams, blobs)
        try:
            yield Owners(streams, old, old_ctx, new, new_ctx)
        finally:
            asyncio.run(new_ctx.durability.close())
    finally:
        asyncio.run(old_ctx.durability.close())


def queued_urls(ctx: CrawlContext) -> set[str]:
    return {row[2] for row in ctx.frontier.rows_of(ctx.frontier.queued_sites())}


def test_a_url_of_a_new_site_read_during_the_hand_over_checkpoint_reaches_the_next_owner(
    tmp_path: Path,
) -> None:
    early = link(OLD_SITE, "/1.html")
    late = link(NEW_SITE, "/")

    async def scenario(o: Owners) -> set[str]:
        async def arrives_while_publishing() -> None:
            o.streams.append(PARTITION, late)
            assert await o.old.consume_once() == 1

        o.old.table.load(PARTITION, START, now=0.0, wall_now=0.0)
        o.streams.append(PARTITION, early)
        assert await o.old.consume_once() == 1
        o.old.publisher.during = arrives_while_publishing  # type: ignore[attr-defined]
        await o.old.on_handover(PARTITION, 1)
        assert queued_urls(o.old_ctx) == set(), "the old owner forgot the partition"
        await o.new.on_acquired(PARTITION, 2)
        await o.new.consume_once()  # the stream after the checkpoint's position
        return queued_urls(o.new_ctx)

    with two_owners(tmp_path, LocalBlobStore(tmp_path / "blobs")) as owners:
        assert asyncio.run(scenario(owners)) == {early.url, late.url}


class GatedBlobs(LocalBlobStore):
    """Checkpoint uploads of `held` partitions wait (in their worker threads) until `gate`."""

    def __init__(self, root: Path, held: set[int]) -> None:
        super().__init__(root)
        self.held = held
        self.gate = threading.Event()
        self.waiting = threading.Event()

    def put(self, key: str, data: bytes) -> None:
        parsed = checkpoint_keys.parse(key)
        if parsed is not None and parsed.partition in self.held:
            self.waiting.set()
            assert self.gate.wait(10), "the test never opened the gate"
        super().put(key, data)


def test_a_periodic_checkpoint_still_running_at_the_hand_over_writes_nothing_later(
    tmp_path: Path,
) -> None:
    """A periodic checkpoint of more partitions than it uploads at once reaches its later
    partitions after awaiting the first uploads; one handed over meanwhile is skipped, not
    checkpointed empty (a later checkpoint, so the next owner's latest, with no rows)."""
    others = [p for p in range(N) if p != PARTITION][:CHECKPOINT_UPLOADS]
    blobs = GatedBlobs(tmp_path / "blobs", {others[0]})
    queued = link(OLD_SITE, "/1.html")

    async def scenario(o: Owners) -> set[str]:
        for p in (*others, PARTITION):
            o.old.table.load(p, START, now=0.0, wall_now=0.0)
        o.streams.append(PARTITION, queued)
        assert await o.old.consume_once() == 1
        # Its first chunk is the other partitions; this one comes after their uploads.
        due = {p: 1 for p in (*others, PARTITION)}
        periodic = asyncio.create_task(o.old.checkpoint_many(due))
        assert await asyncio.to_thread(blobs.waiting.wait, 10), "the first chunk uploads"
        await o.old.on_handover(PARTITION, 1)
        blobs.gate.set()
        await periodic
        await o.new.on_acquired(PARTITION, 2)
        await o.new.consume_once()
        return queued_urls(o.new_ctx)

    with two_owners(tmp_path, blobs) as owners:
        assert asyncio.run(scenario(owners)) == {queued.url}


def test_a_page_done_while_the_checkpoint_publishes_is_in_it_or_in_the_shared_stores(
    tmp_path: Path,
) -> None:
    """A page done after the publish's cut has its record and links in the next cut only:
    the checkpoint must still hold its row, or a crash before that cut loses the URL (in
    the seen slice, in no row, never fetched as the shared stores know)."""
    page = link(OLD_SITE, "/1.html")

    async def scenario(o: Owners) -> set[str]:
        o.old.table.load(PARTITION, START, now=0.0, wall_now=0.0)
        o.streams.append(PARTITION, page)
        assert await o.old.consume_once() == 1
        queued = o.old_ctx.frontier.head(OLD_SITE)
        assert queued is not None
        lease = o.old_ctx.frontier.lease(queued, now=0.0)

        async def page_done() -> None:
            o.old_ctx.frontier.done(lease)
            o.old.publisher.pending.append(page.url_hash)  # type: ignore[attr-defined]

        o.old.publisher.during = page_done  # type: ignore[attr-defined]
        await o.old.checkpoint_many({PARTITION: 1})
        # The node dies here: its next cut, with the page's record, never goes out.
        await o.new.on_acquired(PARTITION, 2)
        await o.new.consume_once()
        return queued_urls(o.new_ctx)

    with two_owners(tmp_path, LocalBlobStore(tmp_path / "blobs")) as owners:
        assert asyncio.run(scenario(owners)) == {page.url}
