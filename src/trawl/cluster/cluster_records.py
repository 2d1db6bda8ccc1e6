"""A cluster node's record store: PostgreSQL records whose commits wait for what they name.

A page record may only commit once (1) the links its page found are in their partitions'
streams and (2) its body is in an uploaded WARC chunk. So a commit has two halves:

- `ClusterRecords.commit()` (sync, called wherever the crawl loop commits) commits the node's
  local SQLite (the frontier: a cache of the partitions' state, which their checkpoints and
  streams can rebuild); the shared stores' part waits for the next `publish`.
- `CommitPublisher.publish()` (async, run by the commit loop after each commit, every 0.5 s)
  first *cuts*: in one step, with no await in between, it takes the link buffers, seals the
  open WARC chunk and cuts the pending PostgreSQL batch off. Then it completes the cuts in
  order: send the links (one pipeline), upload the chunks (in a worker thread), commit the
  batch. Cutting here rather than at each `commit()` keeps it to one cut per publish: the
  crawl loop commits after every robots.txt, and a cut per commit queued hundreds of round
  trips.

If Redis, the object store or PostgreSQL fails, the cut waits and the next `publish` tries
again from the step that failed (sending links, uploading chunks and committing a batch are
all safe to repeat: see records_postgres on a batch sent twice). The waiting cuts are the
node's backlog: `StoreOutages` (store_outages.py) is told which store fails since when and
how much waits, and pauses new fetches past its bound, or while PostgreSQL, which the
crawl loop reads, cannot be reached (issue 19). While PostgreSQL fails with no cut waiting,
each publish pings it, so a node that paused on a failed read notices its return.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from trawl.cluster.redis_coord import CoordinatorUnavailable
from trawl.cluster.store_outages import Store, StoreOutages
from trawl.errors import DataError

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Awaitable, Callable, Collection, Iterator

    from trawl.cluster.link_router import LinkBuffers
    from trawl.cluster.redis_links import RedisLinks, RoutedLink
    from trawl.model import PageFetchedEvent, PageRecord
    from trawl.store.records_postgres import PostgresRecords
    from trawl.store.records_sqlite import DuePage
    from trawl.store.warc_chunks import ChunkBatch, WarcChunkWriter

log = logging.getLogger(__name__)

T = TypeVar("T")

# A due page taken into a node's queue comes due again this much later unless its fetch
# records a new due time first: a node that dies with it queued does not lose the refetch.
DUE_HOLD_S = 3600.0


@dataclass(slots=True)
class _Cut:
    links: dict[int, list[RoutedLink]]
    chunks: ChunkBatch
    batch: object
    links_sent: bool = False
    chunks_uploaded: bool = False


@dataclass(frozen=True, slots=True)
class PublishStats:
    cuts_waiting: int
    published: int
    failures: int
    last_failure: str


class CommitPublisher:
    """The second half of a node's commits: links, then WARC chunks, then the PostgreSQL
    batch. Apart from `ClusterRecords` so that it exists before the crawl's local database
    (the placement publishes through it)."""

    def __init__(
        self,
        records: PostgresRecords,
        *,
        warc: WarcChunkWriter,
        buffers: LinkBuffers,
        links: RedisLinks,
        outages: StoreOutages | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.pg = records
        self._warc = warc
        self._buffers = buffers
        self._links = links
        self.outages = outages or StoreOutages()
        self._wall_clock = wall_clock
        self._cuts: deque[_Cut] = deque()
        self._lock = asyncio.Lock()
        self._published = 0
        self._failures = 0
        self._last_failure = ""

    def __repr__(self) -> str:
        return f"<CommitPublisher cuts_waiting={len(self._cuts)} published={self._published}>"

    def stats(self) -> PublishStats:
        return PublishStats(len(self._cuts), self._published, self._failures, self._last_failure)

    def _cut(self) -> None:
        links = self._buffers.take()
        chunks = self._warc.seal()
        if not links and not chunks.chunks and not self.pg.stats().pending_writes:
            return  # nothing written since the last cut
        batch = self.pg.take_batch()
        self._cuts.append(_Cut(links, chunks, batch))

    async def publish(self) -> bool:
        """Cut what was written so far, then complete every cut, oldest first; stops at a
        store's failure (the next call resumes there). True when every cut is complete."""
        async with self._lock:
            self._cut()
            return await self._complete_cuts()

    async def publish_with(self, snapshot: Callable[[], T]) -> T | None:
        """`publish`, calling `snapshot()` right before the cut, with no await in between:
        what it reads (a partition's queue and seen slice) then matches what the cut holds
        (the pages done, their records and links), and what it writes (host records) goes
        out with the cut. Its value is returned once every cut up to this one is complete;
        None when one failed (the next publish resumes)."""
        async with self._lock:
            taken = snapshot()
            self._cut()
            return taken if await self._complete_cuts() else None

    async def _complete_cuts(self) -> bool:
        try:
            if not self._cuts and self.outages.is_failing(Store.POSTGRES):
                await self._step(Store.POSTGRES, self.pg.ping)
            while self._cuts:
                await self._complete(self._cuts[0])
                self._cuts.popleft()
                self._published += 1
        except (CoordinatorUnavailable, DataError):
            return False
        finally:
            self.outages.note_backlog(len(self._cuts), self.backlog_bytes())
        return True

    def backlog_bytes(self) -> int:
        """Sealed WARC bytes held by waiting cuts, not yet uploaded."""
        return sum(c.chunks.size for c in self._cuts if not c.chunks_uploaded)

    async def _complete(self, cut: _Cut) -> None:
        if not cut.links_sent:
            if cut.links:
                await self._step(Store.REDIS, self._links.send_many(cut.links.items()))
            cut.links_sent = True
        if not cut.chunks_uploaded:
            if cut.chunks.chunks:
                await self._step(Store.S3, asyncio.to_thread(self._warc.upload, cut.chunks))
            cut.chunks_uploaded = True
        await self._step(Store.POSTGRES, functools.partial(self.pg.commit_batch, cut.batch))

    async def _step(self, store: Store, call: Awaitable[object] | Callable[[], object]) -> None:
        """Await (or call) one store's part, telling `outages` how it went; re-raises."""
        try:
            if callable(call):
                call()
            else:
                await call
        except (CoordinatorUnavailable, DataError) as exc:
            self._failures += 1
            self._last_failure = str(exc)
            if self.outages.note_failure(store, self._wall_clock(), str(exc)):
                log.warning("%s is failing, holding what it should store: %s", store.value, exc)
            raise
        lasted = self.outages.note_success(store, self._wall_clock())
        if lasted is not None:
            log.warning(
                "%s is back after %.1f s; %d cuts waiting", store.value, lasted, len(self._cuts)
            )


