"""An embedded crawl on one machine's data directory (store.layout): Settings read, adapters
picked (STYLE §3)."""

from __future__ import annotations

import dataclasses
import functools
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from trawl import __version__
from trawl.clock import Clock, SystemClock
from trawl.errors import ConfigError
from trawl.fetch.dns import CachingResolver, HostMap
from trawl.fetch.http1 import Http1Fetcher
from trawl.fetch.http_common import build_user_agent
from trawl.fetch.open_files import apply_open_files
from trawl.fetch.ssrf import parse_networks
from trawl.frontier.intake import Intake
from trawl.frontier.link_scores import LinkScores
from trawl.frontier.queue_sqlite import SqliteFrontier
from trawl.frontier.scope_book import ScopeBook
from trawl.frontier.traps import TrapCounters, TrapPolicy
from trawl.loop.context import CrawlContext
from trawl.loop.cpu_batches import BatchedWorkers
from trawl.loop.durability import Durability
from trawl.loop.operator_changes import replay as replay_operator_changes
from trawl.loop.placement import EmbeddedPlacement
from trawl.loop.policy import LoopPolicy, RobotsPolicy, RunLimits, SitemapPolicy, StorePolicy
from trawl.loop.renders import Rendering
from trawl.loop.run_state import RunState
from trawl.loop.stats import CrawlStats
from trawl.loop.workers import WorkerPool, page_workers, start_process_pool, usable_cpus
from trawl.parse.page_work import init_worker, process_pages
from trawl.politeness.ip_gate import IpGate
from trawl.politeness.site_book import SiteBook
from trawl.politeness.site_clock import ClockPolicy
from trawl.recrawl.schedule import RecrawlPolicy
from trawl.render.chromium import find_chromium
from trawl.render.policy import RenderBook, RenderRules
from trawl.render.queue_sqlite import SqliteRenderQueue
from trawl.seen.seen_set import SeenSet
from trawl.store.fingerprints_sqlite import SqliteFingerprints
from trawl.store.layout import (
    BLOOM_NAME,
    DB_NAME,
    INLINKS_NAME,
    OPERATOR_LOG_NAME,
    WARC_DIR,
    recover_warc_tails,
)
from trawl.store.operator_log import OperatorLog
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.scope_sqlite import SqliteScopeStore
from trawl.store.skips_sqlite import SqliteSkipLog
from trawl.store.sqlite_db import open_database
from trawl.store.warc import WarcWriter, read_record
from trawl.urls.normalise import NormaliseRules

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable

    from trawl.config import Settings
    from trawl.fetch.ports import Fetcher
    from trawl.loop.placement import Placement
    from trawl.render.ports import Renderer
    from trawl.seen.ports import SeenUrls
    from trawl.store.ports import Fingerprints, Records, WarcSink
    from trawl.store.warc_record import StoredBody

# Our IP gate spaces request *starts*; a server sees a request later when it needs a new
# connection (TCP set-up) than when it reuses one, so a little margin keeps the gaps the
# server observes at or above the configured minimum.
IP_GAP_MARGIN_S = 0.05


log = logging.getLogger(__name__)


def user_agent(settings: Settings) -> str:
    """`trawl/<version> (+<contact>)`; a custom UA must still name trawl and a contact URL."""
    custom = settings.crawl.user_agent
    if custom:
        if "trawl" not in custom.lower() or "+http" not in custom:
            raise ConfigError(
                f"user agent {custom!r} must name trawl and a contact URL, "
                "e.g. 'trawl/0.1 (+https://example.org/crawler)'"
            )
        return custom
    if not settings.crawl.contact_url:
        raise ConfigError(
            "a contact URL is required so site owners can reach you: "
            "pass --contact URL or set [crawl] contact_url"
        )
    return build_user_agent(__version__, settings.crawl.contact_url)


def normalise_rules(settings: Settings) -> NormaliseRules:
    u = settings.urls
    return NormaliseRules.from_config(
        tracking_params=u.tracking_params,
        tracking_prefixes=u.tracking_prefixes,
        session_params=u.session_params,
        max_length=u.max_url_length,
    )


def trap_policy(settings: Settings) -> TrapPolicy:
    try:
        return TrapPolicy(**dataclasses.asdict(settings.traps))
    except ValueError as exc:
        raise ConfigError(f"[traps]: {exc}") from None


