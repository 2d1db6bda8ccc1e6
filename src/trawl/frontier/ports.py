"""What the crawl loop asks of the frontier's stores and routes (ports; adapters elsewhere)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from trawl.model import CrawlUrl


class LinkRouter(Protocol):
    """Cluster mode: discovered URLs go to the owner of their site's partition, which makes
    the seen check and queues them (the adapter is cluster.link_router.LinkBuffers)."""

    def route(self, item: CrawlUrl, *, must_crawl: bool, referrer: str = "") -> None:
        """Send a discovered URL to its partition's owner (no I/O: buffered until the next
        commit, which sends the buffers before the records that found the URLs)."""
