"""One node's share of the cluster's scope: the changes made here go out to every node,
and the changes made anywhere are applied here (issue 16).

How this works:
- Every node reads the same config (`[scope]`, `[[seeds]]`) and so starts deciding alike;
  seed ids are hashes of the seed URL, the same on every machine.
- A change made through this node's API (`send`, SharedStores.send_scope) is applied here
  first by the API, then recorded in Redis (`RedisScope`, numbered) and sent as a control
  entry on every partition's link stream. Each owner applies it as it reads the stream
  (`apply`), in order with the links around it.
- A node reads the record before it crawls (`join`: a late joiner gets every change made
  before it), when it takes a partition over (a change the old owner's checkpoint covered
  is no longer on the stream), when a routed seed names a seed it does not know yet (a
  seed given at another node's start), and every SYNC_INTERVAL_S in case it owns nothing.
- `ScopeLedger` keeps changes to one thing in order whatever stream brings them, and makes
  a change seen twice (once per partition owned, and again from the record) harmless.

Seeds given at a node's start go to the record only when it does not know them yet, so a
scope changed at run time through the API outlives a restart of nodes with the old config.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any, Protocol

from trawl.cluster.redis_coord import CoordinatorUnavailable
from trawl.cluster.scope_changes import ScopeChange, ScopeLedger, ScopeOp
from trawl.errors import ConfigError, DataError
from trawl.frontier.scope import SeedScope, seed_id_of

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from trawl.cluster.redis_links import RedisLinks
    from trawl.cluster.redis_scope import RedisScope
    from trawl.frontier.scope_book import ScopeBook
    from trawl.loop.durability import Durability
    from trawl.loop.run_state import RunState

log = logging.getLogger(__name__)

SYNC_INTERVAL_S = 2.0  # a node owning no partition still learns changes this fast
READ_CHANGES = 1_000  # changes per read of the record
RECORD_SEEDS = 1_000  # start seeds recorded per script call (bounds one Redis call)


class ScopeHolder(Protocol):
    """What a node's ClusterScope reads and changes: the CrawlContext's scope parts."""

    @property
    def scope(self) -> ScopeBook: ...
    @property
    def run(self) -> RunState: ...
    @property
    def durability(self) -> Durability: ...
    def add_exclusion_dropping_later(self, pattern: str) -> bool: ...
    def remove_exclusion(self, pattern: str) -> bool: ...


class ClusterScope:
    def __init__(
        self,
        *,
        ctx: ScopeHolder,
        record: RedisScope,
        links: RedisLinks,
        partitions: int,
        read_changes: int = READ_CHANGES,
    ) -> None:
        self.ctx = ctx
        self.read_changes = read_changes
        self.record = record
        self.links = links
        self.partitions = partitions
        self.ledger = ScopeLedger()
        self.applied = 0  # changes that changed something here

    def __repr__(self) -> str:
        return f"<ClusterScope {self.ledger!r} applied={self.applied}>"

    # -- changes made here ------------------------------------------------------------------
    async def send(self, raw: Mapping[str, Any]) -> int:
        """Share a change the API applied here with every node; its number. Crawl loop.

        `{"op": "seeds", "scopes": [...]}` (API seeds, maybe thousands) is only recorded:
        every node's sync reads it within SYNC_INTERVAL_S, and a routed URL naming a seed a
        node does not know makes it sync at once; a stream entry per seed and partition
        would cost more than it brings."""
        if raw.get("op") == "seeds":
            return await self._record_seeds(raw.get("scopes"))
        (change,) = await self.record.record([ScopeChange.from_json(dict(raw), "scope change")])
        self.ledger.note(change)  # in force here already: its stream copies do nothing
        await self.links.send_control_all(range(self.partitions), change.to_json())
        return change.seq

    async def _record_seeds(self, scopes: object) -> int:
        if not isinstance(scopes, list):
            raise DataError("scope change: 'scopes' must be a list")
        seeds = [SeedScope.from_json(raw, "scope change.scopes") for raw in scopes]
        recorded = await self._record_seed_scopes(seeds, only_new=False)
        for change in recorded:
            self.ledger.note(change)  # in force here already
        return recorded[-1].seq if recorded else 0

    async def _record_seed_scopes(
        self, seeds: Sequence[SeedScope], *, only_new: bool
    ) -> list[ScopeChange]:
        """Record seed scopes, RECORD_SEEDS to a Redis call; the changes recorded."""
        recorded: list[ScopeChange] = []
        for i in range(0, len(seeds), RECORD_SEEDS):
            chunk = [ScopeChange(ScopeOp.SEED, seed=s) for s in seeds[i : i + RECORD_SEEDS]]
            recorded += await self.record.record(chunk, only_new=only_new)
        return recorded

    async def join(self, seeds: Sequence[SeedScope]) -> list[SeedScope]:
        """Before crawling: record the start seeds the cluster does not know, then apply
        every change recorded. The start seeds as the cluster has them in force."""
        await self._record_seed_scopes(seeds, only_new=True)
        await self.sync()
        in_force = {seed_id_of(seed.url): seed for seed in self.ctx.scope.seeds}
        return [in_force.get(seed_id_of(seed.url), seed) for seed in seeds]

    # -- changes made anywhere --------------------------------------------------------------
    async def sync(self) -> int:
        """Apply every change recorded since the last read; how many changed something."""
        applied = 0
        while True:
            changes = await self.record.changes_since(self.ledger.synced_through, self.read_changes)
            applied += self._apply_all(changes)
            if changes:
                self.ledger.synced_through = changes[-1].seq
            if len(changes) < self.read_changes:
                return applied

    async def sync_loop(self) -> None:
        """`sync` every SYNC_INTERVAL_S until the crawl stops."""
        run = self.ctx.run
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(SYNC_INTERVAL_S):
                    await run.wait_stopped()
            if run.stopping:
                return
            await self.sync_or_retry_later()

    async def sync_or_retry_later(self) -> int:
        """`sync`, but a failure is only logged: the next sync reads the same changes."""
        try:
            return await self.sync()
        except CoordinatorUnavailable as exc:
            log.warning("reading scope changes failed, will retry: %s", exc)
        except DataError as exc:
            log.warning("scope changes: %s; will retry", exc)
        return 0

    def knows_seed(self, seed_id: int) -> bool:
        return self.ctx.scope.current.seed_url(seed_id) is not None

    def apply(self, control: Mapping[str, Any], where: str) -> bool:
        """A change from a link stream's control entry; True when it changed something.
        A damaged one is logged and skipped (it is also in the record, read again later)."""
        try:
            change = ScopeChange.from_json(dict(control), where)
        except DataError as exc:
            log.warning("%s; skipped", exc)
            return False
        return self._apply_all([change]) > 0

    def _apply_all(self, changes: Iterable[ScopeChange]) -> int:
        applied = 0
        seeds: list[SeedScope] = []
        for change in changes:
            if not self.ledger.is_new(change):
                continue
            self.ledger.note(change)
            if change.seed is not None:
                seeds.append(change.seed)  # in one add_seeds: the scope is rebuilt once
                continue
            if seeds:
                applied += self._put_seeds(seeds)
                seeds = []
            applied += self._apply_exclude(change)
        if seeds:
            applied += self._put_seeds(seeds)
        if applied:
            self.applied += applied
            self.ctx.durability.commit()
        return applied

    def _put_seeds(self, seeds: list[SeedScope]) -> int:
        # The ledger let through only changes newer than what is in force; a seed already
        # in force with the same scope leaves the ScopeBook as it was.
        self.ctx.scope.add_seeds(seeds)
        log.info("scope: %d seed scopes from the cluster in force", len(seeds))
        return len(seeds)

    def _apply_exclude(self, change: ScopeChange) -> int:
        ctx = self.ctx
        try:
            if change.op is ScopeOp.EXCLUDE:
                # Read between a stream's links: the queue's matching URLs go on a task of
                # their own, a slice at a time (a million of them held the loop 3.5 s).
                if not ctx.add_exclusion_dropping_later(change.pattern):
                    return 0
                log.info("scope: exclusion %r from the cluster (change %d) in force",
                         change.pattern, change.seq)  # fmt: skip
                return 1
            if not ctx.remove_exclusion(change.pattern):
                return 0
            log.info("scope: exclusion %r lifted (change %d)", change.pattern, change.seq)
            return 1
        except ConfigError as exc:  # the API checked it: a bug or a newer node's pattern
            log.warning("scope change %d: %s; skipped", change.seq, exc)
            return 0