def rendering(
    settings: Settings, conn: sqlite3.Connection, read_body: Callable[[str], StoredBody]
) -> Rendering | None:
    """The render step's parts (issue 18), or None when `[render] mode` is off or no
    Chromium is found (one notice line: plain crawling goes on as without rendering). A
    Chromium path set in the config that is not there is a config error."""
    s = settings.render
    if s.mode == "off":
        return None
    try:
        executable = find_chromium(s.chromium or None)
    except ConfigError as exc:
        if s.chromium:
            raise
        log.warning("%s; pages built by JavaScript are not rendered (--render off hides this)", exc)
        return None
    agent = user_agent(settings)

    def make_renderer() -> Renderer:
        from trawl.render.browser import ChromiumRenderer

        return ChromiumRenderer(
            user_agent=agent,
            executable=executable,
            recycle_after_pages=s.recycle_after_pages,
            max_rss_mb=s.max_browser_rss_mb,
        )

    book = RenderBook(RenderRules.from_settings(s))
    return Rendering(book, SqliteRenderQueue(conn), make_renderer, s, read_body)


def build_context(
    settings: Settings,
    data_dir: Path,
    clock: Clock | None = None,
    *,
    conn: sqlite3.Connection | None = None,
    records: Records | None = None,
    warc: WarcSink | None = None,
    seen: SeenUrls | None = None,
    placement: Placement | None = None,
    fetcher: Fetcher | None = None,
    cpu_pool: WorkerPool | None = None,
    read_body: Callable[[str], StoredBody] | None = None,
    fingerprints: Fingerprints | None = None,
) -> CrawlContext:
    """The crawl's parts on `data_dir`. A cluster node passes its local database, shared
    stores (records, WARC sink and its reader, seen set) and its placement in place of the
    embedded ones (the fingerprint index among them); a loop test its fetcher and page
    workers."""
    clock = clock or SystemClock()
    rules = normalise_rules(settings)
    policy = loop_policy(settings)
    fetcher = fetcher or _fetcher(settings)
    if warc is None:
        recover_warc_tails(data_dir / WARC_DIR)
    # A database from an earlier run: a request may have followed its last commit.
    resumed = conn is None and (data_dir / DB_NAME).exists()
    # The embedded default's operator changes have a journal of their own (a cluster
    # node's come through the cluster's channels).
    operator_log = OperatorLog(data_dir / OPERATOR_LOG_NAME) if conn is None else None
    conn = conn or open_database(data_dir / DB_NAME)
    started_at = clock.now()
    placement = placement or EmbeddedPlacement(started_at if resumed else None)
    frontier = SqliteFrontier(
        conn,
        lease_s=settings.frontier.lease_s,
        fast_share=settings.frontier.fast_share,
        refresh_share=settings.recrawl.refresh_share,
    )
    frontier.load()
    if seen is None:
        embedded_seen = SeenSet(
            conn,
            data_dir / BLOOM_NAME,
            capacity=settings.seen.expected_urls,
            fp_rate=settings.seen.false_positive_rate,
        )
        embedded_seen.load()
        seen = embedded_seen
    if warc is None:
        warc = WarcWriter(
            data_dir / WARC_DIR,
            max_file_bytes=settings.storage.warc_max_file_bytes,
            software=f"trawl/{__version__}",
        )
    records = records or SqliteRecords(conn)
    workers = page_workers(usable_cpus())
    pool = cpu_pool or WorkerPool(
        functools.partial(start_process_pool, workers, init_worker, (rules,))
    )
    p = settings.politeness
    ip_gate = IpGate(
        p.per_ip_max_in_flight,
        p.per_ip_min_gap_s + IP_GAP_MARGIN_S,
        restarted_at=started_at if resumed else None,
    )
    # A cluster node's owned URLs are ranked by the in-links its streams bring (issue 19).
    scores = LinkScores(data_dir / INLINKS_NAME, counts_arrive=placement.router is not None)
    stats = CrawlStats()
    if scores.damaged_file:
        # A soft signal, counted afresh; the summary says so instead of hiding it.
        stats.count(stats.skipped, "inlinks_file_damaged")
    sites = SiteBook(
        records,
        clock_policy=policy.clock,
        trap_policy=policy.traps,
        restarted_at=placement.restarted_at,
        owner=placement.owner,
        now=clock.now,
    )
    run = RunState(
        clock=clock,
        limits=policy.limits,
        frontier=frontier,
        sites=sites,
        placement=placement,
        stats=stats,
    )
    traps = TrapCounters()
    scope = scope_book(settings, conn)
    intake = Intake(
        frontier=frontier,
        seen=seen,
        scores=scores,
        sites=sites,
        scope=scope,
        trap_policy=policy.traps,
        traps=traps,
        tally=stats,
        clock=clock,
        router=placement.router,
        take_due=records.take_due,
        wake=run.wake,
    )
    durability = Durability(
        clock=clock,
        policy=policy,
        conn=conn,
        records=records,
        warc=warc,
        seen=seen,
        scores=scores,
        sites=sites,
        frontier=frontier,
        intake=intake,
        scope=scope,
        run=run,
        placement=placement,
        fetcher=fetcher,
        cpu_pool=pool,
        operator_log=operator_log,
    )
    ctx = CrawlContext(
        clock=clock,
        policy=policy,
        placement=placement,
        rules=rules,
        data_dir=data_dir,
        frontier=frontier,
        seen=seen,
        records=records,
        warc=warc,
        fingerprints=fingerprints or SqliteFingerprints(conn),
        fetcher=fetcher,
        ip_gate=ip_gate,
        cpu_pool=pool,
        page_workers=BatchedWorkers(pool, process_pages),
        scores=scores,
        sites=sites,
        run=run,
        intake=intake,
        scope=scope,
        durability=durability,
        stats=stats,
        traps=traps,
        render=rendering(
            settings, conn, read_body or functools.partial(read_record, data_dir / WARC_DIR)
        ),
    )
    if ctx.render is not None:
        sites.keep_part(ctx.render.book)  # what renders of a site gained, across restarts
    if operator_log is not None and replay_operator_changes(ctx, conn, operator_log):
        log.info("operator changes the last run had not committed were replayed")
    return ctx


