"""What makes a crawl's work durable: commits, checkpoints and the final close.

- `keep()` makes an operator's change durable before its API call answers, without
  committing the crawl's batch (store.operator_log says how) and without the crawl loop
  waiting on the disk: the log's writes run in order on a thread of their own, and the API
  call waits for `kept()`. On the loop, the log's small commit waited behind the crawl's
  writeback: 3 of 10 samples of the loop's stalls over 100 ms at ~950 pages/s, which set
  `PUT …/limits` at 104-127 ms at p99 (issue 17).
- `commit()` makes everything so far durable against a killed process (WARC bytes first:
  the writer writes unbuffered, so appended records are already in the OS). A changed site's
  host record is written within about HOST_WRITE_INTERVAL_S (all of them with `hosts=True`):
  a crawl touches every active site each second, and rewriting them all twice a second
  doubled the event loop's CPU per page. Shares of the sites waiting are written between
  commits, longest-waiting first, HOST_WRITE_SLICES of them a commit interval: writing all
  800 of the quick bench web's sites at once held the event loop for 60-340 ms every 5 s,
  a tenth of them every commit still 17 ms at p50 (issue 17), hence 15 s; and one share a
  commit (2,000 sites, full web) 7 ms at p50 on top of the commit's own 35 ms, hence the
  slices. Politeness does not depend on it: a restarted crawl leaves every site a full gap,
  and robots rules and overrides are written at once.
- The database's WAL is checkpointed on a thread of its own after each commit, not inside
  a commit on the event loop (store.wal_checkpoints says why and how). Its restart, the one
  part with fsyncs on the loop, never runs while the checkpoint's fsyncs and saves do: it
  waited behind them for up to 660 ms (issue 17).
- After each commit the WARC's new bytes are sent on their way to disk from a thread
  (store.writeback), so that no fsync, the loop's own included, waits behind a minute's
  worth of them.
- `commit_loop()` writes host records in slices and commits every `commit_interval_s` on
  the crawl's clock, then publishes
  (cluster mode), takes due pages in (continuous crawls), requeues expired leases and
  checkpoints every `checkpoint_interval_s`.
- `checkpoint()` commits, then fsyncs WARC and database and saves the seen set and in-link
  counts, the blocking steps on threads; `close()` is the last checkpoint (every host
  record written) and releases every resource.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from trawl.store.operator_log import applied_seq, note_applied
from trawl.store.wal_checkpoints import WalCheckpoints

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable, Iterator

    from trawl.clock import Clock
    from trawl.fetch.ports import Fetcher
    from trawl.frontier.intake import Intake
    from trawl.frontier.link_scores import LinkScores
    from trawl.frontier.ports import Frontier
    from trawl.frontier.scope_book import ScopeBook
    from trawl.loop.placement import Placement
    from trawl.loop.policy import LoopPolicy
    from trawl.loop.run_state import RunState
    from trawl.loop.workers import WorkerPool
    from trawl.politeness.site_book import SiteBook
    from trawl.seen.ports import SeenUrls
    from trawl.store.operator_log import OperatorLog
    from trawl.store.ports import Records, WarcSink

log = logging.getLogger(__name__)

HOST_WRITE_INTERVAL_S = 15.0
HOST_WRITE_SLICES = 5  # shares of host records written a commit interval (see above)


def _weakly(method: Callable[[], None]) -> Callable[[], None]:
    """`method` called through a weak reference to its object: a hook the object hands to
    one of its own parts must not make a cycle, or the crawl's whole context (~30,000
    objects on the quick bench web) waits for a full collection, and a frozen one
    (loop.gc_tuning) is never freed."""
    ref = weakref.WeakMethod(method)

    def call() -> None:
        bound = ref()
        if bound is not None:
            bound()

    return call


def _done() -> Future[object]:
    future: Future[object] = Future()
    future.set_result(None)
    return future


def _warn_if_failed(future: Future[Any]) -> None:
    if not future.cancelled() and (exc := future.exception()) is not None:
        log.warning("operator log: dropping changes the database holds failed: %s", exc)


def checkpoint_due(now: float, last_checkpoint: float, interval_s: float) -> bool:
    return now - last_checkpoint >= interval_s


class Durability:
    def __init__(
        self,
        *,
        clock: Clock,
        policy: LoopPolicy,
        conn: sqlite3.Connection,
        records: Records,
        warc: WarcSink,
        seen: SeenUrls,
        scores: LinkScores,
        sites: SiteBook,
        frontier: Frontier,
        intake: Intake,
        scope: ScopeBook,
        run: RunState,
        placement: Placement,
        fetcher: Fetcher,
        cpu_pool: WorkerPool,
        operator_log: OperatorLog | None = None,
    ) -> None:
        self._clock = clock
        self._policy = policy
        self._conn = conn
        self._records = records
        self._warc = warc
        self._seen = seen
        self._scores = scores
        self._sites = sites
        self._frontier = frontier
        self._intake = intake
        self._scope = scope
        self._run = run
        self._placement = placement
        self._fetcher = fetcher
        self._cpu_pool = cpu_pool
        self._operator_log = operator_log
        # The log's writes, in order, off the crawl loop (see `keep`); its thread starts
        # with the first of them.
        self._log_writes = ThreadPoolExecutor(1, thread_name_prefix="operator-log")
        self._last_seq = 0  # the last operator change's number
        if operator_log is not None:
            # The database may hold a change whose append a crash cut short (its commit
            # came first): numbers must go on past it, or a replay would skip new ones.
            self._last_seq = max(operator_log.last_seq(), applied_seq(conn))
        self._kept_seq = 0  # the last operator change written into the open transaction
        self._kept: Future[object] = _done()  # the last change's write to the log
        self._replaying = False
        self._last_checkpoint = clock.now()
        self._wal = WalCheckpoints.take_over(conn)
        if self._wal is not None:
            self._wal.restart_soon = _weakly(self._commit_for_restart)
        self._closed = False
        # The checkpoint's fsyncs and saves are on threads: no WAL restart meanwhile.
        self._syncing = False
        self._writeback: asyncio.Future[None] | None = None

    def commit(self, *, hosts: bool = False) -> None:
        """Commit, with a commit interval's share of the changed host records (every one
        with `hosts=True`)."""
        self._sites.write_changed(None if hosts else self._host_share())
        self._commit_written()

    def _commit_for_restart(self) -> None:
        """Commit now, between two commits, so that the WAL's restart copies only what was
        written since the last one (the thread has copied the rest)."""
        if self._syncing:
            # The restart's fdatasyncs would wait behind the checkpoint's (660 ms seen on
            # the API bench): the WAL grows a little more, and the next thread's checkpoint
            # asks again.
            return
        if not self._closed and not self._run.stopping:
            self._commit_written()

    def _commit_written(self) -> None:
        self._commit_pending()
        if self._wal is not None:
            self._wal.after_commit(self._conn)

    def keep(self, change: dict[str, object]) -> None:
        """Make an operator's change, already applied, durable before its call answers.

        Embedded: appended to the operator log (its own small commit) and noted in the
        crawl's open transaction, not a commit of that transaction: under a full-speed crawl
        that commit holds up to `commit_interval_s` of the crawl's writes, and it set the
        committing API calls' p99 at 105-128 ms (issue 17). A crash before the crawl's next
        commit is mended at start-up, where the log's changes past the database's are
        replayed. The append itself runs on the log's thread, the change numbered here, so
        that the numbers follow the order the loop applied the changes in; the caller waits
        for `kept()` before it answers. A crawl commit before the append lands holds the
        change itself, so a crash then loses nothing either. A cluster node (no log) commits
        its records: its operator changes come through the cluster's own durable channels.
        Nothing is written while a replay runs."""
        if self._replaying:
            return
        if self._operator_log is None:
            self._commit_pending()
            return
        self._last_seq += 1
        self._kept_seq = self._last_seq
        self._kept = self._log_writes.submit(self._operator_log.append, change, self._kept_seq)
        self._records.begin()
        note_applied(self._conn, self._kept_seq)

    def kept(self) -> Future[object]:
        """Done once every change `keep` was given so far is durable (the log is written in
        order, so the last one's write is enough to wait for); its exception, a DataError,
        when that write failed. For any thread: an API call awaits it off the crawl loop."""
        return self._kept

    @contextlib.contextmanager
    def replaying(self) -> Iterator[None]:
        """`with durability.replaying():` apply logged changes without logging them again;
        on leaving, the database's open transaction notes the log's last change."""
        self._replaying = True
        try:
            yield
        finally:
            self._replaying = False
        if self._operator_log is not None:
            self._last_seq = max(self._last_seq, self._operator_log.last_seq())
            self._kept_seq = self._last_seq
            self._records.begin()
            note_applied(self._conn, self._kept_seq)

    def _commit_pending(self) -> None:
        self._intake.flush_rescores()
        self._scope.flush()  # skips join the records' transaction
        self._records.commit()

    def _host_share(self, slices: int = 1) -> int:
        """How many waiting host records one of `slices` parts of a commit interval writes:
        all of them over one HOST_WRITE_INTERVAL_S."""
        interval_s = max(self._policy.commit_interval_s, 1e-3)
        parts = max(1.0, HOST_WRITE_INTERVAL_S / interval_s * slices)
        return math.ceil(self._sites.changed / parts)

    async def _write_hosts_until_commit(self) -> None:
        """Wait out a commit interval, writing a share of the waiting host records after
        each of its HOST_WRITE_SLICES parts; return early on the stop."""
        part_s = self._policy.commit_interval_s / HOST_WRITE_SLICES
        for _ in range(HOST_WRITE_SLICES):
            if await self._run.wait_stopped_for(part_s):
                return
            self._sites.write_changed(self._host_share(HOST_WRITE_SLICES))

    async def commit_loop(self) -> None:
        policy = self._policy
        while not self._run.stopping:
            await self._write_hosts_until_commit()
            if policy.limits.continuous:
                self._intake.add_due_pages(policy.due_batch)
            self._commit_written()
            if self._wal is not None:
                self._wal.start()
            self._start_writeback()
            await self._placement.publish()
            self._frontier.requeue_expired(self._clock.now())
            now = self._clock.now()
            if checkpoint_due(now, self._last_checkpoint, policy.checkpoint_interval_s):
                await self.checkpoint()
                # A broad crawl meets millions of sites, one-shot or not; a drained one's
                # slot comes back with its next URL.
                self._frontier.forget_idle_sites()

    def _start_writeback(self) -> None:
        """Start the WARC's new bytes on their way to disk, on a thread, unless the last
        such call is still running (store.writeback says why)."""
        if self._writeback is None or self._writeback.done():
            loop = asyncio.get_running_loop()
            self._writeback = loop.run_in_executor(None, self._warc.writeback_handle())

    def _forget_kept(self) -> None:
        """After a commit: the log's changes the database now holds are dropped."""
        if self._operator_log is not None and self._kept_seq:
            # After the appends queued before it, on the log's thread.
            dropped = self._log_writes.submit(self._operator_log.forget_through, self._kept_seq)
            dropped.add_done_callback(_warn_if_failed)

    async def checkpoint(self, *, hosts: bool = False) -> None:
        """Commit (every changed host record too with `hosts=True`), then fsync WARC and
        database and save the seen set and the in-link counts, the blocking parts on
        threads. On the event loop they held every connection for ~0.3 s once a minute
        (issue 17): every changed host record, the fsyncs of WARC and database, the seen
        set's 12 MB. Between checkpoints host records are written in their usual shares (a
        soft signal, each within HOST_WRITE_INTERVAL_S). The in-link counts (~27 MB) are a
        soft signal too: a snapshot taken while the loop goes on counting is good enough
        (issue 13's crash soak found them stalling the loop for ~110 ms). The seen set is
        copied on the loop right after the commit, though: a copy taken later holds URLs
        whose queue rows were not committed yet, and a crash then loses them (the crash soak
        caught that)."""
        self.commit(hosts=hosts)
        self._forget_kept()
        save_seen = self._seen.snapshot()
        self._syncing = True
        try:
            await asyncio.to_thread(self._warc.sync_handle())
            await asyncio.to_thread(save_seen)
            await asyncio.to_thread(self._scores.save)
            if self._wal is not None:
                await self._wal.checkpoint()
            else:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            self._syncing = False
        self._last_checkpoint = self._clock.now()

    async def close(self) -> None:
        """Final checkpoint and release of every resource; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            await self.checkpoint(hosts=True)
        finally:
            if self._wal is not None:
                await self._wal.close()
            await self._fetcher.close()
            self._cpu_pool.shutdown()
            self._warc.close()
            self._conn.close()
            self._log_writes.shutdown(wait=True)  # the queued writes land first
            if self._operator_log is not None:
                self._operator_log.close()
