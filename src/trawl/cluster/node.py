"""One machine of a trawl cluster: the crawl loop, fed and gated by the partitions it owns.

How this works:
- The crawl loop runs as in embedded mode on a local working directory (SQLite frontier,
  in-link counts), placed by `NodePlacement` (cluster/placement.py): it fetches only sites
  of partitions this node holds and has loaded; it sends every URL it discovers to the link
  stream of the URL's partition (this node's own included), so the streams plus the
  partitions' checkpoints hold every discovered URL, whatever machine dies; and records go
  to PostgreSQL, bodies to object storage, in that order after the links (cluster_records).
- What is loaded, stream positions and checkpoint timing are `PartitionTable`'s (pure);
  this module does the I/O around its decisions.
- `consume` reads the streams of the loaded partitions from each one's position, counts
  the in-links they bring (frontier.link_scores: the owner's counts rank its URLs, and
  queued ones are re-scored as they grow), claims every URL in the partition's seen slice
  and queues the new ones locally.
- `on_acquired` (lease won): load the partition's latest checkpoint (queue rows, seen slice,
  stream position), count the pages fetched since then as seen, and drop queued rows that
  were fetched meanwhile; the stream is then replayed from the checkpoint's position. Each
  site of the partition gets a full politeness gap after the take-over, whatever its last
  owner did after its last host record. Partitions won together (a start, a dead member's
  share) load as one batch (`CallBatches`): one checkpoint listing, one query each for
  the pages fetched and the renders queued since, one commit.
- `on_handover` (assigned away): the gate already says no; wait for the partition's running
  turns, then, in a batch with the others ready: publish, checkpoint the ones whose stream
  moved since their last checkpoint (stalest first, within a time budget), forget them
  locally. The lease is released only after this returns (ownership_shell), so the next
  owner starts from what is published and never fetches while we do.
- Every `checkpoint_interval_s` each changed partition is checkpointed, and its stream
  trimmed up to the position the checkpoint covers.
- A store that fails (issue 19) pauses, never stops, the node: a take-over retries its
  checkpoint and page reads every STORE_RETRY_S (its sites wait: `may_fetch` says yes only
  once it returns); a hand-over publishes until every page done is in the shared stores
  before its lease goes (a failed checkpoint is skipped: the streams and records cover it);
  the consumer reads an entry again when a new site's host record could not be read.
- Control entries on a stream are an operator's instructions: a site's limits, applied
  here, or a scope change, applied by `ClusterScope` (cluster_scope.py, issue 16).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from typing import TYPE_CHECKING, Protocol, TypeVar

from trawl.cluster import checkpoint_keys
from trawl.cluster.call_batches import CallBatches
from trawl.cluster.partition_checkpoint import PartitionCheckpoint, QueuedRow, decode
from trawl.cluster.redis_coord import CoordinatorUnavailable
from trawl.cluster.redis_links import START, LinkBatch, RoutedLink
from trawl.cluster.scope_changes import ScopeOp
from trawl.cluster.store_outages import Store
from trawl.errors import DataError
from trawl.frontier.scope import Standing
from trawl.politeness.site_limits import SiteLimits, delay_floor_s
from trawl.render.ports import RenderItem

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from trawl.cluster.cluster_records import CommitPublisher
    from trawl.cluster.cluster_scope import ClusterScope
    from trawl.cluster.partition_table import NodeStats, PartitionTable, StreamRead
    from trawl.cluster.redis_links import RedisLinks
    from trawl.loop.context import CrawlContext
    from trawl.model import PageRecord
    from trawl.seen.partitioned import PartitionedSeen
    from trawl.store.blobs import BlobStore

log = logging.getLogger(__name__)
T = TypeVar("T")

READ_ENTRIES = 64  # stream entries per partition per read (each a batch of links)
READ_BUDGET = 8192  # stream entries per read over all partitions (at least MIN_READ_ENTRIES each)
MIN_READ_ENTRIES = 2
YIELD_LINKS = 2000  # links queued between two yields to the event loop
TAKE_OVER_YIELD = 16  # partitions loaded between two yields to the event loop
IDLE_READ_S = 0.2  # how long the consumer waits when no stream had anything new
KEEP_CHECKPOINTS = 2  # per partition; older ones are deleted after a new one is written
CHECKPOINT_BATCH = 64  # partitions checkpointed per second at most (one publish each batch)
CHECKPOINT_UPLOADS = 8  # checkpoint objects uploaded (or read) at once
HANDOVER_CHECKPOINTS_S = 1.0  # a stop's checkpoints start within this (see _hand_over)
HANDOVER_PER_CUT = 16  # partitions checkpointed per cut in a hand-over (budget checked between)
LIST_ALL_FROM = 16  # partitions taken over together from which one listing of all is cheaper
TURNS_POLL_S = 0.02  # how often a hand-over looks whether its partitions' turns ended
STORE_RETRY_S = 1.0  # how often a take-over or hand-over tries a failing store again
# Pages fetched this long before a checkpoint may still have been queued in it (a leased
# row whose page committed after the checkpoint): their hashes join the seen slice too.
FETCHED_SLACK_S = 120.0


class Leases(Protocol):
    """What the node asks of its partitions' leases (`OwnershipShell`)."""

    def may_fetch(self, partition: int) -> bool: ...

    def token(self, partition: int) -> int | None: ...


