"""How the API, on its own thread and event loop, sees a crawl that runs on another loop.

Why a thread: a busy crawl keeps its event loop saturated, and an API sharing that loop
waited its turn behind the crawl's callbacks: 160-240 ms at p50 for a page lookup under a
324 pages/s crawl against 0.5 ms idle (bench/api_latency.py). On its own loop the API answers
reads at idle speed, whatever the crawl is doing. What each kind of read goes through:
- Committed page records, events and bodies: the view's own read-only SQLite connection (one
  per thread; WAL readers never block the writer). They lag the crawl by one commit (0.5 s).
- Counters (/v1/stats, /metrics, the dashboard's history): a `CrawlSnapshot` the crawl loop
  publishes every second. Publishing is one reference swap, so a reader on another thread
  never sees a half-updated set of numbers and no lock is needed.
- Changes to live crawl state (seeds, limits, excludes) and reads that walk much of it
  (the scope's seeds, the skips): `on_crawl` runs the call on the crawl loop, between two
  of the crawl's steps (loop.inbox), and waits for it; nothing else changes that state. A
  change (`change`) then waits, here, for its write to the operator log.
- Reads of a few sites' live state (a host's record, the busiest and most troubled sites,
  the latest errors): `read_live` runs them on the API's thread. Through the crawl loop
  they waited out whatever step was running when they came, and the loop's longest steps
  (a commit, a WAL restart) set their p99 at 108-139 ms under a full-speed crawl against
  <= 37 ms for the reads that never went there (issue 17, bench/api_latency.py). What makes
  reading on another thread safe here: CPython's GIL makes each attribute read and each
  C-level copy (`list(d.values())`, `sorted(d.items())`) atomic, so a reader sees every
  field as the crawl last wrote it; a field read a moment before another may be a few ms
  older (a row is not one instant, as a status answer need not be). What the GIL does not
  cover is a Python-level walk of a dict, set or deque the crawl changes meanwhile: that
  raises RuntimeError, and `read_live` then tries again, and after LIVE_READ_TRIES runs the
  read on the crawl loop. A free-threaded build (no GIL) would need a lock here instead.
- Cluster mode (`SharedStores`): records, events and host records come from PostgreSQL
  (a connection per API thread), bodies from object storage, and a site's new limits go to
  its partition's owner through the partition's link stream; the answer waits until the
  owner has applied them (its host record shows the override). A run-time scope change is
  applied on this node first, then handed to `send_scope` for the other nodes.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from trawl.api.stats_history import StatsHistory, StatsSample, count_by_class
from trawl.politeness.site_clock import is_parked
from trawl.store.layout import DB_NAME, WARC_DIR
from trawl.store.records_sqlite import SqliteRecords
from trawl.store.sqlite_db import open_database
from trawl.store.warc import read_record

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Mapping

    from prometheus_client.metrics_core import Metric

    from trawl.loop.context import CrawlContext
    from trawl.store.ports import RecordReader
    from trawl.store.warc_record import StoredBody

T = TypeVar("T")

LIVE_READ_TRIES = 3  # `read_live`: walks the crawl changed under it before the loop reads
LIMITS_WAIT_S = 5.0  # cluster mode: how long a limits call waits for the owner to apply them
# When a client asks again after a shared store (or the coordinator) went away: a node
# notices it is back at its next call to it (cluster.store_outages), within a second or two.
STORE_RETRY_AFTER_S = 5
PUBLISH_INTERVAL_S = 1.0
HISTORY_EVERY = 2  # a history sample every this many snapshots (2 s)
RATE_WINDOW_S = 10.0  # "pages/s now" is over about this long


@dataclass(frozen=True, slots=True)
class CrawlSnapshot:
    """The crawl's counters at one instant, copied on the crawl loop."""

    at: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)  # the /v1/stats answer
    statuses: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    render_candidates: dict[str, int] = field(default_factory=dict)  # CrawlStats's
    renders: dict[str, int] = field(default_factory=dict)  # CrawlStats's, by how they ended
    render_requests: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)  # CrawlStats.failures
    waits: dict[str, int] = field(default_factory=dict)
    wait_seconds: dict[str, float] = field(default_factory=dict)
    fetch_buckets: tuple[tuple[float, int], ...] = ()  # cumulative, as Prometheus wants
    fetch_seconds_sum: float = 0.0
    lag_buckets: tuple[tuple[float, int], ...] = ()  # the crawl loop's lag (loop.lag)
    lag_seconds_sum: float = 0.0
    events_written: int = 0
    scope_skips: dict[str, int] = field(default_factory=dict)  # ScopeBook.skips, whole crawl
    exclusions: int = 0  # run-time excludes in force