def scope_book(settings: Settings, conn: sqlite3.Connection) -> ScopeBook:
    """The crawl's scope: what the data directory holds, with `[scope]`'s defaults."""
    s = settings.scope
    return ScopeBook(
        store=SqliteScopeStore(conn),
        skip_log=SqliteSkipLog(conn),
        config_exclude=s.exclude,
        defaults=settings.default_seed_scope(),
        capture_redirects=s.off_scope_redirects == "capture",
    )


def loop_policy(settings: Settings) -> LoopPolicy:
    """What the crawl loop reads of the settings, as values."""
    c, f, p, r, d = (
        settings.crawl,
        settings.fetch,
        settings.politeness,
        settings.recrawl,
        settings.dedup,
    )
    try:
        recrawl = RecrawlPolicy(
            min_interval_s=r.min_interval,
            max_interval_s=r.max_interval,
            target_change_probability=r.target_change_probability,
        )
    except ValueError as exc:
        raise ConfigError(f"[recrawl]: {exc}") from None
    return LoopPolicy(
        concurrency=c.concurrency,
        commit_interval_s=c.commit_interval_s,
        checkpoint_interval_s=c.checkpoint_interval_s,
        site_idle_s=c.site_idle_s,
        due_batch=r.due_batch,
        max_attempts=f.max_attempts,
        max_redirects=f.max_redirects,
        max_links_per_page=settings.frontier.max_links_per_page,
        fetch_timeout_s=f.total_timeout_s,
        limits=RunLimits(
            max_pages=c.max_pages,
            max_time_s=c.max_time_s,
            continuous=c.continuous,
            max_site_wait_s=c.max_site_wait_s,
        ),
        clock=ClockPolicy(
            min_delay_s=p.min_delay_s,
            slow_factor=p.slow_factor,
            backoff_max_s=p.backoff_max_s,
            park_after_failures=p.park_after_failures,
            park_s=p.park_s,
        ),
        recrawl=recrawl,
        traps=trap_policy(settings),
        robots=RobotsPolicy(
            max_bytes=p.robots_max_bytes,
            cache_s=p.robots_cache_s,
            retry_base_s=p.robots_retry_base_s,
            retry_max_s=p.robots_retry_max_s,
        ),
        sitemaps=SitemapPolicy(
            enabled=settings.sitemaps.enabled,
            max_urls_per_site=settings.sitemaps.max_urls_per_site,
            max_files_per_site=settings.sitemaps.max_files_per_site,
            max_bytes=settings.sitemaps.max_bytes,
        ),
        store=StorePolicy(
            warc_compress_level=settings.storage.warc_compress_level,
            near_max_distance=d.near_max_distance,
            near_min_tokens=d.near_min_tokens,
            history_visits=r.history_visits,
            copy_heavy_share=r.copy_heavy_share,
            copy_heavy_factor=r.copy_heavy_factor,
        ),
    )


def _fetcher(settings: Settings) -> Http1Fetcher:
    net = settings.network
    host_map = HostMap.from_options(net.resolve, Path(net.hosts_file) if net.hosts_file else None)
    resolver = CachingResolver(
        host_map, dns_server=net.dns_server or None, ttl_s=settings.fetch.dns_ttl_s
    )
    f = settings.fetch
    return Http1Fetcher(
        user_agent=user_agent(settings),
        resolver=resolver,
        allow_private=net.allow_private,
        allow_networks=parse_networks(net.allow_networks, "network.allow_networks"),
        total_timeout_s=f.total_timeout_s,
        max_body_bytes=f.max_body_bytes,
        max_decoded_bytes=f.max_decoded_bytes,
        stored_types=f.stored_types,
        # Within the open-files limit, raised for it where the hard limit allows.
        max_connections=apply_open_files(f.max_connections),
    )
