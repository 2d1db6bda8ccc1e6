"""Builds and runs one cluster node (`trawl node`): the cluster adapters' wiring.

It lives apart from `trawl.wiring` so that embedded commands never import redis, boto3 or
psycopg (each adds start-up time); like `trawl.wiring`, it is the only place here that reads
Settings and picks adapters.

The node's local directory holds a cache only (the SQLite frontier of the partitions it
owns, its in-link counts): everything durable is in Redis, PostgreSQL and object storage, so
the directory is emptied at start. The fingerprint index is the cluster's, in PostgreSQL: a
body or a near copy first stored by any node is found by all. It is locked while the node runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from trawl import __version__
from trawl.api.crawl_view import SharedStores
from trawl.api.serve import serve_api
from trawl.clock import SystemClock
from trawl.cluster.cluster_records import ClusterRecords, CommitPublisher
from trawl.cluster.cluster_scope import ClusterScope
from trawl.cluster.lease_cuts import LeaseCuts
from trawl.cluster.link_router import LinkBuffers
from trawl.cluster.node import ClusterNode
from trawl.cluster.ownership_shell import ClusterTiming, OwnershipShell
from trawl.cluster.partition_table import PartitionTable
from trawl.cluster.partitions import partition_of
from trawl.cluster.placement import NodePlacement
from trawl.cluster.redis_coord import (
    ClusterKeys,
    CoordinatorUnavailable,
    connect,
    ensure_layout,
)
from trawl.cluster.redis_ip_gate import RedisIpGate
from trawl.cluster.redis_leases import RedisLeases
from trawl.cluster.redis_links import RedisLinks
from trawl.cluster.redis_members import RedisMembers
from trawl.cluster.redis_scope import RedisScope
from trawl.cluster.status_metrics import StatusCache, status_metrics
from trawl.cluster.store_outages import StoreOutages
from trawl.errors import DataError, StoreUnavailable
from trawl.loop.crawler import Crawler
from trawl.loop.progress import report_progress
from trawl.loop.stop_signals import stop_on_signals
from trawl.seen.partitioned import PartitionedSeen
from trawl.store.blobs_s3 import S3BlobStore
from trawl.store.fingerprints_postgres import PostgresFingerprints
from trawl.store.layout import DB_NAME, lock_data_dir
from trawl.store.postgres_db import open_postgres, reader_connection, reconnect_postgres
from trawl.store.records_postgres import PostgresRecords
from trawl.store.sqlite_db import open_database
from trawl.store.warc_chunks import WarcChunkWriter, read_record_from_blobs
from trawl.wiring.embedded import IP_GAP_MARGIN_S, build_context
from trawl.wiring.seeds import add_seeds, seed_scopes

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Coroutine
    from pathlib import Path

    from trawl.cluster.cluster_file import ClusterSettings
    from trawl.cluster.redis_coord import RedisClient
    from trawl.config import Settings
    from trawl.loop.context import CrawlContext

log = logging.getLogger(__name__)

# Local files of a node's directory, removed at start (the directory is a cache).
_CACHE_FILES = ("trawl.db", "trawl.db-wal", "trawl.db-shm", "inlinks.bin", "seen.bloom")
IP_HOLD_TTL_S_EXTRA = 5.0  # an IP slot outlives the longest fetch by this much


def default_node_id() -> str:
    return socket.gethostname().split(".")[0] or "node"


@dataclass(frozen=True, slots=True)
class NodeSummary:
    pages_fetched: int
    pages_stored: int
    seconds: float
    acquired: int
    handed_over: int
    checkpoints: int


def _empty_cache(work_dir: Path) -> None:
    for name in _CACHE_FILES:
        (work_dir / name).unlink(missing_ok=True)


def cluster_timing(settings: Settings) -> ClusterTiming:
    n = settings.node
    return ClusterTiming(
        member_ttl_s=n.member_ttl_s,
        lease_ttl_s=n.lease_ttl_s,
        margin_s=n.margin_s,
        renew_after_s=n.renew_after_s,
        retry_s=n.retry_s,
        request_timeout_s=n.request_timeout_s,
    )


async def run_node(
    settings: Settings,
    cluster: ClusterSettings,
    node_id: str,
    work_dir: Path,
    out: TextIO,
    *,
    seeds: list[tuple[str, str, str]] | None = None,
    api: tuple[socket.socket, str | None] | None = None,
) -> NodeSummary:
    """Run one node until SIGINT/SIGTERM, then hand its partitions over and return."""
    timing = cluster_timing(settings)  # a bad combination fails before anything starts
    with lock_data_dir(work_dir):
        _empty_cache(work_dir)
        client = await connect(cluster.redis_url)
        try:
            keys = ClusterKeys(cluster.name)
            await ensure_layout(client, keys, cluster.partitions)
            return await _run(
                settings, cluster, node_id, work_dir, out, client, keys, timing, seeds or [], api
            )
        finally:
            await client.aclose()


async def _run(
    settings: Settings,
    cluster: ClusterSettings,
    node_id: str,
    work_dir: Path,
    out: TextIO,
    client: RedisClient,
    keys: ClusterKeys,
    timing: ClusterTiming,
    seeds: list[tuple[str, str, str]],
    api: tuple[socket.socket, str | None] | None,
) -> NodeSummary:
    blobs = await asyncio.to_thread(S3BlobStore, cluster.bucket())
    pg_conn = await asyncio.to_thread(open_postgres, cluster.postgres_dsn)
    n = cluster.partitions
    pg = PostgresRecords(
        pg_conn,
        partition_of=lambda site: partition_of(site, n),
        connect=lambda: reconnect_postgres(cluster.postgres_dsn),
    )
    outages = StoreOutages()
    links = RedisLinks(client, keys)
    buffers = LinkBuffers(n, sent_capacity=settings.seen.expected_urls)
    warc = WarcChunkWriter(blobs, node_id=node_id, software=f"trawl/{__version__}")
    seen = PartitionedSeen(
        expected_urls=settings.seen.expected_urls,
        fp_rate=settings.seen.false_positive_rate,
        partitions=n,
    )
    clock = SystemClock()
    table = PartitionTable(n, started_at=clock.now())
    shell = OwnershipShell(
        member_id=node_id,
        partitions=n,
        members=RedisMembers(client, keys),
        leases=RedisLeases(client, keys),
        timing=timing,
        info={"version": __version__, "host": socket.gethostname(), "started": str(time.time())},
        live_info=outages.member_info,
        cuts=LeaseCuts(),
    )
    publisher = CommitPublisher(pg, warc=warc, buffers=buffers, links=links, outages=outages)
    placement = _placement(settings, client, keys, node_id, table, shell, buffers, publisher)

    local = open_database(work_dir / DB_NAME)
    records = ClusterRecords(pg, local=local, owned=placement.owned, outages=outages)
    ctx = build_context(
        settings, work_dir, clock,
        conn=local, records=records, warc=warc, seen=seen, placement=placement,
        read_body=lambda key: read_record_from_blobs(blobs, key),
        fingerprints=PostgresFingerprints(pg),
    )  # fmt: skip
    scope = ClusterScope(ctx=ctx, record=RedisScope(client, keys), links=links, partitions=n)
    node = ClusterNode(
        ctx=ctx, table=table, leases=shell, publisher=publisher, links=links, blobs=blobs,
        seen=seen, scope=scope, checkpoint_interval_s=settings.node.checkpoint_interval_s,
    )  # fmt: skip
    # The cluster's scope changes so far (a late joiner's exclusions), then the seeds, as
    # the cluster has them; they are routed, sent with the first publish.
    start_seeds = await scope.join(seed_scopes(settings, seeds, ctx.rules))
    add_seeds(ctx, start_seeds)
    out.write(
        f"trawl: node {node_id} of cluster {cluster.name!r}, {len(start_seeds)} seeds given"
        f" here, {len(ctx.scope.seeds)} in the cluster; {ctx.scope.summary()}\n"
    )
    status = StatusCache(cluster)
    shared = SharedStores(
        # An API thread's own connection, which reconnects after an outage as the node's
        # does: without `connect`, its reads failed until the node restarted.
        open_records=lambda: PostgresRecords(
            reader_connection(cluster.postgres_dsn),
            connect=lambda: reconnect_postgres(cluster.postgres_dsn),
        ),
        read_body=lambda key: read_record_from_blobs(blobs, key),
        send_limits=limits_sender(links, n),
        cluster_metrics=lambda: status_metrics(status.latest) if status.latest else iter(()),
        send_scope=scope.send,
    )
    serve = None
    if api is not None:
        serve = _serving(serve_api(ctx, api[0], api[1], shared), status.run(ctx.run.wait_stopped))
    try:
        return await _crawl(ctx, node, shell, out, serve)
    finally:
        with contextlib.suppress(DataError):
            await ctx.durability.close()
            await publisher.publish()  # the final cut of close()'s checkpoint
        pg_conn.close()
        blobs.close()


def limits_sender(
    links: RedisLinks, partitions: int
) -> Callable[[str, dict[str, Any] | None], Awaitable[str]]:
    """How the API hands a site's new limits to the site's owner: a control entry on the
    site's partition stream. Redis out of reach raises StoreUnavailable, which the API
    answers with 503 and Retry-After (the owner was not told; sending again is harmless),
    not the 500 a CoordinatorUnavailable, which the API cannot name, would give."""

    async def send(site: str, override: dict[str, Any] | None) -> str:
        control = {"op": "limits", "site": site, "override": override}
        try:
            return await links.send_control(partition_of(site, partitions), control)
        except CoordinatorUnavailable as exc:
            raise StoreUnavailable(str(exc)) from exc

    return send


def _placement(
    settings: Settings,
    client: RedisClient,
    keys: ClusterKeys,
    node_id: str,
    table: PartitionTable,
    shell: OwnershipShell,
    buffers: LinkBuffers,
    publisher: CommitPublisher,
) -> NodePlacement:
    p = settings.politeness
    ip_slots = RedisIpGate(
        client, keys, node_id,
        max_in_flight=p.per_ip_max_in_flight,
        min_gap_s=p.per_ip_min_gap_s + IP_GAP_MARGIN_S,
        hold_ttl_s=settings.fetch.total_timeout_s + IP_HOLD_TTL_S_EXTRA,
    )  # fmt: skip
    return NodePlacement(
        owner=node_id,
        table=table,
        leases=shell,
        router=buffers,
        publisher=publisher,
        ip_slots=ip_slots,
        cuts=shell.cuts,
        outages=publisher.outages,
    )


async def _hand_over_on_stop(ctx: CrawlContext, shell: OwnershipShell) -> None:
    await ctx.run.wait_stopped()
    await shell.stop()


async def _serving(api: Coroutine[Any, Any, None], status: Coroutine[Any, Any, None]) -> None:
    """The API, and the cluster status its /metrics reports, until the crawl stops."""
    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(status)
        tasks.create_task(api)


async def _crawl(
    ctx: CrawlContext,
    node: ClusterNode,
    shell: OwnershipShell,
    out: TextIO,
    serve: Coroutine[Any, Any, None] | None,
) -> NodeSummary:
    started = stop_at = time.monotonic()

    def stop() -> None:
        nonlocal stop_at
        stop_at = time.monotonic()
        ctx.run.interrupt()

    with stop_on_signals(stop):
        async with asyncio.TaskGroup() as tasks:
            ownership = tasks.create_task(shell.run(node))
            tasks.create_task(node.consume())
            tasks.create_task(node.checkpoint_loop())
            tasks.create_task(node.scope.sync_loop())
            progress = tasks.create_task(report_progress(ctx, out, is_tty=False))
            if serve is not None:
                tasks.create_task(serve)  # returns once the crawl is stopping
            # The hand-over starts with the stop: a partition goes as soon as its turns end.
            handing_over = tasks.create_task(_hand_over_on_stop(ctx, shell))
            await Crawler(ctx).run()  # returns once stopping and its turns are done
            progress.cancel()
            log.info(
                "crawl stopped: its turns ended %.2f s after the stop", time.monotonic() - stop_at
            )
            await node.publisher.publish()
            await handing_over  # every partition checkpointed as needed, then released
            log.info("every lease released %.2f s after the stop", time.monotonic() - stop_at)
            await ownership
    s = node.stats()
    return NodeSummary(
        ctx.stats.pages_fetched,
        ctx.stats.pages_stored,
        time.monotonic() - started,
        s.acquired,
        s.handed_over,
        s.checkpoints,
    )