def status_kinds(statuses: Mapping[str, int], prefix: str) -> dict[str, int]:
    """`statuses` entries under `prefix` ("error:", "robots:"), by the rest of the key."""
    return {k[len(prefix) :]: n for k, n in statuses.items() if k.startswith(prefix)}


def site_counts(ctx: CrawlContext) -> dict[str, int]:
    """Sites by state. Known: the frontier's, with URLs queued or a turn running, or
    drained since the last checkpoint (a drained site's slot is dropped then). Backing off,
    parked and paused walk the sites in memory: loaded in this run and used within
    `crawl.site_idle_s` (loop.idle_sites), or paused, or waiting."""
    now = ctx.clock.now()
    sched = ctx.frontier.stats()
    backing_off = parked = paused = 0
    for state in ctx.sites.states():
        clock = state.clock
        if state.paused:
            paused += 1
        elif is_parked(clock.parked_until, now):
            parked += 1
        elif clock.consecutive_failures:
            backing_off += 1
    return {
        "known": sched.sites,
        "active": sched.busy,
        "waiting": sched.waiting,
        "backingOff": backing_off,
        "parked": parked,
        "paused": paused,
    }


def take_snapshot(ctx: CrawlContext, history: StatsHistory, scope_line: str = "") -> CrawlSnapshot:
    """Copy the counters (call on the crawl loop: they are the crawl's live objects);
    `scope_line` is the scope's summary, which the caller keeps (it walks every seed)."""
    st, now = ctx.stats, ctx.clock.now()
    sched = ctx.frontier.stats()
    statuses = dict(st.statuses)
    stats = {
        "pagesFetched": st.pages_fetched,
        "pagesStored": st.pages_stored,
        "pagesPerSecondNow": history.pages_per_second(RATE_WINDOW_S),
        "pagesPerSecondOverall": st.pages_fetched / max(now - ctx.run.started_at, 1e-9),
        "frontier": {
            "fast": sched.queued_fast,
            "slow": sched.queued_slow,
            "refresh": sched.queued_refresh,
        },
        "sites": site_counts(ctx),
        "statuses": statuses,
        "bytesDownloaded": st.bytes_downloaded,
        "errors": st.errors,
        "errorsByKind": dict(st.failures),  # every request's failures, robots.txt too
        "traps": ctx.traps.as_dict(),
        "notModified": st.not_modified,
        "duplicates": st.duplicates,
        "nearDuplicates": st.near_duplicates,
        "renderCandidates": dict(st.render_candidates),
        "renderRequests": dict(st.render_requests),
        "renderDecisions": dict(st.render_decisions),
        "renders": dict(st.renders),
        "rendersWaiting": ctx.run.renders_waiting,
        "scope": scope_line,
        "loopLag": {
            "p50": st.loop_lag.quantile(0.5),
            "p99": st.loop_lag.quantile(0.99),
            "worst": st.loop_lag.worst,
            "admissionHeld": st.loop_lag.held,
        },
        "snapshotAt": now,
    }
    return CrawlSnapshot(
        at=now,
        stats=stats,
        statuses=statuses,
        skipped=dict(st.skipped),
        render_candidates=dict(st.render_candidates),
        renders=dict(st.renders),
        render_requests=dict(st.render_requests),
        failures=dict(st.failures),
        waits=dict(st.waits),
        wait_seconds=dict(st.wait_seconds),
        fetch_buckets=tuple(st.fetch_seconds.cumulative()),
        fetch_seconds_sum=st.fetch_seconds.sum,
        lag_buckets=tuple(st.loop_lag.histogram.cumulative()),
        lag_seconds_sum=st.loop_lag.histogram.sum,
        # Offsets are dense from 1 in both record stores: the last one is the count.
        events_written=max(ctx.records.last_offset(), 0),
        scope_skips=ctx.scope.skips.counts(),
        exclusions=len(ctx.scope.runtime_exclusions),
    )


