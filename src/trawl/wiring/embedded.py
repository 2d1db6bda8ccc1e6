"""An embedded crawl on one machine's data directory (store.layout): Settings read, adapters
picked (STYLE §3)."""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

from trawl import __version__
from trawl.clock import Clock, SystemClock
from trawl.errors import ConfigError
from trawl.fetch.dns import CachingResolver, HostMap
from trawl.fetch.fetcher import AiohttpFetcher, build_user_agent
from trawl.fetch.ssrf import parse_networks
from trawl.frontier.frontier import Frontier
from trawl.frontier.link_scores import LinkScores
from trawl.frontier.traps import TrapPolicy
from trawl.loop.context import CrawlContext
from trawl.loop.workers import WorkerPool, start_process_pool
from trawl.parse.page_work import init_worker
from trawl.politeness.ip_gate import IpGate
from trawl.seen.seen_set import SeenSet
from trawl.store.fingerprints_sqlite import SqliteFingerprints
from trawl.store.layout import BLOOM_NAME, DB_NAME, INLINKS_NAME, WARC_DIR, recover_warc_tails
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database
from trawl.store.warc import WarcWriter
from trawl.urls.normalise import NormaliseRules

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable

    from trawl.config import Settings
    from trawl.fetch.ports import Fetcher
    from trawl.seen.ports import SeenUrls
    from trawl.store.ports import Records, WarcSink

# Our IP gate spaces request *starts*; a server sees a request later when it needs a new
# connection (TCP set-up) than when it reuses one, so a little margin keeps the gaps the
# server observes at or above the configured minimum.
IP_GAP_MARGIN_S = 0.05


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


def build_context(
    settings: Settings,
    data_dir: Path,
    clock: Clock | None = None,
    *,
    records: Callable[[sqlite3.Connection], Records] | None = None,
    warc: WarcSink | None = None,
    seen: SeenUrls | None = None,
    fetcher: Fetcher | None = None,
    cpu_pool: WorkerPool | None = None,
) -> CrawlContext:
    """The crawl's context on `data_dir`; a cluster node passes its shared stores (records,
    built on the local connection; WARC sink; seen set) in place of the embedded ones, and a
    loop test its fetcher and page workers."""
    clock = clock or SystemClock()
    rules = normalise_rules(settings)
    fetcher = fetcher or _fetcher(settings)
    if warc is None:
        recover_warc_tails(data_dir / WARC_DIR)
    resumed = (data_dir / DB_NAME).exists()
    conn = open_database(data_dir / DB_NAME)
    frontier = Frontier(
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
    workers = max(1, min(2, os.cpu_count() or 1))
    pool = cpu_pool or WorkerPool(
        functools.partial(start_process_pool, workers, init_worker, (rules,))
    )
    p = settings.politeness
    return CrawlContext(
        settings=settings,
        clock=clock,
        conn=conn,
        frontier=frontier,
        seen=seen,
        records=SqliteRecords(conn) if records is None else records(conn),
        warc=warc,
        fetcher=fetcher,
        ip_gate=IpGate(
            p.per_ip_max_in_flight,
            p.per_ip_min_gap_s + IP_GAP_MARGIN_S,
            restarted_at=clock.now() if resumed else None,
        ),
        cpu_pool=pool,
        data_dir=data_dir,
        rules=rules,
        trap_policy=trap_policy(settings),
        fingerprints=SqliteFingerprints(conn),
        scores=LinkScores(data_dir / INLINKS_NAME),
        resumed=resumed,
    )


def _fetcher(settings: Settings) -> AiohttpFetcher:
    net = settings.network
    host_map = HostMap.from_options(net.resolve, Path(net.hosts_file) if net.hosts_file else None)
    resolver = CachingResolver(
        host_map, dns_server=net.dns_server or None, ttl_s=settings.fetch.dns_ttl_s
    )
    f = settings.fetch
    return AiohttpFetcher(
        user_agent=user_agent(settings),
        resolver=resolver,
        allow_private=net.allow_private,
        allow_networks=parse_networks(net.allow_networks, "network.allow_networks"),
        total_timeout_s=f.total_timeout_s,
        max_body_bytes=f.max_body_bytes,
        max_decoded_bytes=f.max_decoded_bytes,
        stored_types=f.stored_types,
        max_connections=f.max_connections,
    )
