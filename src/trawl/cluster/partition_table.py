"""The partitions a cluster node has loaded, and the decisions made on them: pure state.

How this works:
- A partition is *loaded* from the moment its checkpoint has been read after a take-over
  (`load`) until it is forgotten (`forget`: handed over, or lost and about to be loaded
  again). Only a loaded partition has a stream position: the last link-stream entry whose
  URLs are in the local queue.
- Each `load` starts a new *generation* of the partition. A stream read takes a snapshot
  (`begin_read`) before its await; its entries are applied only while the partition is
  still loaded in the same generation (`is_current`), so entries read for an owner that has
  since forgotten the partition, or forgotten and taken it again, are dropped (the new
  generation replays them from its checkpoint's position).
- A partition is *changed* when its stream advanced since its last checkpoint; a changed,
  fetchable partition is due a checkpoint `interval_s` after its last one (the first one an
  interval after the take-over), at most `batch` at a time, lowest partition first.
- A site's politeness gap runs afresh from the later of the node's start and its
  partition's take-over (`restarted_at`): the previous owner may have sent a request just
  before it let go, after its last host record.

Nothing here reads a clock: the node passes `now` (crawl clock for take-overs, wall clock
for checkpoints, as the checkpoint objects are stamped with it). Written and read by the
node's tasks on one event loop, never across an await.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trawl.cluster.partitions import partition_of

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

SITE_CACHE = 1 << 16  # sites whose partition is remembered (one hash each otherwise)


@dataclass(frozen=True, slots=True)
class NodeStats:
    loaded: int
    acquired: int
    handed_over: int
    checkpoints: int
    links_consumed: int
    links_new: int
    rows_restored: int
    rows_skipped_fetched: int


@dataclass(frozen=True, slots=True)
class StreamRead:
    """The loaded partitions' positions and generations when a stream read began."""

    positions: dict[int, str]
    generations: dict[int, int]


class PartitionTable:
    """What a node holds per partition: stream position, generation, take-over and last
    checkpoint times, and whether its stream moved since; plus the node's counts."""

    def __init__(self, partitions: int, *, started_at: float) -> None:
        if partitions < 1:
            raise ValueError(f"partitions={partitions} must be at least 1")
        self.partitions = partitions
        self.started_at = started_at  # the node's start: no site's gap runs from earlier
        self.partition_of: Callable[[str], int] = functools.lru_cache(maxsize=SITE_CACHE)(
            functools.partial(_partition_of, partitions=partitions)
        )
        self._positions: dict[int, str] = {}  # loaded partitions → last stream entry queued
        self._generation: dict[int, int] = {}
        self._acquired_at: dict[int, float] = {}
        self._changed: set[int] = set()
        self._checkpointed_at: dict[int, float] = {}
        self._acquired = self._handed_over = self._checkpoints = 0
        self._consumed = self._new = self._restored = self._skipped = 0

    def __repr__(self) -> str:
        return (
            f"<PartitionTable loaded={len(self._positions)} changed={len(self._changed)}"
            f" acquired={self._acquired} handed_over={self._handed_over}>"
        )

    def stats(self) -> NodeStats:
        return NodeStats(
            len(self._positions), self._acquired, self._handed_over, self._checkpoints,
            self._consumed, self._new, self._restored, self._skipped,
        )  # fmt: skip

    # -- loaded or not --------------------------------------------------------------------
    def is_loaded(self, partition: int) -> bool:
        return partition in self._positions

    def loaded(self) -> set[int]:
        return set(self._positions)

    def position(self, partition: int) -> str | None:
        """The last stream entry queued here; None when the partition is not loaded."""
        return self._positions.get(partition)

    def load(self, partition: int, position: str, *, now: float, wall_now: float) -> None:
        """The partition's checkpoint is read (`position`: the stream entry it covers) and
        its rows queued: it is loaded in a new generation, taken over at `now` (crawl
        clock), its first checkpoint due an interval after `wall_now`."""
        self._acquired_at[partition] = now
        self._checkpointed_at[partition] = wall_now
        self._positions[partition] = position
        self._generation[partition] = self._generation.get(partition, 0) + 1
        self._acquired += 1

    def forget(self, partition: int) -> None:
        """No longer loaded (its local state was dropped); its generation and take-over time
        are kept, so a read that raced this is still told apart from a later load."""
        self._positions.pop(partition, None)
        self._changed.discard(partition)

    def note_handed_over(self) -> None:
        self._handed_over += 1

    # -- reading the link streams ---------------------------------------------------------
    def begin_read(self) -> StreamRead:
        positions = dict(self._positions)
        return StreamRead(positions, {p: self._generation[p] for p in positions})

    def is_current(self, read: StreamRead, partition: int) -> bool:
        """True when `partition` is loaded in the generation `read` began in: neither
        forgotten nor taken over afresh while the read awaited."""
        generation = self._generation.get(partition)
        return partition in self._positions and generation == read.generations.get(partition)

    def advance(self, partition: int, entry_id: str) -> None:
        """The entry's URLs are queued: the stream position moves, the partition changed."""
        self._positions[partition] = entry_id
        self._changed.add(partition)

    def note_consumed(self, links: int) -> None:
        self._consumed += links

    def note_new(self) -> None:
        self._new += 1

    def note_restored(self, restored: int, skipped: int) -> None:
        """Checkpoint rows queued, and rows skipped because their page was fetched since."""
        self._restored += restored
        self._skipped += skipped

    # -- checkpoints ----------------------------------------------------------------------
    def due_checkpoints(
        self, wall_now: float, *, interval_s: float, batch: int, tokens: Mapping[int, int]
    ) -> dict[int, int]:
        """Changed partitions whose last checkpoint is `interval_s` old, with their fencing
        token (`tokens`: the fetchable partitions'; the others wait), lowest first, at most
        `batch`."""
        due: dict[int, int] = {}
        for partition in sorted(self._changed):
            token = tokens.get(partition)
            next_at = self._checkpointed_at.get(partition, 0.0) + interval_s
            if token is not None and wall_now >= next_at and partition in self._positions:
                due[partition] = token
                if len(due) >= batch:
                    break
        return due

    def checkpointed_at(self, partition: int) -> float:
        """When the partition's last checkpoint was written (or it was loaded), wall clock;
        0 for one never loaded here."""
        return self._checkpointed_at.get(partition, 0.0)

    def changed(self) -> set[int]:
        """Loaded partitions whose stream moved since their last checkpoint."""
        return set(self._changed)

    def checkpoint_positions(self, partitions: Iterable[int]) -> dict[int, str]:
        """The stream positions a checkpoint of `partitions` covers (loaded ones only)."""
        return {p: self._positions[p] for p in partitions if p in self._positions}

    def checkpointed(self, partition: int, position: str, *, wall_now: float) -> None:
        """A checkpoint covering `position` is written: unchanged, unless the stream moved
        on while it was written."""
        self._checkpointed_at[partition] = wall_now
        if self._positions.get(partition) == position:
            self._changed.discard(partition)
        self._checkpoints += 1

    # -- politeness -----------------------------------------------------------------------
    def restarted_at(self, site: str) -> float:
        """Since when `site`'s gap runs afresh: the node's start or its partition's latest
        take-over, whichever is later."""
        return max(self.started_at, self._acquired_at.get(self.partition_of(site), 0.0))


def _partition_of(site: str, *, partitions: int) -> int:
    return partition_of(site, partitions)