def history_sample(ctx: CrawlContext, now: float) -> StatsSample:
    st = ctx.stats
    sched = ctx.frontier.stats()
    return StatsSample(
        at=now,
        pages_fetched=st.pages_fetched,
        pages_stored=st.pages_stored,
        bytes_downloaded=st.bytes_downloaded,
        errors=st.errors,
        statuses=count_by_class(st.statuses),
        queued=(sched.queued_fast, sched.queued_slow, sched.queued_refresh),
        handed_out=sched.handed_out,
    )


@dataclass(frozen=True, slots=True)
class SharedStores:
    """Cluster mode: where the API reads, and how a site's limits reach its owner."""

    open_records: Callable[[], RecordReader]  # one per API thread
    read_body: Callable[[str], StoredBody]  # a storage key's response record
    send_limits: Callable[[str, dict[str, Any] | None], Awaitable[object]]  # crawl loop
    cluster_metrics: Callable[[], Iterable[Metric]]  # the cluster's status, for /metrics
    # A run-time scope change this node applied, for every other node (crawl loop):
    # {"op": "exclude" | "include_again", "pattern": p}, {"op": "seed", "scope": {...}} or
    # {"op": "seeds", "scopes": [...]} (API seeds: recorded, learnt by every node's sync).
    send_scope: Callable[[dict[str, Any]], Awaitable[object]] | None = None


