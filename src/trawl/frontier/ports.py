"""What the crawl loop asks of the frontier's stores and routes (ports; adapters elsewhere).

The embedded adapter of `Frontier` (frontier.queue_sqlite.SqliteFrontier) is the reference;
others pass the same contract suite (tests/contract/test_frontier.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from trawl.frontier.site_schedule import ScheduleStats
    from trawl.model import CrawlUrl, Lease, Line


@dataclass(frozen=True, slots=True)
class QueuedUrl:
    """A URL waiting in its site's queue, as `Frontier.head` hands it out."""

    row_id: int
    item: CrawlUrl
    attempts: int = 0  # earlier fetches that ended in `retry`
    not_before: float = 0.0  # the site's other ready URLs go first until then


class Frontier(Protocol):
    """The queue of URLs to fetch and the turns of their sites.

    Each site's URLs wait in lines (refresh; discovery: fast, then slow), by score, then age.
    A site's turn goes to one task at a time: `pop_ready_site` hands it out, `release_site`
    (or `move_site` while it waits) says when it comes again. A URL taken with `lease` ends
    in exactly one of `done`, `retry` (one attempt more) or `put_back` (never sent), or
    returns to line when its lease expires. Writes join the store's open transaction and are
    made durable by the caller's commit.
    """

    # -- adding ---------------------------------------------------------------------------
    def enqueue(self, item: CrawlUrl, ready_at: float = 0.0, attempts: int = 0) -> None:
        """Queue `item`; its site's turn comes no earlier than `ready_at` if it is new."""

    def rescore(
        self,
        url_hashes: Sequence[str],
        update: Callable[[str, str], tuple[float, str, Line] | None],
    ) -> int:
        """Re-score the waiting discovery URLs among `url_hashes`: `update(url_hash, stored
        parts JSON)` gives a URL's new (score, parts JSON, line), or None to leave it. URLs
        not waiting (fetched, leased, refresh, unknown) are left alone. How many changed."""

    # -- handing out ----------------------------------------------------------------------
    def pop_ready_site(self, now: float) -> tuple[str, Line] | None:
        """A site whose turn has come, and the line (refresh or discovery) to serve."""

    def head(self, site: str, line: Line | None = None, now: float = 0.0) -> QueuedUrl | None:
        """The site's next unleased URL, `line`'s kind of work first; rows whose
        `not_before` is after `now` come only when nothing else is ready."""

    def head_within_depth(self, site: str, max_depth: int, now: float) -> QueuedUrl | None:
        """The site's next ready discovery URL at link depth <= `max_depth`."""

    def defer(self, queued: QueuedUrl, until: float) -> None:
        """Let the site's other ready URLs go before this unleased one until `until`."""

    def lease(self, queued: QueuedUrl, now: float) -> Lease: ...

    def attempts(self, lease: Lease) -> int:
        """How many earlier fetches of this URL ended in `retry`."""

    def drop(self, queued: QueuedUrl) -> None:
        """Remove an unleased URL for good (outcome `skipped`)."""

    def drop_matching_after(
        self, matches: Callable[[str], bool], after_id: int, max_rows: int
    ) -> tuple[list[CrawlUrl], int | None]:
        """Remove the unleased URLs `matches(url)` selects (a new crawl-wide exclude) among
        the next `max_rows` unleased queue rows past the cursor `after_id` (0: from the
        start): the URLs removed, and the cursor to go on from (None once the queue's end
        was read). The queue is read a slice at a time so that a running crawl can turn its
        loop between two: read whole, 1,000,000 queued URLs held it for 3.5 s."""

    def done(self, lease: Lease) -> None: ...

    def retry(self, lease: Lease, not_before: float = 0.0) -> None:
        """Back in line with one attempt more, behind the site's other ready URLs until
        `not_before`."""

    def put_back(self, lease: Lease) -> None:
        """Back in line as it was: its request was never sent."""

    def requeue_expired(self, now: float) -> int:
        """Return URLs whose lease expired by `now` to line; how many."""

    # -- site turns -----------------------------------------------------------------------
    def release_site(self, site: str, ready_at: float) -> None:
        """End a site's turn; its next comes at `ready_at` (if it has work)."""

    def is_held(self, site: str) -> bool:
        """True while a turn (or `hold_site`) holds the site, until `release_site`."""

    def hold_site(self, site: str) -> bool:
        """Take a site no turn holds, outside its turn; False if it is held."""

    def move_site(self, site: str, ready_at: float) -> None:
        """A waiting site's turn comes at `ready_at` instead (earlier or later)."""

    def next_ready_at(self) -> float | None:
        """When the earliest waiting site's turn comes; None when no site waits."""

    # -- moving sites between machines (cluster mode) -------------------------------------
    def queued_sites(self) -> list[str]:
        """Every site with a queued URL (leased ones included)."""

    def rows_of(self, sites: Iterable[str]) -> list[tuple[Any, ...]]:
        """The queued rows of `sites` as (site, line, url, url_hash, depth, discovered_at,
        attempts, kind, score, score_parts, redirects, standing), leased ones included."""

    def drop_sites(self, sites: Iterable[str]) -> int:
        """Forget `sites` and their queued URLs (none leased); how many URLs went."""

    # -- inspection -----------------------------------------------------------------------
    def queued(self) -> int:
        """URLs waiting (not leased), over all sites."""

    def queued_for(self, site: str) -> int:
        """URLs of `site` waiting (not leased). A count in memory: the API's thread reads
        it too, without the crawl loop (api.crawl_view)."""

    def forget_idle_sites(self) -> int:
        """Drop the turn slots of sites with nothing queued; how many."""

    def stats(self) -> ScheduleStats: ...


class LinkRouter(Protocol):
    """Cluster mode: discovered URLs go to the owner of their site's partition, which makes
    the seen check and queues them (the adapter is cluster.link_router.LinkBuffers)."""

    def route(
        self, item: CrawlUrl, *, must_crawl: bool, referrer: str = "", pages: int = 0
    ) -> None:
        """Send a discovered URL to its partition's owner (no I/O: buffered until the next
        commit, which sends the buffers before the records that found the URLs), with the
        linking pages it stands for (frontier.link_scores: the owner counts in-links)."""
