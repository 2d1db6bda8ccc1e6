"""Issue 19: a URL's in-link counts are its owner's, and count links found on every node.

Two finders find links to one URL on pages of their own sites; the URL's partition is a
third node's. Real parts: each node's crawl context as a node wires it (intake, link
scores, SQLite frontier, the link router's buffers and Bloom filter) and `ClusterNode`'s
stream consumer; the streams are in memory (tests.fakes.cluster.MemoryStreams), the
entries going through the stream encoding as in Redis.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

from tests.fakes.cluster import MemoryStreams
from tests.fakes.cluster_node import N, make_node

from trawl.cluster.partitions import partition_of
from trawl.cluster.redis_links import FIELD, START, decode_batch, encode_batch
from trawl.config import Settings, with_overrides
from trawl.frontier.scope import Standing, seed_id_of
from trawl.model import CrawlUrl, Line
from trawl.parse.page_work import FoundLink
from trawl.store.blobs_local import LocalBlobStore
from trawl.urls.normalise import url_hash
from trawl.wiring.embedded import normalise_rules
from trawl.wiring.seeds import add_seeds, normalise_seeds, seed_scopes

if TYPE_CHECKING:
    from pathlib import Path

    from trawl.loop.context import CrawlContext

TARGET = "http://t.test/popular.html"
TARGET_HASH = url_hash(TARGET)
PARTITION = partition_of("t.test", N)
SEED = "http://a.test/"


def find_links(ctx: CrawlContext, streams: MemoryStreams, sources: list[tuple[str, int]]) -> None:
    """Pages `http://<site>/<n>.html` each linking TARGET, then the commit's send."""
    standing = Standing(seed_id_of(SEED)).pack()
    for site, n in sources:
        url = f"http://{site}/{n}.html"
        page = CrawlUrl(url, url_hash(url), site, 1, Line.FAST, 0.0, standing=standing)
        ctx.intake.add_page_links(page, [FoundLink(TARGET, TARGET_HASH, "t.test")])
    router = ctx.placement.router
    assert router is not None
    for partition, links in router.take().items():  # type: ignore[attr-defined]
        entry = decode_batch("1-1", {FIELD: encode_batch(links)})  # as Redis carries them
        streams.append(partition, *entry.links)


def queued_parts(ctx: CrawlContext) -> dict[str, float]:
    (row,) = [r for r in ctx.frontier.rows_of(["t.test"]) if r[2] == TARGET]
    return dict(json.loads(row[9]))


def test_issue_19_the_owner_counts_links_found_on_every_node_and_rescores(
    tmp_path: Path,
) -> None:
    settings = with_overrides(
        Settings(), crawl={"contact_url": "https://trawl.invalid/t"}, scope={"type": "any"}
    )
    rules = normalise_rules(settings)
    streams = MemoryStreams()
    blobs = LocalBlobStore(tmp_path / "blobs")
    nodes = [make_node(tmp_path, name, streams, blobs, settings) for name in ("n1", "n2", "n3")]
    (_, first), (_, second), (owner, owner_ctx) = nodes

    async def scenario() -> tuple[dict[str, float], dict[str, float]]:
        for _, ctx in nodes:
            add_seeds(ctx, seed_scopes(settings, normalise_seeds([(SEED, "t")], rules), rules))
        owner.table.load(PARTITION, START, now=0.0, wall_now=0.0)
        find_links(first, streams, [("a.test", n) for n in range(5)] + [("b.test", 1)])
        await owner.consume_once()
        queued_first = queued_parts(owner_ctx)
        find_links(second, streams, [("c.test", n) for n in range(6)])
        await owner.consume_once()
        owner_ctx.intake.flush_rescores()
        return queued_first, queued_parts(owner_ctx)

    try:
        before, after = asyncio.run(scenario())
    finally:
        for _, ctx in nodes:
            asyncio.run(ctx.durability.close())
    # Each finder counted 6 linking pages; at its powers of two (1, 3) it sent 3 of them.
    assert first.scores.counter.estimate(TARGET_HASH) == (6, 2)
    assert second.scores.counter.estimate(TARGET_HASH) == (6, 1)
    assert owner_ctx.scores.ranking.estimate(TARGET_HASH) == (6, 3), "a, b and c.test"
    assert owner_ctx.stats.rescored >= 1
    assert after["inlinkSites"] > before["inlinkSites"]
    assert after["inlinkPages"] > before["inlinkPages"]