class CrawlView:
    """The API's window on one crawl; built on the crawl loop, used from the API's."""

    def __init__(self, ctx: CrawlContext, shared: SharedStores | None = None) -> None:
        self.ctx = ctx
        self.shared = shared
        self.crawl_loop = asyncio.get_running_loop()
        self.history = StatsHistory()
        self.snapshot = CrawlSnapshot()
        self._local = threading.local()
        self._published = 0
        self._summarised: object = None  # the CrawlScope `_scope_line` describes
        self._scope_line = ""
        self.live_read_retries = 0  # `read_live` reads a walk spoilt (tests, and a bench)

    def publish(self) -> None:
        """Take a snapshot (and every HISTORY_EVERY-th time a history sample); crawl loop."""
        if self._published % HISTORY_EVERY == 0:
            self.history.add(history_sample(self.ctx, self.ctx.clock.now()))
        self._published += 1
        self.snapshot = take_snapshot(self.ctx, self.history, self._scope_summary())

    def _scope_summary(self) -> str:
        """The scope's one-line summary, made again only when the scope changed: it walks
        every seed, and a crawl may have a million."""
        scope = self.ctx.scope.current  # a new object on every change (ScopeBook)
        if scope is not self._summarised:
            self._scope_line = self.ctx.scope.summary()
            self._summarised = scope
        return self._scope_line

    async def publish_every(self, interval_s: float = PUBLISH_INTERVAL_S) -> None:
        """Runs on the crawl loop until cancelled."""
        at = self.ctx.clock.now()
        while True:
            self.publish()
            at = max(at + interval_s, self.ctx.clock.now())  # no catch-up burst after a stall
            await self.ctx.clock.sleep_until(at)

    def records(self) -> RecordReader:
        """Committed records and events through this thread's own read-only connection."""
        records: RecordReader | None = getattr(self._local, "records", None)
        if records is None:
            if self.shared is not None:
                records = self.shared.open_records()
            else:
                conn = open_database(self.ctx.data_dir / DB_NAME, readonly=True)
                records = SqliteRecords(conn)
            self._local.records = records
        return records

    def close_records(self) -> None:
        """Close this thread's connection (the API thread, on its way out)."""
        records: RecordReader | None = getattr(self._local, "records", None)
        if records is not None:
            records.close()
            self._local.records = None

    def read_body(self, storage_key: str) -> StoredBody:
        """The response record a page record's storage key names (raises DataError)."""
        if self.shared is not None:
            return self.shared.read_body(storage_key)
        return read_record(self.ctx.data_dir / WARC_DIR, storage_key)

    async def limits_via_owner(
        self, site: str, override: dict[str, Any] | None
    ) -> dict[str, object] | None:
        """Cluster mode: send the override to the site's owner and return its host record
        once it shows the override; None if that took longer than LIMITS_WAIT_S."""
        assert self.shared is not None
        send = self.shared.send_limits
        await self.on_crawl_async(lambda: send(site, override))
        deadline = time.monotonic() + LIMITS_WAIT_S
        while time.monotonic() < deadline:
            record = self.records().get_host(site)
            if record is not None and record.get("override") == override:
                return record
            await asyncio.sleep(0.1)
        return None

    @property
    def shares_scope(self) -> bool:
        return self.shared is not None and self.shared.send_scope is not None

    async def share_scope_change(self, change: dict[str, Any]) -> None:
        """Cluster mode: hand a scope change this node applied to the other nodes (a
        single machine has none: nothing to do). Raises what the coordinator raised."""
        send = self.shared.send_scope if self.shared is not None else None
        if send is not None:
            await self.on_crawl_async(lambda: send(change))

    async def on_crawl(self, call: Callable[[], T]) -> T:
        """Run `call` on the crawl loop (the only place live crawl state may be touched),
        between two of the crawl's steps rather than after a whole loop iteration
        (loop.inbox)."""
        if asyncio.get_running_loop() is self.crawl_loop:
            return call()
        return await asyncio.wrap_future(self.ctx.inbox.submit(call, self.crawl_loop))

    async def read_live(self, read: Callable[[], T]) -> T:
        """Run `read`, which must only read, on this thread against the crawl's live
        state (the module's docstring says why that is safe); if a dict, set or deque it
        walks changed under it every time of LIVE_READ_TRIES, on the crawl loop."""
        for _ in range(LIVE_READ_TRIES):
            try:
                return read()
            except RuntimeError:  # "... changed size during iteration", "deque mutated ..."
                self.live_read_retries += 1
        return await self.on_crawl(read)

    async def change(self, call: Callable[[], T]) -> T:
        """`on_crawl` for a call that changes the crawl (limits, seeds, excludes): answers
        once the change is durable. The crawl loop applies it and queues its write to the
        operator log; the wait for the disk is here, off the loop (Durability.keep)."""
        result = await self.on_crawl(call)
        await self._kept()
        return result

    async def change_async(self, call: Callable[[], Awaitable[T]]) -> T:
        """`change` for a coroutine."""
        result = await self.on_crawl_async(call)
        await self._kept()
        return result

    async def _kept(self) -> None:
        """Wait for the operator log's writes queued so far, the last change's among them:
        the log is written in order, so the latest write settles after it."""
        await asyncio.wrap_future(self.ctx.durability.kept())

    async def on_crawl_async(self, call: Callable[[], Awaitable[T]]) -> T:
        """`on_crawl` for a coroutine (say, a Redis call on the crawl loop's client)."""
        if asyncio.get_running_loop() is self.crawl_loop:
            return await call()

        async def run() -> T:
            return await call()

        future = asyncio.run_coroutine_threadsafe(run(), self.crawl_loop)
        return await asyncio.wrap_future(future)
