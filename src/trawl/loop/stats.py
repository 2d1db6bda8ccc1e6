"""What a crawl counts: one tally the summary line, /v1/stats, /metrics and the dashboard read.

Written from the event loop thread only, by any task between awaits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trawl.histogram import Histogram
from trawl.loop.lag import LoopLag
from trawl.loop.recent_activity import RecentSites


@dataclass(slots=True)
class CrawlStats:
    pages_fetched: int = 0  # page requests that ended (any outcome); robots.txt not counted
    pages_stored: int = 0
    robots_fetches: int = 0
    bytes_downloaded: int = 0
    links_found: int = 0
    links_new: int = 0
    sites_forgotten: int = 0  # idle sites' state dropped from memory (loop.idle_sites)
    skipped: dict[str, int] = field(default_factory=dict)  # outcome `skipped(reason)`
    retries: dict[str, int] = field(default_factory=dict)  # outcome `retry`, by cause
    statuses: dict[str, int] = field(default_factory=dict)  # "200", "404", "error:timeout"
    # Issue 14: the one tally of failures the summary, /v1/stats, /metrics and the dashboard
    # read. Every request (robots.txt, page, sitemap, retried or not) that got no answer, by
    # its error kind (failure_reasons), and pages that ended in a named error after one.
    failures: dict[str, int] = field(default_factory=dict)
    failure_examples: dict[str, str] = field(default_factory=dict)  # each reason's first message
    answered: int = 0  # requests that got an HTTP answer, whatever its status
    recent_sites: RecentSites = field(default_factory=RecentSites)  # for the progress line
    # Freshness (issue 5)
    refetches: dict[str, int] = field(default_factory=dict)  # "changed" / "unchanged"
    not_modified: int = 0  # 304 answers to conditional refetches
    bytes_saved: int = 0  # body bytes those 304s did not send (the stored copies' sizes)
    revisits: int = 0  # WARC revisit records written instead of a body
    duplicates: int = 0  # exact copies of a page stored under another URL
    near_duplicates: int = 0
    refresh_queued: int = 0  # due pages moved to the frontier
    rescored: int = 0  # queued URLs re-scored as their in-links grew
    sitemap_fetches: int = 0  # sitemap requests that ended (not counted as pages)
    sitemap_urls: int = 0  # URLs read from sitemaps (after the site and cap checks)
    sitemap_new: int = 0  # of those, URLs that were new
    sitemap_due: int = 0  # known pages made due by a newer lastmod
    # Issue 18: pages whose plain HTML looks built by JavaScript, by the detector's reason
    # (parse.render_need.RenderReason values).
    render_candidates: dict[str, int] = field(default_factory=dict)
    # The browser's requests (loop.render_fetches), by outcome: "fetched", "robots", ...
    render_requests: dict[str, int] = field(default_factory=dict)
    # What the render policy decided for candidates (render.policy.RenderWhy values), and
    # how renders ended ("done", "timeout", "cut", "failed", "failed-retry", "unreadable").
    render_decisions: dict[str, int] = field(default_factory=dict)
    renders: dict[str, int] = field(default_factory=dict)

    # Politeness at work (issue 6's metrics): how often, and how long, a request waited.
    fetch_seconds: Histogram = field(default_factory=Histogram)  # every request's exchange
    waits: dict[str, int] = field(default_factory=dict)  # "ip_gate", "site_clock", "paused"
    wait_seconds: dict[str, float] = field(default_factory=dict)
    loop_lag: LoopLag = field(default_factory=LoopLag)  # issue 17: how late the loop runs

    def count(self, table: dict[str, int], key: str, n: int = 1) -> None:
        table[key] = table.get(key, 0) + n

    @property
    def errors(self) -> int:
        return sum(self.failures.values())

    def note_failure(self, reason: str, message: str) -> None:
        self.count(self.failures, reason)
        if reason not in self.failure_examples:
            self.failure_examples[reason] = message

    def note_wait(self, reason: str, seconds: float) -> None:
        self.waits[reason] = self.waits.get(reason, 0) + 1
        self.wait_seconds[reason] = self.wait_seconds.get(reason, 0.0) + max(0.0, seconds)