class ClusterRecords:
    """The `Records` port over PostgreSQL, whose commits `CommitPublisher` completes.

    A read that fails tells `outages`, which pauses new fetches until PostgreSQL answers
    again (the publisher's pings notice). The failed read still raises DataError, except
    `take_due`: its pages stay due in PostgreSQL, so none is lost by taking none now."""

    def __init__(
        self,
        records: PostgresRecords,
        *,
        local: sqlite3.Connection,
        owned: Callable[[], Collection[int]],
        outages: StoreOutages | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.pg = records
        self._local = local
        self._owned = owned
        self._outages = outages or StoreOutages()
        self._wall_clock = wall_clock

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        try:
            yield
        except DataError as exc:
            if self._outages.note_failure(Store.POSTGRES, self._wall_clock(), str(exc)):
                log.warning("postgres is failing, fetches pause: %s", exc)
            raise

    def __repr__(self) -> str:
        return f"<ClusterRecords {self.pg!r}>"

    # -- the first half of a commit ------------------------------------------------------
    def begin(self) -> None:
        """Nothing: batches are always open."""

    def commit(self) -> None:
        if self._local.in_transaction:
            self._local.execute("COMMIT")

    # -- the rest of the port: PostgreSQL's ------------------------------------------------
    def put_page(self, record: PageRecord, event: PageFetchedEvent | None) -> None:
        self.pg.put_page(record, event)

    def get_page(self, url_hash: str) -> PageRecord | None:
        with self._reading():
            return self.pg.get_page(url_hash)

    def iter_pages(self) -> Iterator[PageRecord]:
        return self.pg.iter_pages()

    def take_due(self, now: float, limit: int) -> list[DuePage]:
        """Due pages of the partitions this node may fetch now (held, not cleared)."""
        owned = self._owned()
        if not owned or self._outages.is_failing(Store.POSTGRES):
            return []
        try:
            with self._reading():
                return self.pg.take_due(now, limit, owned, hold_s=DUE_HOLD_S)
        except DataError:
            return []  # still due in PostgreSQL: taken once it answers

    def last_fetched(self, url_hashes: list[str]) -> dict[str, float]:
        with self._reading():
            return self.pg.last_fetched(url_hashes)

    def make_due(self, url_hashes: list[str], at: float) -> int:
        with self._reading():
            return self.pg.make_due(url_hashes, at)

    def set_near_duplicate_of(self, url_hash: str, main_url: str) -> None:
        with self._reading():
            self.pg.set_near_duplicate_of(url_hash, main_url)

    def read_events(self, from_offset: int, limit: int) -> list[PageFetchedEvent]:
        return self.pg.read_events(from_offset, limit)

    def last_offset(self) -> int:
        return self.pg.last_offset()

    def put_host(self, site: str, record: dict[str, object]) -> None:
        self.pg.put_host(site, record)

    def get_host(self, site: str) -> dict[str, object] | None:
        with self._reading():
            return self.pg.get_host(site)

    def iter_hosts(self) -> Iterator[tuple[str, dict[str, object]]]:
        return self.pg.iter_hosts()
