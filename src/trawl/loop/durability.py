"""What makes a crawl's work durable: commits, checkpoints and the final close.

- `commit()` makes everything so far durable against a killed process (WARC bytes first:
  the writer writes unbuffered, so appended records are already in the OS). Host records of
  changed sites are written every HOST_WRITE_INTERVAL_S (and with `hosts=True`): a crawl
  touches every active site each second, and rewriting them all twice a second doubled the
  event loop's CPU per page. Politeness does not depend on it: a restarted crawl leaves every
  site a full gap, and robots rules and overrides are written at once.
- `commit_loop()` commits every `commit_interval_s` on the crawl's clock, then publishes
  (cluster mode), takes due pages in (continuous crawls), requeues expired leases and
  checkpoints every `checkpoint_interval_s`.
- `checkpoint()` commits, then fsyncs WARC and database and saves the seen set and in-link
  counts; `close()` is the last checkpoint and releases every resource.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

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
    from trawl.store.ports import Records, WarcSink

HOST_WRITE_INTERVAL_S = 5.0


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
        now = clock.now()
        self._last_checkpoint = now
        self._hosts_written_at = now
        self._closed = False

    def commit(self, *, hosts: bool = False) -> None:
        now = self._clock.now()
        if hosts or now - self._hosts_written_at >= HOST_WRITE_INTERVAL_S:
            self._sites.write_changed()
            self._hosts_written_at = now
        self._scope.flush()  # skips join the records' transaction
        self._records.commit()

    def checkpoint(self, *, save_scores: bool = True) -> None:
        """Commit, then fsync WARC and database and save the seen set (and the in-link
        counts, unless the caller saves them off the event loop: `save_scores=False`)."""
        self.commit(hosts=True)
        self._warc.sync()
        self._seen.checkpoint()
        if save_scores:
            self._scores.save()
        self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        self._last_checkpoint = self._clock.now()

    async def commit_loop(self) -> None:
        policy = self._policy
        while not self._run.stopping:
            await self._run.wait_stopped_for(policy.commit_interval_s)
            if policy.limits.continuous:
                self._intake.add_due_pages(policy.due_batch)
            self.commit()
            await self._placement.publish()
            self._frontier.requeue_expired(self._clock.now())
            now = self._clock.now()
            if checkpoint_due(now, self._last_checkpoint, policy.checkpoint_interval_s):
                self.checkpoint(save_scores=False)
                # ~27 MB to serialise and write: on the event loop that stalled every
                # connection for ~110 ms, and a request sent late reached its server too close
                # to the next one on its IP (issue 13's crash soak). Counts are a soft signal:
                # a snapshot taken while the loop goes on counting is good enough.
                await asyncio.to_thread(self._scores.save)
                if policy.limits.continuous:
                    self._frontier.forget_idle_sites()

    async def close(self) -> None:
        """Final checkpoint and release of every resource; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self.checkpoint()
        finally:
            await self._fetcher.close()
            self._cpu_pool.shutdown()
            self._warc.close()
            self._conn.close()