class ClusterNode:
    """The `PartitionHandler` of a node's `OwnershipShell`, plus its stream consumer and
    checkpoint loop. Which partitions are loaded is `table`'s; the lease is `leases`'."""

    def __init__(
        self,
        *,
        ctx: CrawlContext,
        table: PartitionTable,
        leases: Leases,
        publisher: CommitPublisher,
        links: RedisLinks,
        blobs: BlobStore,
        seen: PartitionedSeen,
        scope: ClusterScope,
        checkpoint_interval_s: float,
    ) -> None:
        self.ctx = ctx
        self.table = table
        self.leases = leases
        self.publisher = publisher
        self.links = links
        self.blobs = blobs
        self.seen = seen
        self.scope = scope
        self.checkpoint_interval_s = checkpoint_interval_s
        self._stop_checkpoints_until: float | None = None  # a stop's hand-over budget
        self._turn_waiters: list[tuple[set[int], asyncio.Future[None]]] = []
        self._turn_poller: asyncio.Task[None] | None = None
        self._take_overs: CallBatches[int, int] = CallBatches(self._take_over)
        self._hand_overs: CallBatches[int, int | None] = CallBatches(self._hand_over)

    def __repr__(self) -> str:
        return f"<ClusterNode {self.table!r} {self.publisher!r}>"

    def stats(self) -> NodeStats:
        return self.table.stats()

    def partition(self, site: str) -> int:
        return self.table.partition_of(site)

    # -- taking partitions over ------------------------------------------------------------
    async def on_acquired(self, partition: int, token: int) -> None:
        await self._take_overs.join(partition, token)

    async def _take_over(self, tokens: dict[int, int]) -> None:
        """Load partitions won together: one checkpoint listing, one PostgreSQL query each
        for the pages fetched and the renders queued since, one commit."""
        again = {p for p in tokens if self.table.is_loaded(p)}
        if again:
            # Lost (a renewal failed) and won again: the gate has stopped new turns; let
            # the running ones end, then rebuild from the shared state like any new owner.
            await self._wait_turns_done(again)
            sites = self._sites_by_partition()
            for partition in again:
                self._forget(partition, sites.get(partition, []))
        # A scope change its checkpoint covers is off the stream now: read the record.
        await self.scope.sync_or_retry_later()
        checkpoints = await self._retrying(
            Store.S3, "reading checkpoints", lambda: self._latest_checkpoints(list(tokens))
        )
        since = {
            p: checkpoints[p].taken_at - FETCHED_SLACK_S if p in checkpoints else 0.0
            for p in tokens
        }
        pg = self.publisher.pg
        render = self.ctx.render is not None

        async def read_fetched() -> tuple[dict[int, list[str]], dict[int, list[PageRecord]]]:
            # On the loop: the connection's batch transactions are the loop's too.
            return pg.fetched_since(since), pg.waiting_renders(since) if render else {}

        fetched, marked = await self._retrying(Store.POSTGRES, "reading pages", read_fetched)
        for i, (partition, token) in enumerate(tokens.items()):
            if i % TAKE_OVER_YIELD == TAKE_OVER_YIELD - 1:
                await asyncio.sleep(0)  # lease renewals and fetch deadlines run between
            checkpoint = checkpoints.get(partition)
            rows: tuple[QueuedRow, ...] = ()
            renders: tuple[RenderItem, ...] = ()
            position = START
            if checkpoint is not None:
                self.seen.load_slice(partition, checkpoint.seen_slice)
                rows, position = checkpoint.queue, checkpoint.stream_id
                renders = checkpoint.renders
            done = fetched.get(partition, [])
            self.seen.add(partition, done)
            renders = _with_marked(renders, marked.get(partition, []))
            self._restore(rows, set(done), renders)
            # The first checkpoint is due an interval from now.
            self.table.load(partition, position, now=self.ctx.clock.now(), wall_now=time.time())
            log.info(
                "partition %d: taken over (token %d, %d rows, stream after %s)",
                partition, token, len(rows), position,
            )  # fmt: skip
        self.ctx.durability.commit()

    async def _retrying(self, store: Store, doing: str, call: Callable[[], Awaitable[T]]) -> T:
        """`call()` until it does not raise DataError, every STORE_RETRY_S (issue 19: a
        take-over waits out a store's outage; the partition's sites are not fetched
        meanwhile, as `may_fetch` says yes only once `on_acquired` returns)."""
        outages = self.publisher.outages
        while True:
            try:
                value = await call()
            except DataError as exc:
                if outages.note_failure(store, time.time(), str(exc)):
                    log.warning("%s failed, will retry: %s", doing, exc)
                await asyncio.sleep(STORE_RETRY_S)
                continue
            lasted = outages.note_success(store, time.time())
            if lasted is not None:
                log.warning("%s is back after %.1f s (%s)", store.value, lasted, doing)
            return value

    async def _latest_checkpoints(self, partitions: list[int]) -> dict[int, PartitionCheckpoint]:
        """The latest checkpoint of each of `partitions` that has one, read at most
        CHECKPOINT_UPLOADS at a time."""
        if len(partitions) >= LIST_ALL_FROM:  # a few pages of one listing, not one per partition
            prefixes = [checkpoint_keys.PREFIX]
        else:
            prefixes = [checkpoint_keys.prefix_for(p) for p in partitions]
        keys = await asyncio.to_thread(
            lambda: [key for prefix in prefixes for key in self.blobs.iter_keys(prefix)]
        )
        wanted = set(partitions)
        latest = {p: k for p, k in checkpoint_keys.latest(keys).items() if p in wanted}
        reads = asyncio.Semaphore(CHECKPOINT_UPLOADS)

        async def read(key: str) -> PartitionCheckpoint:
            async with reads:
                data = await asyncio.to_thread(self.blobs.get, key)
            return decode(data, key)

        found = await asyncio.gather(*(read(k.key) for k in latest.values()))
        return dict(zip(latest, found, strict=True))

    def _restore(
        self,
        rows: tuple[QueuedRow, ...],
        fetched: set[str],
        renders: tuple[RenderItem, ...],
    ) -> None:
        ctx = self.ctx
        skipped = 0
        for row in rows:
            if row.url_hash in fetched:  # its page was stored after the checkpoint
                skipped += 1
                continue
            ctx.intake.add_restored(row.item(), attempts=row.attempts)
        self.table.note_restored(len(rows) - skipped, skipped)
        if ctx.render is not None and renders:
            # A page fetched again since still names its copy of then: rendered all the same.
            ctx.render.queue.restore(list(renders))
            ctx.run.renders_waiting = ctx.render.queue.stats().queued

    # -- handing partitions over ----------------------------------------------------------
    async def on_handover(self, partition: int, token: int | None) -> None:
        # Partitions join a hand-over as their own turns end, not all once the last one's
        # has: a stop hands idle partitions over while busy ones finish their pages.
        if self.table.is_loaded(partition):
            await self._wait_turns_done({partition})
        await self._hand_overs.join(partition, token)

    async def _hand_over(self, tokens: dict[int, int | None]) -> None:
        """Hand partitions over together: wait for their running turns, publish, and
        checkpoint those whose stream moved since their last checkpoint, stalest first,
        for at most HANDOVER_CHECKPOINTS_S; then forget them all.

        A partition not checkpointed here is where a crash would leave it, with less to
        redo: its latest checkpoint, its stream past that checkpoint's position and the
        pages fetched since (all published before the lease goes) are what its next owner
        loads, replays and counts as seen. The bound keeps a stop of a node holding many
        changed partitions to seconds (an S3 PUT costs ~2.5 ms of CPU here).
        """
        loaded = {p: t for p, t in tokens.items() if self.table.is_loaded(p)}
        if not loaded:
            return
        started = time.monotonic()
        await self._wait_turns_done(set(loaded))
        waited = time.monotonic()
        changed = self.table.changed()
        due = {
            p: t
            for p, t in sorted(loaded.items(), key=lambda pt: self.table.checkpointed_at(pt[0]))
            if t is not None and p in changed
        }
        # A stop hands partitions over in batches as their turns end: one budget for all.
        until = waited + HANDOVER_CHECKPOINTS_S
        if self.ctx.run.stopping:
            if self._stop_checkpoints_until is None:
                self._stop_checkpoints_until = until
            until = self._stop_checkpoints_until
        # Old checkpoints are left for the next owner's writes to delete.
        try:
            checkpointed = await self.checkpoint_many(
                due, HANDOVER_PER_CUT, prune=False, until=until
            )
        except DataError as exc:  # the object store fails: its partitions go without one
            log.warning("hand-over checkpoints failed: %s", exc)
            checkpointed = 0
        # Every page done must be in the shared stores before the lease goes, whatever
        # store fails meanwhile: the lease is renewed while we wait (issue 19).
        while True:
            if await self.publisher.publish():
                break
            await asyncio.sleep(STORE_RETRY_S)
        written = time.monotonic()
        sites = self._sites_by_partition()
        for partition in loaded:
            self._forget(partition, sites.get(partition, []))
            self.table.note_handed_over()
        self.ctx.durability.commit()
        log.info(
            "%d partitions handed over in %.2f s (turns %.2f s, checkpoints %.2f s): %d of"
            " %d changed ones checkpointed", len(loaded), time.monotonic() - started,
            waited - started, written - waited, checkpointed, len(due),
        )  # fmt: skip

    async def _wait_turns_done(self, partitions: set[int]) -> None:
        """Until no turn of the partitions' sites runs (the gate stops new ones); bounded
        by the fetch timeout plus the time a page's outcome may take. Turns end in many
        places, so one poller looks for all waiters (`_poll_turns`)."""
        if not self._busy_partitions() & partitions:
            return
        done = asyncio.get_running_loop().create_future()
        self._turn_waiters.append((partitions, done))
        if self._turn_poller is None or self._turn_poller.done():
            self._turn_poller = asyncio.get_running_loop().create_task(self._poll_turns())
        await done

    async def _poll_turns(self) -> None:
        deadline = time.monotonic() + self.ctx.policy.fetch_timeout_s + 30.0
        while self._turn_waiters:
            await asyncio.sleep(TURNS_POLL_S)
            busy = self._busy_partitions() if time.monotonic() < deadline else set()
            waiting = []
            for partitions, done in self._turn_waiters:
                if done.done():
                    continue
                if busy & partitions:
                    waiting.append((partitions, done))
                else:
                    done.set_result(None)
            self._turn_waiters = waiting

    def _busy_partitions(self) -> set[int]:
        return {self.partition(site) for site in self.ctx.run.working}

    def _sites_by_partition(self) -> dict[int, list[str]]:
        """Every site with queued URLs or loaded state, by partition (read afresh: a site
        missed here would keep its rows out of its partition's checkpoint)."""
        out: dict[int, list[str]] = {}
        sites = set(self.ctx.frontier.queued_sites()) | set(self.ctx.sites)
        if self.ctx.render is not None:
            sites |= self.ctx.render.queue.sites()
        for site in sites:
            out.setdefault(self.partition(site), []).append(site)
        return out

    def _forget(self, partition: int, sites: list[str]) -> None:
        """Drop the partition's local state; `sites`: its sites (`_sites_by_partition`)."""
        ctx = self.ctx
        ctx.frontier.drop_sites(sites)
        ctx.sites.forget(sites)
        if ctx.render is not None:
            ctx.render.queue.drop_sites(sites)
            for site in sites:
                ctx.render.book.forget_site(site)  # in its host record, for the next owner
            ctx.run.renders_waiting = ctx.render.queue.stats().queued
        ctx.run.blocked.difference_update(sites)
        self.seen.drop(partition)
        self.table.forget(partition)

    # -- checkpoints ------------------------------------------------------------------------
    async def checkpoint_many(
        self,
        tokens: dict[int, int],
        per_cut: int = CHECKPOINT_UPLOADS,
        *,
        prune: bool = True,
        until: float = float("inf"),
    ) -> int:
        """Write each partition's checkpoint (its token as fence), a chunk of partitions at
        a time, and trim its stream up to the position the checkpoint covers.

        A chunk's checkpoints are taken at a publish's cut (`publish_with`): everything done
        before it (pages, their records and links) is in the shared stores before the
        checkpoint is written, and what is queued then is in the checkpoint's rows. Taken
        at any other moment, a checkpoint could hold a URL in its seen slice that is in
        neither its rows nor the stream past its position (a page done after the cut, a
        site whose first URL arrived during the publish), which the next owner would never
        fetch. A failed publish leaves the checkpoints to the next round.

        No chunk starts after `until` (monotonic). Returns the checkpoints written.
        """
        loaded = self.table.begin_read()  # which load of each partition this is about
        self.ctx.durability.commit()
        due = list(tokens)
        uploads = asyncio.Semaphore(CHECKPOINT_UPLOADS)
        written = 0
        for i in range(0, len(due), per_cut):
            if time.monotonic() >= until:
                break
            chunk = due[i : i + per_cut]
            taken = await self.publisher.publish_with(
                functools.partial(self._take_checkpoints, chunk, tokens, loaded)
            )
            if taken is None:
                break
            await asyncio.gather(*(self._write_checkpoint(c, uploads, prune) for c in taken))
            written += len(taken)
        return written

    def _take_checkpoints(
        self, partitions: list[int], tokens: dict[int, int], loaded: StreamRead
    ) -> list[PartitionCheckpoint]:
        # A partition handed over (or lost and taken again) while an earlier chunk was
        # written is skipped: its hand-over wrote its last checkpoint, and one taken now
        # would be empty and later, so the next owner's latest.
        current = [p for p in partitions if self.table.is_current(loaded, p)]
        positions = self.table.checkpoint_positions(current)
        sites = self._sites_by_partition()
        for partition in positions:
            for site in sites.get(partition, ()):
                self.ctx.sites.write(site)  # host records go out with the cut, before these
        return [
            self._take_checkpoint(p, tokens[p], position, sites.get(p, []))
            for p, position in positions.items()
        ]

    def _take_checkpoint(
        self, partition: int, token: int, position: str, sites: list[str]
    ) -> PartitionCheckpoint:
        # Position, rows and slice are read at one instant (the publish's cut).
        rows = tuple(QueuedRow(*row) for row in self.ctx.frontier.rows_of(sites))
        seen = self.seen.slice_bytes(partition)
        render = self.ctx.render
        renders = tuple(render.queue.rows_of(sites)) if render is not None else ()
        return PartitionCheckpoint(partition, token, time.time(), position, rows, seen, renders)

    async def _write_checkpoint(
        self, checkpoint: PartitionCheckpoint, uploads: asyncio.Semaphore, prune: bool
    ) -> None:
        partition, position = checkpoint.partition, checkpoint.stream_id
        key = checkpoint_keys.key_for(partition, checkpoint.fence, checkpoint.taken_at)
        async with uploads:
            await asyncio.to_thread(lambda: self.blobs.put(key, checkpoint.encode()))
        self.table.checkpointed(partition, position, wall_now=checkpoint.taken_at)
        if position != START:
            with contextlib.suppress(CoordinatorUnavailable):  # trimmed after the next one
                await self.links.trim_through(partition, position)
        if prune:
            await asyncio.to_thread(self._delete_old_checkpoints, partition)

    def _delete_old_checkpoints(self, partition: int) -> None:
        keys = list(self.blobs.iter_keys(checkpoint_keys.prefix_for(partition)))
        parsed = sorted(k for k in map(checkpoint_keys.parse, keys) if k is not None)
        for old in parsed[:-KEEP_CHECKPOINTS]:
            self.blobs.delete(old.key)

    async def checkpoint_loop(self) -> None:
        """Checkpoint each changed partition every `checkpoint_interval_s`, at most
        CHECKPOINT_BATCH per second so a burst of due partitions does not stall the crawl."""
        while not self.ctx.run.stopping:
            await asyncio.sleep(min(1.0, self.checkpoint_interval_s))
            due = self.table.due_checkpoints(
                time.time(),
                interval_s=self.checkpoint_interval_s,
                batch=CHECKPOINT_BATCH,
                tokens=self._tokens(self.table.changed()),
            )
            if due:
                try:
                    await self.checkpoint_many(due)
                except DataError as exc:
                    log.warning("checkpoints failed, will retry: %s", exc)

    def _tokens(self, partitions: set[int]) -> dict[int, int]:
        """The fencing tokens of those of `partitions` fetchable now."""
        tokens: dict[int, int] = {}
        for partition in partitions:
            token = self.leases.token(partition) if self.leases.may_fetch(partition) else None
            if token is not None:
                tokens[partition] = token
        return tokens

    # -- the link streams -----------------------------------------------------------------
    async def consume(self) -> None:
        """Queue what the loaded partitions' streams bring, until the crawl stops."""
        while not self.ctx.run.stopping:
            try:
                got = await self.consume_once()
            except (CoordinatorUnavailable, DataError) as exc:
                # DataError: a new site's host record could not be read (PostgreSQL down).
                # The entry holding its link is not passed yet: it is read again, and its
                # links queued before are claimed already, so none is lost or doubled.
                log.warning("reading link streams failed, will retry: %s", exc)
                got = 0
            if not got:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(IDLE_READ_S):
                        await self.ctx.run.wait_stopped()

    async def consume_once(self) -> int:
        """One read of every loaded partition's stream; returns the links read."""
        snapshot = self.table.begin_read()
        if not snapshot.positions:
            return 0
        # A few entries a partition when many are behind (a take-over replaying a thousand
        # streams): one read's work stays a few ms on the loop, whose lease renewals and
        # fetch deadlines wait behind it.
        count = max(MIN_READ_ENTRIES, min(READ_ENTRIES, READ_BUDGET // len(snapshot.positions)))
        batches = await self.links.read_many(snapshot.positions, count)
        if self._names_unknown_seed(batches):  # given at another node's start: learn its scope
            await self.scope.sync_or_retry_later()
        read = since_yield = 0
        for partition, entries in batches.items():
            if since_yield >= YIELD_LINKS:
                since_yield = 0
                await asyncio.sleep(0)  # the loop's timers and answers run between
            if not entries or not self.table.is_current(snapshot, partition):
                continue  # forgotten or taken over afresh while we read (or yielded)
            since_yield += sum(len(entry.links) for entry in entries)
            for entry in entries:
                if entry.control is not None:
                    self._apply(entry.control, entry.entry_id)
                for link in entry.links:
                    self._accept(partition, link)
                read += len(entry.links)
                self.table.advance(partition, entry.entry_id)
        self.table.note_consumed(read)
        return read

    def _names_unknown_seed(self, batches: dict[int, list[LinkBatch]]) -> bool:
        return any(
            link.must_crawl and link.standing
            and not self.scope.knows_seed(Standing.unpack(link.standing).seed)
            for entries in batches.values() for entry in entries for link in entry.links
        )  # fmt: skip

    def _apply(self, control: dict[str, object], entry_id: str) -> None:
        """An operator's instruction sent through the stream (`limits`: a site's override,
        null to remove it; a scope change), applied as the embedded API applies it: at
        once, durably."""
        if control.get("op") in tuple(ScopeOp):
            self.scope.apply(control, f"link stream entry {entry_id}")
            return
        site = control.get("site")
        if control.get("op") != "limits" or not isinstance(site, str):
            log.warning("link stream entry %s: unknown control %r skipped", entry_id, control)
            return
        try:
            override = control.get("override")
            floor = delay_floor_s(self.ctx.policy.clock.min_delay_s)  # as the API checks it
            limits = None if override is None else SiteLimits.from_json(override, floor)
        except DataError as exc:
            log.warning("link stream entry %s: %s; skipped", entry_id, exc)
            return
        self.ctx.set_site_limits(site, limits)

    def _accept(self, partition: int, link: RoutedLink) -> None:
        ctx = self.ctx
        if link.referrer and link.referrer != link.site:
            ctx.sites.note_referrer(link.site, link.referrer)
        # In-links found anywhere in the cluster are counted here, by the URL's owner.
        grew = not link.must_crawl and ctx.scores.count_arrival(
            link.url_hash, link.pages, link.referrer
        )
        if not self.seen.claim(partition, link.url_hash, must_crawl=link.must_crawl):
            if grew:
                ctx.intake.note_rescore(link.url_hash)
            return
        if ctx.intake.add_routed(link.item(ctx.clock.now()), must_crawl=link.must_crawl):
            self.table.note_new()


def _with_marked(
    renders: tuple[RenderItem, ...], marked: list[PageRecord]
) -> tuple[RenderItem, ...]:
    """The checkpoint's pages waiting for a browser, and those queued after it by the last
    owner (their records say `render.queuedAt`: a kill -9 lost its queue, not them)."""
    known = {item.url_hash for item in renders}
    more = []
    for page in marked:
        queued_at = page.render.get("queuedAt")
        if page.url_hash in known or not page.storage_key:
            continue
        if not isinstance(queued_at, int | float) or isinstance(queued_at, bool):
            continue
        reason = str(page.render.get("queuedReason", ""))
        item = RenderItem(
            page.url, page.url_hash, page.site, reason, page.storage_key,
            page.warc_record_id, page.last_fetched_at, float(queued_at), depth=page.depth,
        )  # fmt: skip
        more.append(item)
    return (*renders, *more)
