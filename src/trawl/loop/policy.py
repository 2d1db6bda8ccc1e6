"""The settings the crawl loop reads, as values: built from Settings by the wiring, the only
place that reads Settings (STYLE §3; `wiring.embedded.loop_policy`). No defaults here: the
defaults are Settings' own, in one place."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trawl.frontier.traps import TrapPolicy
    from trawl.politeness.site_clock import ClockPolicy
    from trawl.recrawl.schedule import RecrawlPolicy


@dataclass(frozen=True, slots=True)
class RunLimits:
    """When a crawl stops handing out work."""

    max_pages: int  # page turns started (robots.txt and sitemaps not counted); 0: none
    max_time_s: float  # 0: none
    continuous: bool  # an empty frontier does not end the crawl
    # A one-shot crawl's longest wait for one site's next request (RunState.blocked).
    max_site_wait_s: float = 300.0


@dataclass(frozen=True, slots=True)
class RobotsPolicy:
    """How robots.txt is fetched and kept (RFC 9309 2.3-2.4)."""

    max_bytes: int
    cache_s: float
    retry_base_s: float
    retry_max_s: float


@dataclass(frozen=True, slots=True)
class SitemapPolicy:
    enabled: bool
    max_urls_per_site: int  # a day
    max_files_per_site: int  # a day
    max_bytes: int


@dataclass(frozen=True, slots=True)
class StorePolicy:
    """What is stored and how near copies are matched."""

    warc_compress_level: int
    near_max_distance: int
    near_min_tokens: int
    history_visits: int  # visits kept per page for its change rate
    copy_heavy_share: float
    copy_heavy_factor: float


@dataclass(frozen=True, slots=True)
class LoopPolicy:
    concurrency: int  # site turns at once
    commit_interval_s: float
    checkpoint_interval_s: float
    site_idle_s: float  # a site's state leaves memory after this long unused (loop.idle_sites)
    due_batch: int  # due pages moved to the frontier per commit
    max_attempts: int  # fetches of one URL before a transient failure is its outcome
    max_redirects: int
    max_links_per_page: int  # hrefs of one page followed (parse.links)
    fetch_timeout_s: float  # the longest one request may take
    limits: RunLimits
    clock: ClockPolicy
    recrawl: RecrawlPolicy
    traps: TrapPolicy
    robots: RobotsPolicy
    sitemaps: SitemapPolicy
    store: StorePolicy
