"""The state one crawl shares between its tasks, and the durable steps around it.

Who writes what: everything here is used from the event loop thread only. A SiteState is
written only by the task holding that site (frontier.site_schedule makes that one task);
counters are written by any task between awaits. Worker processes get values, never state.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trawl.frontier.containment import SiteContainment
from trawl.frontier.traps import SiteTrapState, TrapCounters, check_url
from trawl.histogram import Histogram
from trawl.loop.cpu_batches import BatchedWorkers
from trawl.loop.recent_activity import RecentSites
from trawl.model import CrawlUrl, Line, PageRecord, UrlKind
from trawl.parse.page_work import PageInput, PageOutput, process_pages
from trawl.politeness.site_clock import ClockPolicy
from trawl.politeness.site_state import SiteState
from trawl.recrawl.schedule import RecrawlPolicy, refresh_priority

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Awaitable, Callable
    from pathlib import Path

    from trawl.clock import Clock
    from trawl.cluster.ports import PartitionGate, SharedIpGate
    from trawl.config import Settings
    from trawl.fetch.ports import Fetcher
    from trawl.frontier.frontier import Frontier
    from trawl.frontier.link_scores import LinkScores
    from trawl.frontier.ports import LinkRouter
    from trawl.frontier.traps import TrapPolicy
    from trawl.loop.workers import WorkerPool
    from trawl.politeness.ip_gate import IpGate
    from trawl.politeness.site_limits import SiteLimits
    from trawl.seen.ports import SeenUrls
    from trawl.store.fingerprints_sqlite import SqliteFingerprints
    from trawl.store.ports import Records, WarcSink
    from trawl.urls.normalise import NormaliseRules

AGENT_TOKEN = "trawl"
HOST_WRITE_INTERVAL_S = 5.0
PAUSE_RECHECK_S = 60.0  # a paused site's turn comes back this often, to no effect
GATE_RECHECK_S = 1.0  # a site of a partition we may not fetch now is looked at again then


@dataclass(slots=True)
class CrawlStats:
    pages_fetched: int = 0  # page requests that ended (any outcome); robots.txt not counted
    pages_stored: int = 0
    robots_fetches: int = 0
    bytes_downloaded: int = 0
    links_found: int = 0
    links_new: int = 0
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

    # Politeness at work (issue 6's metrics): how often, and how long, a request waited.
    fetch_seconds: Histogram = field(default_factory=Histogram)  # every request's exchange
    waits: dict[str, int] = field(default_factory=dict)  # "ip_gate", "site_clock", "paused"
    wait_seconds: dict[str, float] = field(default_factory=dict)

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


class CrawlContext:
    def __init__(
        self,
        *,
        settings: Settings,
        clock: Clock,
        conn: sqlite3.Connection,
        frontier: Frontier,
        seen: SeenUrls,
        records: Records,
        warc: WarcSink,
        fetcher: Fetcher,
        ip_gate: IpGate,
        cpu_pool: WorkerPool,
        data_dir: Path,
        rules: NormaliseRules,
        trap_policy: TrapPolicy,
        fingerprints: SqliteFingerprints,
        scores: LinkScores,
        resumed: bool = False,
    ) -> None:
        self.fingerprints = fingerprints
        self.scores = scores
        r = settings.recrawl
        self.recrawl_policy = RecrawlPolicy(
            min_interval_s=r.min_interval,
            max_interval_s=r.max_interval,
            target_change_probability=r.target_change_probability,
        )
        self.resumed = resumed  # the data directory held a crawl before this process
        self.rules = rules
        self.trap_policy = trap_policy
        self.traps = TrapCounters()
        self.settings = settings
        self.clock = clock
        self.conn = conn
        self.frontier = frontier
        self.seen = seen
        self.records = records
        self.warc = warc
        self.fetcher = fetcher
        self.ip_gate = ip_gate
        self.cpu_pool = cpu_pool
        self.page_workers: BatchedWorkers[PageInput, PageOutput] = BatchedWorkers(
            cpu_pool, process_pages
        )
        self.data_dir = data_dir
        self.agent_token = AGENT_TOKEN
        self.owner = socket.gethostname()
        p = settings.politeness
        self.clock_policy = ClockPolicy(
            min_delay_s=p.min_delay_s,
            slow_factor=p.slow_factor,
            backoff_max_s=p.backoff_max_s,
            park_after_failures=p.park_after_failures,
            park_s=p.park_s,
        )
        self.stats = CrawlStats()
        if scores.damaged_file:
            # A soft signal, counted afresh; the summary says so instead of hiding it.
            self.stats.count(self.stats.skipped, "inlinks_file_damaged")
        self.sites: dict[str, SiteState] = {}
        self._dirty_sites: set[str] = set()
        self._busy: set[str] = set()
        # Sites whose robots.txt was unreachable: their URLs wait for a robots retry.
        self.blocked_sites: set[str] = set()
        self.started_at = clock.now()
        self.pages_started = 0
        self.in_flight = 0
        self.stopping = False
        self._last_checkpoint = self.started_at
        self._stop_event = asyncio.Event()
        self._hosts_written_at = self.started_at
        self._closed = False
        # Cluster mode (cluster/node.py sets these; None in embedded mode): which sites this
        # machine may fetch now, where discovered URLs go (their partition's link stream),
        # and the async second half of a commit (links, then WARC chunks, then records).
        self.gate: PartitionGate | None = None
        self.router: LinkRouter | None = None
        self.shared_ip_gate: SharedIpGate | None = None
        self.publish: Callable[[], Awaitable[None]] | None = None
        self.restarted_at: Callable[[str], float] = lambda site: self.started_at
        self.in_turn: Counter[str] = Counter()  # sites with a turn running, outcome included

    # -- sites --------------------------------------------------------------------------
    def site_state(self, site: str) -> SiteState:
        state = self.sites.get(site)
        if state is None:
            record = self.records.get_host(site)
            if record is None:
                state = SiteState(
                    site,
                    traps=SiteTrapState(self.trap_policy),
                    containment=SiteContainment(self.trap_policy),
                )
            else:
                state = SiteState.from_host_record(record, self.trap_policy)
            if self.resumed:
                # A previous run (or the partition's previous owner) may have made a request
                # after its last commit (even the site's first, before any host record):
                # leave a full gap after our start (or our taking the partition over).
                restart_gap = self.restarted_at(site) + state.clock.gap_s(self.clock_policy)
                state.clock.next_allowed_at = max(state.clock.next_allowed_at, restart_gap)
            self.sites[site] = state
        return state

    def take_site(self) -> tuple[str, Line] | None:
        """A site whose turn has come and the line its turn serves; it is busy until
        `release_site`."""
        now = self.clock.now()
        while (turn := self.frontier.pop_ready_site(now)) is not None:
            if self.gate is None or self.gate.may_fetch(turn[0]):
                self._busy.add(turn[0])
                return turn
            # Its partition is being handed over or its lease is in doubt: not ours to fetch.
            self.frontier.release_site(turn[0], now + GATE_RECHECK_S)
        return None

    def previous_record(self, item: CrawlUrl) -> PageRecord | None:
        """The page's record before this fetch, for a refetch (conditional GET, history)."""
        return self.records.get_page(item.url_hash) if item.line is Line.REFRESH else None

    def release_site(self, site: str) -> None:
        """Hand the site back to the frontier at its clock's next allowed time (idempotent)."""
        if site in self._busy:
            self._busy.discard(site)
            self._dirty_sites.add(site)
            state = self.sites[site]
            # The politeness wait most requests see: the site's next URL waits out its gap
            # (or backoff) in the frontier, not in a turn (issue 14: it went uncounted).
            wait_s = state.clock.next_allowed_at - self.clock.now()
            if wait_s > 0 and not state.paused and self.frontier.queued_for(site):
                self.stats.note_wait("site_clock", wait_s)
            self.frontier.release_site(site, self._ready_at(state))

    def hold_site(self, site: str) -> bool:
        """Hold `site` outside its own turn, as `take_site` holds a popped one (a robots.txt
        redirect from another site to it), until `release_held_site`. False when a turn
        holds it already. The caller checks `gate` first and waits for the site's clock."""
        if site in self._busy or not self.frontier.hold_site(site):
            return False
        self._busy.add(site)
        self.in_turn[site] += 1  # a partition hand-over waits for this request too
        self.site_state(site)
        return True

    def release_held_site(self, site: str) -> None:
        """Give back a site taken with `hold_site`, at its clock's next allowed time."""
        self.release_site(site)
        self.in_turn[site] -= 1
        if not self.in_turn[site]:
            del self.in_turn[site]

    def _ready_at(self, state: SiteState) -> float:
        if state.paused:  # looked at again now and then; lifting the pause wakes it at once
            return self.clock.now() + PAUSE_RECHECK_S
        if state.containment.resting:  # nothing to serve before its next trickle
            trickle_at = state.containment.next_trickle_at(self.clock.now())
            return max(state.clock.next_allowed_at, trickle_at)
        return state.clock.next_allowed_at

    def set_site_limits(self, site: str, limits: SiteLimits | None) -> SiteState:
        """Put an operator's override (None: remove it) in force for the very next request
        to `site`, and make it durable at once: it must survive a crash or restart."""
        state = self.site_state(site)
        state.set_limits(limits, self.clock_policy, self.started_at if self.resumed else None)
        if not state.paused:
            self.blocked_sites.discard(site)
        if site not in self._busy:  # a busy site is released at its clock's new time
            self.frontier.move_site(site, self._ready_at(state))
        self.write_host(site)
        self.commit()
        return state

    def mark_dirty(self, site: str) -> None:
        self._dirty_sites.add(site)

    def note_referrer(self, site: str, referrer: str) -> None:
        """`referrer` links to `site`: it raises the site's importance (its daily cap).

        This writes another site's state from the task holding `referrer`; safe on one event
        loop with no await in between. In cluster mode the referrer travels with the link.
        """
        # Not marked dirty: referrers are a soft signal, saved with the site's next write.
        self.site_state(site).traps.note_referrer(referrer)

    # -- discovery ----------------------------------------------------------------------
    def discover(
        self,
        url: str,
        url_hash: str,
        site: str,
        depth: int,
        line: Line,
        *,
        must_crawl: bool,
        kind: UrlKind = UrlKind.PAGE,
        score: float = 0.0,
        score_parts: str = "",
        redirects: int = 0,
    ) -> bool:
        """Queue a normalised URL unless seen; returns True when it was new (in cluster
        mode: True when sent to its partition's owner, which makes the seen check).
        `redirects` is the length of the redirect chain that led to it."""
        item = CrawlUrl(
            url, url_hash, site, depth, line, self.clock.now(), kind, score, score_parts, redirects
        )
        if self.router is not None:
            self.router.route(item, must_crawl=must_crawl)
            return True
        if not self.claim(url_hash, must_crawl=must_crawl):
            return False
        return self.queue_new(item, must_crawl=must_crawl)

    def add_seed(self, url: str, url_hash: str, site: str, *, low_priority: bool = False) -> bool:
        """Queue a normalised seed through the exact seed table; True when it was new.

        Seeds go to the fast line with the seed boost; low-priority ones (API) wait in the
        slow line, unscored."""
        score, parts, _ = self.scores.seed(url, self.site_referrers(site))
        line = Line.FAST
        if low_priority:
            score, line = 0.0, Line.SLOW
        return self.discover(
            url, url_hash, site, 0, line, must_crawl=True, score=score, score_parts=parts
        )

    def claim(self, url_hash: str, *, must_crawl: bool) -> bool:
        """The seen check: True (and now seen) when the URL was new."""
        if must_crawl:
            return self.seen.add_must_crawl_if_new(url_hash)
        return self.seen.add_if_new(url_hash)

    def queue_new(self, item: CrawlUrl, *, must_crawl: bool) -> bool:
        """Queue a claimed URL unless a trap rule refuses it; True when queued."""
        trap = None if must_crawl else check_url(item.url, item.depth, self.trap_policy)
        if trap is not None:
            self.traps.count(trap)
            self.stats.count(self.stats.skipped, str(trap))
            return False
        state = self.sites.get(item.site)
        if state is not None and state.traps.is_flagged and item.line is Line.FAST:
            # The similarity alarm: a copy-heavy site's links wait.
            item = dataclasses.replace(item, line=Line.SLOW)
        self._enqueue(item)
        return True

    def _enqueue(self, item: CrawlUrl) -> None:
        """Into the frontier, ready when the site's clock allows (if the site is loaded)."""
        state = self.sites.get(item.site)
        self.frontier.enqueue(item, ready_at=0.0 if state is None else state.clock.next_allowed_at)
        if state is not None and state.containment.is_contained:
            self._wake_if_servable(state, item)

    def _wake_if_servable(self, state: SiteState, item: CrawlUrl) -> None:
        """A contained site resting until its next trickle gets work it may serve now (a due
        page, a vouched URL): its turn comes back at its clock's time."""
        containment = state.containment
        if item.line is not Line.REFRESH:
            if not containment.is_vouched(item.depth):
                return
            containment.maybe_vouched = True
        if containment.resting:
            containment.resting = False
            self.blocked_sites.discard(state.site)
            if state.site not in self._busy:
                self.frontier.move_site(state.site, self._ready_at(state))

    def site_referrers(self, site: str) -> int:
        """Other sites seen linking to `site` (0 for a site not loaded in this run)."""
        state = self.sites.get(site)
        return 0 if state is None else state.traps.referring_sites()

    def rescore(self, url_hash: str) -> bool:
        """Update a queued URL's score from today's in-link counts."""
        return self.frontier.rescore(url_hash, lambda parts: self.scores.rescored(url_hash, parts))

    # -- recrawl ------------------------------------------------------------------------
    def queue_due_pages(self) -> int:
        """Move pages whose nextFetchAt has come to the frontier's REFRESH line.

        They bypass the seen set (they are known) and leave the due index in the same
        transaction, so a crash neither loses nor doubles a refetch.
        """
        now = self.clock.now()
        due = self.records.take_due(now, self.settings.recrawl.due_batch)
        for page in due:
            priority = refresh_priority(
                page.change_rate,
                now - page.last_fetched_at,
                visits=page.visits,
                importance=page.importance,
            )
            parts = f'{{"changeRate":{page.change_rate:.6g},"importance":{page.importance:.3g}}}'
            item = CrawlUrl(
                page.url,
                page.url_hash,
                page.site,
                page.depth,
                Line.REFRESH,
                now,
                page.kind,
                priority,
                parts,
            )
            self._enqueue(item)
        self.stats.refresh_queued += len(due)
        return len(due)

    def discover_from_sitemap(self, url: str, url_hash: str, site: str) -> bool:
        """Queue a URL a sitemap of its own site listed (depth 1: one step from the home);
        a trusted site's entries get the sitemap boost."""
        if self.router is None and not self.claim(url_hash, must_crawl=False):
            return False
        score, parts, line = self.scores.sitemap_entry(url, self.site_referrers(site))
        item = CrawlUrl(url, url_hash, site, 1, line, self.clock.now(), UrlKind.PAGE, score, parts)
        if self.router is not None:
            self.router.route(item, must_crawl=False)
            return True
        return self.queue_new(item, must_crawl=False)

    # -- limits -------------------------------------------------------------------------
    def may_start_page(self) -> bool:
        max_pages = self.settings.crawl.max_pages
        return not self.stopping and (max_pages <= 0 or self.pages_started < max_pages)

    def should_stop(self) -> bool:
        if self.stopping:
            return True
        max_time = self.settings.crawl.max_time_s
        if max_time > 0 and self.clock.now() - self.started_at >= max_time:
            return True
        max_pages = self.settings.crawl.max_pages
        return max_pages > 0 and self.pages_started >= max_pages

    def is_finished(self) -> bool:
        """Nothing in flight and nothing queued but URLs waiting on an unreachable robots.txt.

        Those stay queued (a rerun or a continuous crawl retries them); a one-shot crawl
        does not sit out robots retry waits of up to an hour, nor the trickle of a contained
        trap site (frontier.containment), nor a site over its daily cap.
        """
        if self.in_flight or self.settings.crawl.continuous:
            return False
        waiting = sum(self.frontier.queued_for(site) for site in self.blocked_sites)
        return self.frontier.queued() == waiting

    # -- durability ---------------------------------------------------------------------
    def commit(self, *, hosts: bool = False) -> None:
        """Make everything so far durable against a killed process (WARC bytes first).

        Host records of changed sites are written every HOST_WRITE_INTERVAL_S (and with
        `hosts=True`): a crawl touches every active site each second, and rewriting them all
        twice a second doubled the event loop's CPU per page. Politeness does not depend on
        it: a restarted crawl leaves every site a full gap, and robots rules commit at once.
        """
        # WarcWriter writes unbuffered: appended records are already in the OS.
        now = self.clock.now()
        if hosts or now - self._hosts_written_at >= HOST_WRITE_INTERVAL_S:
            for site in self._dirty_sites:
                self.write_host(site)
            self._dirty_sites.clear()
            self._hosts_written_at = now
        self.records.commit()

    def write_host(self, site: str) -> None:
        state = self.sites.get(site)
        if state is not None:
            self.records.put_host(site, state.to_host_record(self.owner))

    def checkpoint(self, *, save_scores: bool = True) -> None:
        """Commit, then fsync WARC and database and save the seen set (and the in-link
        counts, unless the caller saves them off the event loop: `save_scores=False`)."""
        self.commit(hosts=True)
        self.warc.sync()
        self.seen.checkpoint()
        if save_scores:
            self.scores.save()
        self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        self._last_checkpoint = self.clock.now()

    def request_stop(self) -> None:
        """Stop handing out work; turns in flight finish (SIGINT/SIGTERM, limits)."""
        self.stopping = True
        self._stop_event.set()

    async def wait_stopped(self) -> None:
        """Return once `request_stop` was called (a limit, a signal, or the end)."""
        await self._stop_event.wait()

    async def commit_loop(self) -> None:
        s = self.settings.crawl
        while not self.stopping:
            await self.clock.wait_for(self._stop_event, s.commit_interval_s)
            if s.continuous:
                self.queue_due_pages()
            self.commit()
            if self.publish is not None:
                await self.publish()
            self.frontier.requeue_expired(self.clock.now())
            if self.clock.now() - self._last_checkpoint >= s.checkpoint_interval_s:
                self.checkpoint(save_scores=False)
                # ~27 MB to serialise and write: on the event loop that stalled every
                # connection for ~110 ms, and a request sent late reached its server too close
                # to the next one on its IP (issue 13's crash soak). Counts are a soft signal:
                # a snapshot taken while the loop goes on counting is good enough.
                await asyncio.to_thread(self.scores.save)
                if s.continuous:
                    self.frontier.forget_idle_sites()

    async def close(self) -> None:
        """Final checkpoint and release of every resource; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self.checkpoint()
        finally:
            await self.fetcher.close()
            self.cpu_pool.shutdown()
            self.warc.close()
            self.conn.close()
