"""Discovered URLs on their way to their partitions' owners: per-partition buffers.

The crawl loop calls `route` (no I/O); each commit takes the buffers (`take`) and the node
sends them, one stream entry per partition, before it commits the records of the pages that
found them, so a crash never leaves a stored page whose links were never sent.

Most links on a page were sent before (navigation repeats on every page), so a Bloom filter
of what this machine has sent keeps repeats off the streams; the owner's seen set is still
the judge. A link found on another site is keyed with its referring site, so each referring
site still reaches the owner once (it raises the target site's importance and the URL's
in-link sites count). A repeat goes again only when it carries linking pages to count
(frontier.link_scores.route_weight: at each power of two of this finder's count).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import TYPE_CHECKING

from trawl.cluster.partitions import partition_of
from trawl.cluster.redis_links import RoutedLink
from trawl.seen.bloom import BloomFilter

if TYPE_CHECKING:
    from trawl.model import CrawlUrl

SENT_FP_RATE = 0.001


class LinkBuffers:
    """The `LinkRouter` of a cluster node."""

    def __init__(self, partitions: int, *, sent_capacity: int) -> None:
        self._partitions = partitions
        self._buffers: defaultdict[int, list[RoutedLink]] = defaultdict(list)
        self._sent = BloomFilter(sent_capacity, SENT_FP_RATE)
        self.routed = 0
        self.repeats = 0

    def __repr__(self) -> str:
        waiting = sum(len(b) for b in self._buffers.values())
        return f"<LinkBuffers routed={self.routed} repeats={self.repeats} waiting={waiting}>"

    def route(
        self, item: CrawlUrl, *, must_crawl: bool, referrer: str = "", pages: int = 0
    ) -> None:
        key = item.url_hash
        if referrer:
            key = hashlib.blake2b(f"{key} {referrer}".encode(), digest_size=16).hexdigest()
        if not must_crawl and not self._sent.add_if_new(key) and not pages:
            self.repeats += 1
            return
        self.routed += 1
        link = RoutedLink(
            item.url, item.url_hash, item.site, item.depth, item.score, must_crawl, referrer,
            int(item.line), int(item.kind), item.score_parts, item.redirects, item.standing,
            pages,
        )  # fmt: skip
        self._buffers[partition_of(item.site, self._partitions)].append(link)

    def take(self) -> dict[int, list[RoutedLink]]:
        """Everything routed since the last take, by partition."""
        out = dict(self._buffers)
        self._buffers.clear()
        return out
